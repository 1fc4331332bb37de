// A small streaming JSON writer for the tools' --json outputs (hcq, hcq-dump): it keeps track of commas and escapes
// strings, so callers only say what goes where.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hcq::tool {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  // Inside an object: the next value's name.
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(double d);  // NaN and infinities become null: JSON has no spelling for them
  JsonWriter& value(uint64_t n);
  JsonWriter& value(uint32_t n) { return value(static_cast<uint64_t>(n)); }
  JsonWriter& value(bool b);
  JsonWriter& null();
  // An absent measurement is written as null.
  JsonWriter& value(const std::optional<double>& d) { return d ? value(*d) : null(); }

  // key(name).value(v) in one call.
  template <class T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  // The document so far. Complete once every begin_* has its end_*.
  const std::string& str() const { return out_; }

 private:
  void before_value();
  void write_string(std::string_view s);
  std::string out_;
  // One entry per open container: whether it already holds an element (so the next one needs a comma).
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace hcq::tool
