#include "json_writer.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace hcq::tool {

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;  // the comma went before the key
    return;
  }
  if (!has_element_.empty()) {
    if (has_element_.back()) out_ += ',';
    has_element_.back() = true;
  }
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_ += '{';
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  has_element_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  before_value();
  out_ += '[';
  has_element_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  has_element_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  before_value();
  write_string(name);
  out_ += ':';
  after_key_ = true;  // the key took the comma; its value must not add another
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  write_string(s);
  return *this;
}

void JsonWriter::write_string(std::string_view s) {
  out_ += '"';
  for (char c : s) {
    switch (c) {
      case '"': out_ += "\\\""; break;
      case '\\': out_ += "\\\\"; break;
      case '\n': out_ += "\\n"; break;
      case '\r': out_ += "\\r"; break;
      case '\t': out_ += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out_ += buf;
        } else {
          out_ += c;  // UTF-8 passes through unchanged
        }
    }
  }
  out_ += '"';
}

JsonWriter& JsonWriter::value(double d) {
  if (!std::isfinite(d)) return null();
  before_value();
  char buf[32];
  // Six significant digits: more than any of our measurements can claim.
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::general, 6);
  out_.append(buf, res.ptr);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t n) {
  before_value();
  out_ += std::to_string(n);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_ += "null";
  return *this;
}

}  // namespace hcq::tool
