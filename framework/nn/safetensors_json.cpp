// The strict JSON parser of the safetensors header: recursive descent over the RFC 8259 grammar.
#include "framework/nn/safetensors_json.hpp"

#include <cstdint>
#include <string>

namespace hcq::fw::json {
namespace {

// Deeper than any header (object > tensor > shape array is 3); the bound keeps hostile input off the stack.
constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}

  Value document() {
    skip_ws();
    Value v = value(0);
    skip_ws();
    if (pos_ != t_.size()) fail("text after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw SyntaxError(cat(what, " at byte ", pos_), pos_); }
  bool at_end() const { return pos_ >= t_.size(); }
  char peek() const { return at_end() ? '\0' : t_[pos_]; }

  void skip_ws() {
    while (!at_end() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  void expect(char c, const char* what) {
    if (peek() != c || at_end()) fail(cat("expected ", what));
    ++pos_;
  }
  void literal(std::string_view word) {
    if (t_.substr(pos_, word.size()) != word) fail("unknown literal");
    pos_ += word.size();
  }

  Value value(int depth) {
    if (depth >= kMaxDepth) fail(cat("nesting deeper than ", kMaxDepth));
    if (at_end()) fail("expected a value, found the end");
    Value v;
    switch (peek()) {
      case '{':
        v.kind = Value::Kind::object;
        object(v, depth);
        break;
      case '[':
        v.kind = Value::Kind::array;
        array(v, depth);
        break;
      case '"':
        v.kind = Value::Kind::string;
        v.text = string();
        break;
      case 't':
        v.kind = Value::Kind::boolean;
        literal("true");
        v.boolean = true;
        break;
      case 'f':
        v.kind = Value::Kind::boolean;
        literal("false");
        break;
      case 'n': literal("null"); break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          v.kind = Value::Kind::number;
          v.text = number();
        } else {
          fail(cat("unexpected character '", std::string(1, peek()), "'"));
        }
    }
    return v;
  }

  void object(Value& v, int depth) {
    ++pos_;
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_ws();
      if (peek() != '"') fail("expected a string key");
      const size_t key_at = pos_;
      std::string key = string();
      if (v.find(key) != nullptr) throw SyntaxError(cat("duplicate key \"", key, "\" at byte ", key_at), key_at);
      skip_ws();
      expect(':', "':' after a key");
      skip_ws();
      Value member = value(depth + 1);
      v.members.emplace_back(std::move(key), std::move(member));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect('}', "',' or '}' in an object");
      return;
    }
  }

  void array(Value& v, int depth) {
    ++pos_;
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return;
    }
    for (;;) {
      skip_ws();
      v.items.push_back(value(depth + 1));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      expect(']', "',' or ']' in an array");
      return;
    }
  }

  std::string number() {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("expected a digit");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    return std::string(t_.substr(start, pos_ - start));
  }

  unsigned hex4() {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = peek();
      unsigned d;
      if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') d = static_cast<unsigned>(c - 'A' + 10);
      else fail("expected 4 hex digits after \\u");
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  static void put_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  // One UTF-8 sequence copied through, checked (RFC 3629: no overlongs, no surrogates, at most U+10FFFF).
  void utf8(std::string& out) {
    const auto b0 = static_cast<uint8_t>(t_[pos_]);
    int len;
    uint32_t cp, min;
    if (b0 >= 0xc2 && b0 <= 0xdf) len = 2, cp = b0 & 0x1fu, min = 0x80;
    else if (b0 >= 0xe0 && b0 <= 0xef) len = 3, cp = b0 & 0x0fu, min = 0x800;
    else if (b0 >= 0xf0 && b0 <= 0xf4) len = 4, cp = b0 & 0x07u, min = 0x10000;
    else fail("invalid UTF-8 in a string");
    for (int i = 1; i < len; ++i) {
      if (pos_ + static_cast<size_t>(i) >= t_.size()) fail("invalid UTF-8 in a string");
      const auto b = static_cast<uint8_t>(t_[pos_ + static_cast<size_t>(i)]);
      if ((b & 0xc0) != 0x80) fail("invalid UTF-8 in a string");
      cp = (cp << 6) | (b & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) fail("invalid UTF-8 in a string");
    out.append(t_.substr(pos_, static_cast<size_t>(len)));
    pos_ += static_cast<size_t>(len);
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    for (;;) {
      if (at_end()) fail("unterminated string");
      const char c = t_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (static_cast<uint8_t>(c) < 0x20) fail("a control character in a string");
      if (static_cast<uint8_t>(c) >= 0x80) {
        utf8(out);
        continue;
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xdc00 && cp <= 0xdfff) fail("a lone low surrogate in \\u escapes");
          if (cp >= 0xd800 && cp <= 0xdbff) {
            if (t_.substr(pos_, 2) != "\\u") fail("a high surrogate without its low half");
            pos_ += 2;
            const uint32_t lo = hex4();
            if (lo < 0xdc00 || lo > 0xdfff) fail("a high surrogate without its low half");
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
          }
          put_utf8(out, cp);
          break;
        }
        default: --pos_; fail("an unknown escape in a string");
      }
    }
  }

  std::string_view t_;
  size_t pos_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : members) {
    if (k == key) return &v;
  }
  return nullptr;
}

const char* kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::null: return "null";
    case Value::Kind::boolean: return "a boolean";
    case Value::Kind::number: return "a number";
    case Value::Kind::string: return "a string";
    case Value::Kind::array: return "an array";
    case Value::Kind::object: return "an object";
  }
  return "?";
}

Value parse(std::string_view text) { return Parser(text).document(); }

}  // namespace hcq::fw::json
