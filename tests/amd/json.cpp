#include "json.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace hcq::amd::testing {

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}
  Json document() {
    Json v = value();
    ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void fail(const char* what) {
    throw std::runtime_error(std::string("json: ") + what + " at byte " + std::to_string(i_));
  }
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  char peek() {
    ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect(char c) {
    if (peek() != c) fail("unexpected character");
    ++i_;
  }
  bool literal(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      char c = s_[i_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("bad escape");
      char e = s_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("bad \\u escape");
          unsigned cp = static_cast<unsigned>(std::stoul(std::string(s_.substr(i_, 4)), nullptr, 16));
          i_ += 4;
          // The vectors are ASCII; keep other code points as UTF-8 without surrogate pairing.
          if (cp < 0x80) {
            out += static_cast<char>(cp);
          } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          } else {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
          }
          break;
        }
        default: out += e; break;
      }
    }
  }
  Json value() {
    Json v;
    char c = peek();
    if (c == '{') {
      ++i_;
      v.kind_ = Json::Kind::object;
      if (peek() == '}') {
        ++i_;
        return v;
      }
      while (true) {
        std::string k = string();
        expect(':');
        v.members_.emplace_back(std::move(k), value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return v;
      }
    }
    if (c == '[') {
      ++i_;
      v.kind_ = Json::Kind::array;
      if (peek() == ']') {
        ++i_;
        return v;
      }
      while (true) {
        v.items_.push_back(value());
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return v;
      }
    }
    if (c == '"') {
      v.kind_ = Json::Kind::string;
      v.text_ = string();
      return v;
    }
    if (literal("true")) {
      v.kind_ = Json::Kind::boolean;
      v.bool_ = true;
      return v;
    }
    if (literal("false")) {
      v.kind_ = Json::Kind::boolean;
      return v;
    }
    if (literal("null")) return v;
    size_t start = i_;
    while (i_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[i_]) != std::string_view::npos) ++i_;
    if (start == i_) fail("unexpected character");
    v.kind_ = Json::Kind::number;
    v.text_ = std::string(s_.substr(start, i_ - start));
    return v;
  }
  std::string_view s_;
  size_t i_ = 0;
};

Json Json::parse(std::string_view text) { return JsonParser(text).document(); }

Json Json::parse_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse(ss.str());
}

uint64_t Json::u64() const {
  if (kind_ == Kind::boolean) return bool_ ? 1 : 0;
  if (kind_ != Kind::number && kind_ != Kind::string) throw std::runtime_error("json: not a number: " + text_);
  size_t used = 0;
  const bool neg = !text_.empty() && text_[0] == '-';
  uint64_t v = neg ? static_cast<uint64_t>(std::stoll(text_, &used, 0)) : std::stoull(text_, &used, 0);
  if (used != text_.size()) throw std::runtime_error("json: not an integer: " + text_);
  return v;
}

const Json* Json::find(std::string_view key) const {
  for (const auto& [k, v] : members_)
    if (k == key) return &v;
  return nullptr;
}

const Json& Json::operator[](std::string_view key) const {
  if (const Json* v = find(key)) return *v;
  throw std::runtime_error("json: no member " + std::string(key));
}

}  // namespace hcq::amd::testing
