// The x86 instruction-set features the CPU device's kernels may use, and the bf16 matmul path they imply. The CPU
// device finds them at open (drivers/cpu/cpu_features.cpp: CPUID, the OS-enabled state, HCQ_CPU_FEATURES, the AMX
// permission) and reports them in DeviceInfo::cpu_isa; the framework's code generator reads them from there
// (framework/codegen/target.hpp) to pick a kernel's instructions. The names are Linux's /proc/cpuinfo flags.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace hcq {

enum class CpuFeature : uint8_t {
  avx2,
  fma,
  avx512f,
  avx512bw,
  avx512vl,
  avx512_bf16,
  avx512_fp16,
  amx_tile,
  amx_bf16,
  amx_int8,
};
inline constexpr size_t kCpuFeatureCount = 10;

// Indexed by CpuFeature: what /proc/cpuinfo, `hcq info` and HCQ_CPU_FEATURES call each one.
inline constexpr std::array<std::string_view, kCpuFeatureCount> kCpuFeatureNames = {
    "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
};

inline constexpr std::string_view cpu_feature_name(CpuFeature f) { return kCpuFeatureNames[static_cast<size_t>(f)]; }

// A set of features, one bit each.
class CpuFeatureSet {
 public:
  constexpr CpuFeatureSet() = default;
  constexpr bool has(CpuFeature f) const { return (bits_ >> static_cast<unsigned>(f)) & 1u; }
  constexpr void add(CpuFeature f) { bits_ |= 1u << static_cast<unsigned>(f); }
  constexpr void remove(CpuFeature f) { bits_ &= ~(1u << static_cast<unsigned>(f)); }
  constexpr uint32_t bits() const { return bits_; }
  constexpr bool operator==(const CpuFeatureSet&) const = default;
  // The names of the features held, in kCpuFeatureNames order, separated by `sep`; "none" for the empty set.
  std::string names(std::string_view sep = " ") const {
    std::string s;
    for (size_t i = 0; i < kCpuFeatureCount; ++i)
      if (has(static_cast<CpuFeature>(i))) (s += s.empty() ? "" : sep) += kCpuFeatureNames[i];
    return s.empty() ? "none" : s;
  }

 private:
  uint32_t bits_ = 0;
};

// How a bf16 matmul-shaped kernel (fp32 accumulation) computes on this CPU, best first: AMX tiles (tdpbf16ps), the
// AVX512-BF16 dot product (vdpbf16ps), AVX-512 FMAs on bf16 widened to fp32, AVX2 FMAs likewise, plain C. Each has
// a micro-kernel of the same signature in the kernel ABI (include/hcq/kernel_abi.h, "bf16 matmul micro-kernels").
enum class Bf16MatmulPath : uint8_t { scalar, avx2, avx512, avx512_bf16, amx };

inline constexpr std::string_view to_string(Bf16MatmulPath p) {
  switch (p) {
    case Bf16MatmulPath::amx: return "amx";
    case Bf16MatmulPath::avx512_bf16: return "avx512_bf16";
    case Bf16MatmulPath::avx512: return "avx512";
    case Bf16MatmulPath::avx2: return "avx2";
    case Bf16MatmulPath::scalar: return "scalar";
  }
  return "?";
}

// Whether `f` has the features path `p`'s micro-kernel is built for (its target attribute in the kernel ABI).
inline constexpr bool bf16_matmul_path_usable(CpuFeatureSet f, Bf16MatmulPath p) {
  switch (p) {
    case Bf16MatmulPath::amx: return f.has(CpuFeature::amx_tile) && f.has(CpuFeature::amx_bf16);
    case Bf16MatmulPath::avx512_bf16: return f.has(CpuFeature::avx512f) && f.has(CpuFeature::avx512_bf16);
    case Bf16MatmulPath::avx512: return f.has(CpuFeature::avx512f);
    case Bf16MatmulPath::avx2: return f.has(CpuFeature::avx2) && f.has(CpuFeature::fma);
    case Bf16MatmulPath::scalar: return true;
  }
  return false;
}

// The best path `f` allows.
inline constexpr Bf16MatmulPath choose_bf16_matmul_path(CpuFeatureSet f) {
  for (Bf16MatmulPath p :
       {Bf16MatmulPath::amx, Bf16MatmulPath::avx512_bf16, Bf16MatmulPath::avx512, Bf16MatmulPath::avx2})
    if (bf16_matmul_path_usable(f, p)) return p;
  return Bf16MatmulPath::scalar;
}

// What the CPU device reports: the features its kernels may use (the CPU has them, the OS enabled their registers,
// HCQ_CPU_FEATURES did not mask them off, and for AMX Linux granted the tile-data permission), the bf16 matmul path
// they give, and why a feature the CPU has is not usable (empty when none is missing for a reason worth telling:
// "amx_tile, amx_bf16, amx_int8: Linux refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM: ...)").
struct CpuIsa {
  CpuFeatureSet features;
  Bf16MatmulPath bf16_matmul = Bf16MatmulPath::scalar;
  std::string note;
};

}  // namespace hcq
