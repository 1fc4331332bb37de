// JSON string escaping shared by the capture writer and the hang-bundle writer (internal to hcq/), so both files
// escape exactly alike and their one reader (capture_format.cpp) accepts both.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace hcq::json_text {

// Appends `s` as a quoted JSON string: quote and backslash escaped, control characters as \u00XX.
inline void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  out += '"';
}

}  // namespace hcq::json_text
