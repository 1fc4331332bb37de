// Capture format, version 1 (include/hcq/backend/capture.hpp): writing events as JSON lines and reading them back. Kept
// apart from the live side (capture.cpp) so the reader needs nothing but this file (hcq-dump, the fuzz targets).
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"
#include "json_text.hpp"

namespace hcq::capture {
namespace {

void json_string(std::string& out, std::string_view s) { json_text::append_string(out, s); }

void member(std::string& out, std::string_view key, std::string_view value) {
  if (out.size() > 1) out += ',';
  json_string(out, key);
  out += ':';
  json_string(out, value);
}

void member(std::string& out, std::string_view key, uint64_t value) {
  if (out.size() > 1) out += ',';
  json_string(out, key);
  out += ':';
  out += std::to_string(value);
}

std::string hex_words(std::span<const uint32_t> words) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(words.size() * 8);
  for (uint32_t w : words)
    for (int sh = 28; sh >= 0; sh -= 4) out += kHex[(w >> sh) & 0xf];
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string header_line() {
  std::string out = "{";
  member(out, "hcq_capture", 1);
  member(out, "pid", static_cast<uint64_t>(::getpid()));
  return out + "}";
}

std::string to_line(const Submission& s) {
  std::string out = "{";
  member(out, "t", "submit");
  member(out, "n", s.n);
  if (s.ns != 0) member(out, "ns", s.ns);
  member(out, "dev", s.device);
  member(out, "arch", s.arch);
  member(out, "queue", s.queue);
  member(out, "qid", s.qid);
  member(out, "format", s.format);
  member(out, "ring_end", s.ring_end);
  member(out, "dropped", s.dropped);
  member(out, "words", hex_words(s.words));
  return out + "}";
}

std::string to_line(const RingDump& r) {
  std::string out = "{";
  member(out, "t", "ring");
  member(out, "dev", r.device);
  member(out, "arch", r.arch);
  member(out, "queue", r.queue);
  member(out, "format", r.format);
  member(out, "read", r.read);
  member(out, "write", r.write);
  member(out, "va", r.va);
  member(out, "dropped", r.dropped);
  member(out, "words", hex_words(r.words));
  return out + "}";
}

std::string to_line(const AllocEvent& a) {
  std::string out = "{";
  member(out, "t", a.freed ? "free" : "alloc");
  member(out, "dev", a.device);
  member(out, "va", a.va);
  member(out, "size", a.size);
  member(out, "kind", a.kind);
  return out + "}";
}

const std::string* FlatObject::str(std::string_view key) const {
  for (const auto& [k, v] : strings)
    if (k == key) return &v;
  return nullptr;
}

std::optional<uint64_t> FlatObject::num(std::string_view key) const {
  for (const auto& [k, v] : numbers)
    if (k == key) return v;
  return std::nullopt;
}

std::optional<FlatObject> parse_flat_object(std::string_view s, std::string* error) {
  size_t i = 0;
  auto fail = [&](const char* why) -> std::optional<FlatObject> {
    if (error) *error = cat(why, " at column ", i + 1);
    return std::nullopt;
  };
  auto ws = [&] {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
  };
  auto string = [&](std::string& out) -> bool {
    if (i >= s.size() || s[i] != '"') return false;
    ++i;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i >= s.size()) return false;
      char e = s[i++];
      switch (e) {
        case '"':
        case '\\':
        case '/': out += e; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'u': {
          if (i + 4 > s.size()) return false;
          unsigned v = 0;
          for (int k = 0; k < 4; ++k) {
            int d = hex_digit(s[i + k]);
            if (d < 0) return false;
            v = v * 16 + static_cast<unsigned>(d);
          }
          i += 4;
          out += v < 0x80 ? static_cast<char>(v) : '?';  // only control characters are escaped by the writer
          break;
        }
        default: return false;
      }
    }
    if (i >= s.size()) return false;
    ++i;
    return true;
  };
  FlatObject obj;
  ws();
  if (i >= s.size() || s[i] != '{') return fail("expected '{'");
  ++i;
  ws();
  if (i < s.size() && s[i] == '}') {
    ++i;
  } else {
    while (true) {
      ws();
      std::string key;
      if (!string(key)) return fail("expected a string key");
      ws();
      if (i >= s.size() || s[i] != ':') return fail("expected ':'");
      ++i;
      ws();
      if (i < s.size() && s[i] == '"') {
        std::string v;
        if (!string(v)) return fail("unterminated string");
        obj.strings.emplace_back(std::move(key), std::move(v));
      } else {
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(s.data() + i, s.data() + s.size(), v);
        if (ec != std::errc()) return fail("expected a string or an unsigned number");
        i = static_cast<size_t>(p - s.data());
        obj.numbers.emplace_back(std::move(key), v);
      }
      ws();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == '}') {
        ++i;
        break;
      }
      return fail("expected ',' or '}'");
    }
  }
  ws();
  if (i != s.size()) return fail("text after the object");
  return obj;
}

namespace {

bool parse_words(const std::string& hex, std::vector<uint32_t>& out, std::string* why) {
  if (hex.size() % 8 != 0) {
    *why = cat("\"words\" has ", hex.size(), " hex digits, not a multiple of 8");
    return false;
  }
  out.reserve(hex.size() / 8);
  for (size_t i = 0; i < hex.size(); i += 8) {
    uint32_t w = 0;
    for (size_t k = 0; k < 8; ++k) {
      int d = hex_digit(hex[i + k]);
      if (d < 0) {
        *why = cat("\"words\": '", hex[i + k], "' is not a hex digit");
        return false;
      }
      w = w << 4 | static_cast<uint32_t>(d);
    }
    out.push_back(w);
  }
  return true;
}

std::optional<Event> event_of(const FlatObject& o, std::string* why) {
  const std::string* t = o.str("t");
  if (!t) {
    *why = "no \"t\" member";
    return std::nullopt;
  }
  auto need_str = [&](const char* k) -> const std::string* {
    const std::string* v = o.str(k);
    if (!v) *why = cat("no string \"", k, "\"");
    return v;
  };
  auto need_num = [&](const char* k) -> std::optional<uint64_t> {
    auto v = o.num(k);
    if (!v) *why = cat("no number \"", k, "\"");
    return v;
  };
  Event e;
  if (*t == "alloc" || *t == "free") {
    AllocEvent a;
    a.freed = *t == "free";
    const std::string* dev = need_str("dev");
    const std::string* kind = need_str("kind");
    auto va = need_num("va"), size = need_num("size");
    if (!dev || !kind || !va || !size) return std::nullopt;
    a.device = *dev;
    a.kind = *kind;
    a.va = *va;
    a.size = *size;
    e.alloc = std::move(a);
    return e;
  }
  if (*t == "submit") {
    Submission s;
    const std::string *dev = need_str("dev"), *arch = need_str("arch"), *queue = need_str("queue"),
                      *format = need_str("format"), *words = need_str("words");
    auto n = need_num("n"), qid = need_num("qid"), ring_end = need_num("ring_end");
    if (!dev || !arch || !queue || !format || !words || !n || !qid || !ring_end) return std::nullopt;
    if (!parse_words(*words, s.words, why)) return std::nullopt;
    s.n = *n;
    s.ns = o.num("ns").value_or(0);
    s.device = *dev;
    s.arch = *arch;
    s.queue = *queue;
    s.format = *format;
    s.qid = static_cast<uint32_t>(*qid);
    s.ring_end = *ring_end;
    s.dropped = o.num("dropped").value_or(0);
    e.submit = std::move(s);
    return e;
  }
  if (*t == "ring") {
    RingDump r;
    const std::string *dev = need_str("dev"), *arch = need_str("arch"), *queue = need_str("queue"),
                      *format = need_str("format"), *words = need_str("words");
    auto read = need_num("read"), write = need_num("write");
    if (!dev || !arch || !queue || !format || !words || !read || !write) return std::nullopt;
    if (!parse_words(*words, r.words, why)) return std::nullopt;
    r.device = *dev;
    r.arch = *arch;
    r.queue = *queue;
    r.format = *format;
    r.read = *read;
    r.write = *write;
    r.va = o.num("va").value_or(0);
    r.dropped = o.num("dropped").value_or(0);
    e.ring = std::move(r);
    return e;
  }
  if (*t == "signal") {
    const std::string* label = need_str("label");
    auto addr = need_num("addr"), value = need_num("value"), expected = need_num("expected");
    if (!label || !addr || !value || !expected) return std::nullopt;
    e.signal = SignalEvent{*label, *addr, *value, *expected};
    return e;
  }
  *why = cat("unknown event \"", *t, "\"");
  return std::nullopt;
}

}  // namespace

Capture parse(std::string_view text) {
  Capture c;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string why;
    std::optional<FlatObject> o = parse_flat_object(line, &why);
    if (!o) {
      c.problems.push_back(cat("line ", line_no, ": not a JSON object: ", why));
      continue;
    }
    if (!o->str("t")) {
      if (!c.header && c.events.empty()) {
        c.header = std::move(o);
      } else {
        c.problems.push_back(cat("line ", line_no, ": an object without \"t\" after the header"));
      }
      continue;
    }
    if (std::optional<Event> e = event_of(*o, &why)) {
      c.events.push_back(std::move(*e));
    } else {
      c.problems.push_back(cat("line ", line_no, ": ", why));
    }
  }
  return c;
}

}  // namespace hcq::capture
