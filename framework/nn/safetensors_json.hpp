// A small strict JSON parser (RFC 8259) for the header of a safetensors file: the whole grammar, nothing more
// (no comments, no trailing commas, no NaN, no duplicate keys, no bytes that are not UTF-8 in strings), because a
// header another tool wrote loosely is a header another tool may read differently.
// Numbers are kept as their text; the caller converts what it expects (safetensors wants non-negative integers).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hcq/error.hpp"

namespace hcq::fw::json {

struct Value {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool boolean = false;
  std::string text;  // a string's value (unescaped) or a number's literal
  std::vector<Value> items;
  std::vector<std::pair<std::string, Value>> members;  // in document order; keys are unique
  const Value* find(std::string_view key) const;       // an object's member, or nullptr
};

const char* kind_name(Value::Kind k);  // "object", "array", ...

// The document's one value; whitespace around it is allowed. SyntaxError otherwise.
Value parse(std::string_view text);

// What is wrong and at which byte of the text.
class SyntaxError : public Error {
 public:
  SyntaxError(const std::string& what, size_t offset) : Error(what), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

}  // namespace hcq::fw::json
