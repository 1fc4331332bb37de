// The C helpers every CPU kernel the framework generates starts with (after the HCQ kernel ABI): half-type
// conversions done in-line (no compiler-rt calls, which the CPU device's loader refuses), and integer division,
// remainder and power that never trap (x / 0 is 0, INT_MIN / -1 wraps), as the Tensor API promises.
#pragma once

namespace hcq::fw {

inline constexpr const char* kCPrelude = R"(typedef unsigned short hcq_half_bits;
static inline float hcq_h2f(uint16_t h) { _Float16 v; __builtin_memcpy(&v, &h, 2); return (float)v; }
static inline uint16_t hcq_f2h(float f) { _Float16 v = (_Float16)f; uint16_t h; __builtin_memcpy(&h, &v, 2); return h; }
static inline float hcq_rh(float f) { return (float)(_Float16)f; }
static inline float hcq_b2f(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; __builtin_memcpy(&f, &u, 4); return f; }
static inline uint16_t hcq_f2b(float f) {
  uint32_t u; __builtin_memcpy(&u, &f, 4);
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

}  // namespace hcq::fw
