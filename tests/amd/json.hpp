// A small JSON reader for the golden-vector tests (nlohmann-json is not installed here). Enough of RFC 8259 for the
// vector files: objects, arrays, strings with the common escapes, numbers, true/false/null.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hcq::amd::testing {

class Json {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  static Json parse(std::string_view text);  // throws std::runtime_error with the byte offset on bad input
  static Json parse_file(const std::string& path);

  Kind kind() const { return kind_; }
  bool is_object() const { return kind_ == Kind::object; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_number() const { return kind_ == Kind::number; }

  const std::string& str() const { return text_; }
  // Integers: a JSON number, or a string "0x..." / decimal (the vectors write addresses as hex strings).
  uint64_t u64() const;
  bool boolean() const { return bool_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<std::pair<std::string, Json>>& members() const { return members_; }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const Json* find(std::string_view key) const;
  const Json& operator[](std::string_view key) const;  // throws when absent

 private:
  Kind kind_ = Kind::null;
  bool bool_ = false;
  std::string text_;  // string value, or a number's literal text
  std::vector<Json> items_;
  std::vector<std::pair<std::string, Json>> members_;
  friend class JsonParser;
};

}  // namespace hcq::amd::testing
