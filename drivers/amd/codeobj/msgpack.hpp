// A bounds-checked reader of the MessagePack subset an AMDGPU metadata note uses (maps, arrays, strings, integers,
// booleans, floats, nil; bin and ext are skipped). The bytes come from an untrusted code object: every length is
// checked against what is left, nesting is limited, and anything malformed throws CompileError("bad code object:
// metadata ...").
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hcq::amd::msgpack {

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> bytes) : p_(bytes) {}

  enum class Type { nil, boolean, uint, sint, f32, f64, str, bin, array, map, ext };
  // The type of the next value, without consuming it.
  Type peek() const;
  // Consume a map/array header and return its element count (pairs for a map).
  uint32_t map_header();
  uint32_t array_header();
  // Consume a string; the view points into the input.
  std::string_view str();
  // Consume a non-negative integer (positive fixint, uint8..64, or a non-negative int8..64).
  uint64_t uint();
  // Consume one whole value of any type, nested ones included.
  void skip();
  bool at_end() const { return pos_ == p_.size(); }
  size_t remaining() const { return p_.size() - pos_; }

 private:
  uint8_t byte_at(size_t pos) const;
  uint64_t be(size_t nbytes);  // consume a big-endian integer
  void need(uint64_t nbytes) const;
  void skip_depth(int depth);
  std::span<const uint8_t> p_;
  size_t pos_ = 0;
};

}  // namespace hcq::amd::msgpack
