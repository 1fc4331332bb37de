// DType: the element types of tensors, their sizes and names, and the promotion rule of binary ops.
#pragma once

#include <cstdint>
#include <string_view>

namespace hcq {

// Ordered by promotion rank within each kind (bool < unsigned/signed integers < floats).
enum class DType : uint8_t { bool_, int8, uint8, int32, uint32, int64, float16, bfloat16, float32 };

namespace dtypes {
inline constexpr DType bool_ = DType::bool_;
inline constexpr DType int8 = DType::int8;
inline constexpr DType uint8 = DType::uint8;
inline constexpr DType int32 = DType::int32;
inline constexpr DType uint32 = DType::uint32;
inline constexpr DType int64 = DType::int64;
inline constexpr DType float16 = DType::float16;
inline constexpr DType bfloat16 = DType::bfloat16;
inline constexpr DType float32 = DType::float32;
// What an op makes when it needs a float and was given integers (mean, true division, exp, ...).
inline constexpr DType default_float = DType::float32;
inline constexpr DType default_int = DType::int32;
}  // namespace dtypes

std::string_view dtype_name(DType t);  // "float32", "bool", ...
unsigned dtype_size(DType t);          // bytes per element
bool is_float(DType t);
bool is_int(DType t);       // signed or unsigned integer, not bool
bool is_unsigned(DType t);  // uint8, uint32 (bool is not)

// The result type of a binary op on two tensors, as PyTorch and tinygrad promote: a float beats an integer, the
// wider beats the narrower; float16 with bfloat16 gives float32; a signed with an unsigned integer of the same or
// greater width gives the next signed type that holds both (uint8+int8 = int32 here, as tinygrad does it... see
// docs/framework.md for the table).
DType promote_types(DType a, DType b);

// Host storage for the half types (Tensor::data<float16_t>()): the raw bits, and a conversion to float.
struct float16_t {
  uint16_t bits;
  float to_float() const;
  static float16_t from_float(float f);
};
struct bfloat16_t {
  uint16_t bits;
  float to_float() const;
  static bfloat16_t from_float(float f);
};

}  // namespace hcq
