// DType facts and the promotion lattice.
#include <bit>
#include <cmath>
#include <cstring>

#include "hcq/dtype.hpp"

namespace hcq {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::bool_: return "bool";
    case DType::int8: return "int8";
    case DType::uint8: return "uint8";
    case DType::int32: return "int32";
    case DType::uint32: return "uint32";
    case DType::int64: return "int64";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
    case DType::float32: return "float32";
  }
  return "?";
}

unsigned dtype_size(DType t) {
  switch (t) {
    case DType::bool_:
    case DType::int8:
    case DType::uint8: return 1;
    case DType::float16:
    case DType::bfloat16: return 2;
    case DType::int32:
    case DType::uint32:
    case DType::float32: return 4;
    case DType::int64: return 8;
  }
  return 0;
}

bool is_float(DType t) { return t == DType::float16 || t == DType::bfloat16 || t == DType::float32; }
bool is_int(DType t) { return t != DType::bool_ && !is_float(t); }
bool is_unsigned(DType t) { return t == DType::uint8 || t == DType::uint32; }

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::bool_) return b;
  if (b == DType::bool_) return a;
  if (is_float(a) || is_float(b)) {
    if (!is_float(a)) return b;
    if (!is_float(b)) return a;
    return DType::float32;  // float16 with bfloat16 (or either with float32)
  }
  // Both integers of different types. Same signedness: the wider one.
  if (is_unsigned(a) == is_unsigned(b)) return dtype_size(a) >= dtype_size(b) ? a : b;
  const DType u = is_unsigned(a) ? a : b, s = is_unsigned(a) ? b : a;
  if (dtype_size(s) > dtype_size(u)) return s;  // the signed type holds every value of the unsigned one
  // The next signed type wider than the unsigned one (there is no int16: uint8 with int8 gives int32).
  return dtype_size(u) == 1 ? DType::int32 : DType::int64;
}

float float16_t::to_float() const {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exp = (bits >> 10) & 0x1fu, man = bits & 0x3ffu;
  uint32_t out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | (man << 13);  // inf, nan
  } else if (exp == 0) {
    if (man == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while (!(man & 0x400u));
      out = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else {
    out = sign | (exp + 112) << 23 | man << 13;
  }
  return std::bit_cast<float>(out);
}

float16_t float16_t::from_float(float f) {
  // Round to nearest even through the hardware-independent path: scale into the half range with float arithmetic.
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return {static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0))};
  if (ax >= 0x477ff000u) return {static_cast<uint16_t>(sign | 0x7c00u)};  // rounds to inf
  if (ax < 0x38800000u) {  // subnormal or zero in half: 2^-24 units, rounded by the float adder
    const float v = std::bit_cast<float>(ax) + 0.5f;  // 0.5 = 2^-1: places 2^-24 at the last mantissa bit
    return {static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(v) - 0x3f000000u))};
  }
  const uint32_t mant_odd = (ax >> 13) & 1u;
  const uint32_t r = ax + 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return {static_cast<uint16_t>(sign | (r >> 13))};
}

float bfloat16_t::to_float() const { return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16); }

bfloat16_t bfloat16_t::from_float(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return {static_cast<uint16_t>((x >> 16) | 0x40u)};  // quiet nan
  return {static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16)};
}

}  // namespace hcq
