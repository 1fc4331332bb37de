// The C helpers every kernel the framework generates starts with (after the HCQ kernel ABI): half-type conversions
// done in-line (no compiler-rt calls, which the CPU device's loader refuses and no GPU links), integer division,
// remainder and power that never trap (x / 0 is 0, INT_MIN / -1 wraps), as the Tensor API promises, and the few
// spellings that differ between the targets' compilers. The source must be C11 (the CPU device, AMDGPU, and every
// simulated GPU's host twin) and, for NVIDIA, CUDA C++ under NVRTC as well: the common subset, plus the macros here.
#pragma once

#include <string>

#include "framework/codegen/target.hpp"

namespace hcq::fw {

// clang (the CPU device and AMDGPU): builtins for memcpy, NaN and infinity.
inline constexpr const char* kCPreludeClang = R"(#define HCQ_MEMCPY __builtin_memcpy
#define HCQ_NANF __builtin_nanf("")
#define HCQ_INFF __builtin_inff()
)";

// NVRTC has none of clang's builtins (and the host twin of the same source is C): memcpy, which both provide, and
// NaN and infinity from their bits.
inline constexpr const char* kCPreludeCuda = R"(#define HCQ_MEMCPY memcpy
static inline float hcq_u2f(uint32_t u) { float f; HCQ_MEMCPY(&f, &u, 4); return f; }
#define HCQ_NANF hcq_u2f(0x7fc00000u)
#define HCQ_INFF hcq_u2f(0x7f800000u)
)";

inline constexpr const char* kCPreludeCommon = R"(#ifdef __cplusplus
typedef bool hcq_bool;
#else
typedef _Bool hcq_bool;
#endif
static inline float hcq_b2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; HCQ_MEMCPY(&f, &u, 4); return f; }
static inline uint16_t hcq_f2b(float f) {
  uint32_t u; HCQ_MEMCPY(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static inline float hcq_rb(float f) { return hcq_b2f(hcq_f2b(f)); }
#define HCQ_SDIV(T, U, name) \
  static inline T hcq_idiv_##name(T a, T b) { return b == 0 ? 0 : b == -1 ? (T)(0 - (U)a) : a / b; } \
  static inline T hcq_mod_##name(T a, T b) { return (b == 0 || b == -1) ? 0 : a % b; }
#define HCQ_UDIV(T, name) \
  static inline T hcq_idiv_##name(T a, T b) { return b == 0 ? 0 : a / b; } \
  static inline T hcq_mod_##name(T a, T b) { return b == 0 ? 0 : a % b; }
HCQ_SDIV(int32_t, uint32_t, i8)
HCQ_SDIV(int32_t, uint32_t, i32)
HCQ_SDIV(int64_t, uint64_t, i64)
HCQ_UDIV(uint32_t, u8)
HCQ_UDIV(uint32_t, u32)
static inline int64_t hcq_ipow(int64_t a, int64_t b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }
  return (int64_t)r;
}
)";

// float16 where the compiler has _Float16 (clang on x86-64 and on AMDGPU, which converts in hardware).
inline constexpr const char* kHalfNative =
    R"(static inline float hcq_h2f(uint16_t h) { _Float16 v; HCQ_MEMCPY(&v, &h, 2); return (float)v; }
static inline uint16_t hcq_f2h(float f) { _Float16 v = (_Float16)f; uint16_t h; HCQ_MEMCPY(&h, &v, 2); return h; }
static inline float hcq_rh(float f) { return (float)(_Float16)f; }
)";

// float16 from its bits (IEEE 754 binary16, round to nearest even), where the source must also be CUDA C++, which
// has no _Float16: the same arithmetic on the GPU and in its host twin.
inline constexpr const char* kHalfBits = R"(static inline float hcq_h2f(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t u;
  if (e == 0) { const float v = (float)m * 0x1p-24f; return (h & 0x8000u) ? -v : v; }
  if (e == 0x1fu) u = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0u); /* NaNs come out quiet */
  else u = sign | ((e + 112u) << 23) | (m << 13);
  float f; HCQ_MEMCPY(&f, &u, 4); return f;
}
static inline uint16_t hcq_f2h(float f) {
  uint32_t x; HCQ_MEMCPY(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (ax >= 0x38800000u) {
    const uint32_t r = ax - 0x38000000u;
    return (uint16_t)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  if (ax < 0x33000000u) return (uint16_t)sign;
  const uint32_t s = 126u - (ax >> 23), m = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t rem = m & ((1u << s) - 1u), halfway = 1u << (s - 1u);
  uint32_t q = m >> s;
  q += (rem > halfway || (rem == halfway && (q & 1u))) ? 1u : 0u;
  return (uint16_t)(sign | q);
}
static inline float hcq_rh(float f) { return hcq_h2f(hcq_f2h(f)); }
)";

// AMDGPU links no libm: pow from exp2 and log2 (which the backend lowers to instructions), with pow's special cases
// (C11 F.10.4.4) spelled out, since exp2(b * log2(a)) alone gets negative bases, zeros and ones wrong.
inline constexpr const char* kPowFromExp2 = R"(static inline float hcq_powf(float a, float b) {
  if (b == 0.0f || a == 1.0f) return 1.0f;
  if (a != a || b != b) return a + b;
  const float ab = __builtin_fabsf(a);
  if (ab == 1.0f && __builtin_fabsf(b) == HCQ_INFF) return 1.0f;
  const float r = __builtin_exp2f(b * __builtin_log2f(ab));
  if (a > 0.0f || (a == 0.0f && !__builtin_signbit(a))) return r;
  if (__builtin_truncf(b) != b) return a == 0.0f ? r : HCQ_NANF;
  const float half = b * 0.5f;
  return __builtin_truncf(half) != half ? -r : r;
}
)";

inline std::string c_prelude(Target t) {
  std::string s = t == Target::cuda ? kCPreludeCuda : kCPreludeClang;
  s += kCPreludeCommon;
  s += t == Target::cuda ? kHalfBits : kHalfNative;
  if (t == Target::amdgpu) s += kPowFromExp2;
  return s;
}

}  // namespace hcq::fw
