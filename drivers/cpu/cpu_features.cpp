#include "cpu_features.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace hcq::cpu {
namespace {

enum class Reg : uint8_t { eax, ebx, ecx, edx };

// XCR0 state components a feature's registers need (Intel SDM vol. 1, 13.3): SSE (bit 1) and AVX (2) for the YMM
// registers; opmask (5), ZMM_Hi256 (6) and Hi16_ZMM (7) for AVX-512; XTILECFG (17) and XTILEDATA (18) for AMX.
constexpr uint64_t kXcr0Avx = 0x6;
constexpr uint64_t kXcr0Avx512 = kXcr0Avx | 0xe0;
constexpr uint64_t kXcr0Amx = uint64_t{3} << 17;

constexpr uint32_t bit_of(CpuFeature f) { return 1u << static_cast<unsigned>(f); }

struct FeatureBit {
  CpuFeature feature;
  uint32_t leaf, subleaf;
  Reg reg;
  uint8_t bit;
  uint64_t xcr0;   // state components the OS must enable
  uint32_t needs;  // features (bit_of) it is unusable without
};

// Where each feature's bit is (Linux's arch/x86/include/asm/cpufeatures.h words: 4 = CPUID.1:ECX, 9 = CPUID.7:EBX,
// 12 = CPUID.(7,1):EAX, 18 = CPUID.7:EDX), and what it depends on (as in Linux's cpuid-deps.c, for the features
// listed here).
constexpr uint32_t kAvx512f = bit_of(CpuFeature::avx512f);
constexpr uint32_t kAmxTile = bit_of(CpuFeature::amx_tile);
constexpr std::array<FeatureBit, kCpuFeatureCount> kFeatureBits = {{
    {CpuFeature::avx2, 7, 0, Reg::ebx, 5, kXcr0Avx, 0},
    {CpuFeature::fma, 1, 0, Reg::ecx, 12, kXcr0Avx, 0},
    {CpuFeature::avx512f, 7, 0, Reg::ebx, 16, kXcr0Avx512, 0},
    {CpuFeature::avx512bw, 7, 0, Reg::ebx, 30, kXcr0Avx512, kAvx512f},
    {CpuFeature::avx512vl, 7, 0, Reg::ebx, 31, kXcr0Avx512, kAvx512f},
    {CpuFeature::avx512_bf16, 7, 1, Reg::eax, 5, kXcr0Avx512, kAvx512f | bit_of(CpuFeature::avx512vl)},
    {CpuFeature::avx512_fp16, 7, 0, Reg::edx, 23, kXcr0Avx512, kAvx512f | bit_of(CpuFeature::avx512bw)},
    {CpuFeature::amx_tile, 7, 0, Reg::edx, 24, kXcr0Amx, 0},
    {CpuFeature::amx_bf16, 7, 0, Reg::edx, 22, kXcr0Amx, kAmxTile},
    {CpuFeature::amx_int8, 7, 0, Reg::edx, 25, kXcr0Amx, kAmxTile},
}};

// CPUID.1:ECX.OSXSAVE: the OS set CR4.OSXSAVE, so XGETBV works.
constexpr uint32_t kOsxsaveBit = 27;
// arch_prctl's request code and the state component of AMX tile data (Linux's asm/prctl.h, the SDM's XCR0 bit 18).
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

// The leaf's registers, or zeros for a leaf the CPU does not report (a reserved leaf reads as garbage).
CpuidRegs regs_of(const CpuidSnapshot& s, uint32_t leaf, uint32_t subleaf) {
  if (leaf == 1 && s.max_leaf >= 1) return s.leaf1;
  if (leaf == 7 && s.max_leaf >= 7) {
    if (subleaf == 0) return s.leaf7_0;
    if (subleaf == 1 && s.leaf7_0.eax >= 1) return s.leaf7_1;
  }
  return {};
}

uint32_t reg_of(const CpuidRegs& r, Reg which) {
  switch (which) {
    case Reg::eax: return r.eax;
    case Reg::ebx: return r.ebx;
    case Reg::ecx: return r.ecx;
    case Reg::edx: return r.edx;
  }
  return 0;
}

// Drops every feature whose prerequisites are not all in the set, until none changes (a chain such as
// avx512f -> avx512vl -> avx512_bf16 falls in one call).
CpuFeatureSet close_over_requirements(CpuFeatureSet f) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const FeatureBit& b : kFeatureBits)
      if (f.has(b.feature) && (f.bits() & b.needs) != b.needs) {
        f.remove(b.feature);
        changed = true;
      }
  }
  return f;
}

std::string known_names() {
  std::string s;
  for (std::string_view n : kCpuFeatureNames) (s += s.empty() ? "" : ", ") += n;
  return s;
}

std::string names_of(uint32_t bits) {
  CpuFeatureSet s;
  for (size_t i = 0; i < kCpuFeatureCount; ++i)
    if ((bits >> i) & 1u) s.add(static_cast<CpuFeature>(i));
  return s.names(", ");
}

}  // namespace

CpuidSnapshot read_host_cpuid() {
  CpuidSnapshot s;
#if defined(__x86_64__)
  CpuidRegs r;
  __cpuid_count(0, 0, r.eax, r.ebx, r.ecx, r.edx);
  s.max_leaf = r.eax;
  if (s.max_leaf >= 1) __cpuid_count(1, 0, s.leaf1.eax, s.leaf1.ebx, s.leaf1.ecx, s.leaf1.edx);
  if (s.max_leaf >= 7) {
    __cpuid_count(7, 0, s.leaf7_0.eax, s.leaf7_0.ebx, s.leaf7_0.ecx, s.leaf7_0.edx);
    if (s.leaf7_0.eax >= 1) __cpuid_count(7, 1, s.leaf7_1.eax, s.leaf7_1.ebx, s.leaf7_1.ecx, s.leaf7_1.edx);
  }
  if ((s.leaf1.ecx >> kOsxsaveBit) & 1u) {
    // XGETBV with ECX = 0 reads XCR0; spelled as its bytes' mnemonic, which needs no -mxsave.
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    s.xcr0 = (uint64_t{hi} << 32) | lo;
  }
#endif
  return s;
}

CpuFeatureSet decode_cpu_features(const CpuidSnapshot& s) {
  // Without OSXSAVE the OS never enabled XCR0's extended components: xcr0 is then 0 and no feature here is usable.
  const uint64_t xcr0 = ((regs_of(s, 1, 0).ecx >> kOsxsaveBit) & 1u) ? s.xcr0 : 0;
  CpuFeatureSet f;
  for (const FeatureBit& b : kFeatureBits) {
    const bool cpu_has = (reg_of(regs_of(s, b.leaf, b.subleaf), b.reg) >> b.bit) & 1u;
    if (cpu_has && (xcr0 & b.xcr0) == b.xcr0) f.add(b.feature);
  }
  return close_over_requirements(f);
}

CpuFeatureSet apply_cpu_feature_mask(CpuFeatureSet features, std::string_view mask) {
  const std::string var = cat("HCQ_CPU_FEATURES=\"", mask, "\"");
  size_t pos = 0;
  while (pos <= mask.size() && !mask.empty()) {
    const size_t comma = std::min(mask.find(',', pos), mask.size());
    const std::string_view entry = mask.substr(pos, comma - pos);
    pos = comma + 1;
    if (entry.empty() || entry.front() != '-')
      throw InvalidArgument(cat(var, ": entry \"", entry,
                                "\" is not -<feature>: the variable only masks features off, as in "
                                "-amx_tile,-avx512_bf16 (known: ",
                                known_names(), ")"));
    const std::string_view name = entry.substr(1);
    size_t i = 0;
    while (i < kCpuFeatureCount && kCpuFeatureNames[i] != name) ++i;
    if (i == kCpuFeatureCount)
      throw InvalidArgument(cat(var, ": unknown CPU feature \"", name, "\" (known: ", known_names(), ")"));
    features.remove(static_cast<CpuFeature>(i));
  }
  return close_over_requirements(features);
}

int request_amx_permission() {
  // A function-local static: initialised once per process, other threads wait for the first answer. The
  // permission is the process's (every thread, the CPU device's workers included); asking again is harmless
  // but pointless.
  static const int answer = [] {
    const long r = syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata);
    return r == 0 ? 0 : errno;
  }();
  return answer;
}

CpuIsa resolve_cpu_isa(const CpuidSnapshot& s, const std::optional<std::string>& mask,
                       const std::function<int()>& request_amx) {
  CpuIsa isa;
  const CpuFeatureSet has = decode_cpu_features(s);
  isa.features = mask ? apply_cpu_feature_mask(has, *mask) : has;
  std::string note;
  if (const uint32_t masked = has.bits() & ~isa.features.bits(); masked != 0)
    note = cat(names_of(masked), ": masked off by HCQ_CPU_FEATURES");
  if (isa.features.has(CpuFeature::amx_tile)) {
    if (const int err = request_amx(); err != 0) {
      uint32_t amx = 0;
      for (CpuFeature f : {CpuFeature::amx_tile, CpuFeature::amx_bf16, CpuFeature::amx_int8})
        if (isa.features.has(f)) {
          amx |= bit_of(f);
          isa.features.remove(f);
        }
      note += cat(note.empty() ? "" : "; ", names_of(amx),
                  ": not usable, Linux refused the tile data permission (arch_prctl ARCH_REQ_XCOMP_PERM "
                  "XFEATURE_XTILEDATA: ",
                  std::strerror(err), ")");
    }
  }
  isa.note = std::move(note);
  isa.bf16_matmul = choose_bf16_matmul_path(isa.features);
  return isa;
}

CpuIsa host_cpu_isa() { return resolve_cpu_isa(read_host_cpuid(), knobs::cpu_features(), request_amx_permission); }

}  // namespace hcq::cpu
