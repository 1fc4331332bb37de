// The CPU device's instruction-set features (include/hcq/cpu_features.hpp): decoded from CPUID and XCR0, masked by
// HCQ_CPU_FEATURES, and for AMX granted by Linux's per-process tile-data permission. The decode is a function of the
// register values so tests can feed recorded ones (tests/unit/cpu_features_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "hcq/cpu_features.hpp"

namespace hcq::cpu {

struct CpuidRegs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

// The CPUID leaves the features live in, and the OS-enabled state components.
struct CpuidSnapshot {
  uint32_t max_leaf = 0;  // CPUID.0:EAX, the highest basic leaf
  CpuidRegs leaf1;        // CPUID.1
  CpuidRegs leaf7_0;      // CPUID.(7, 0); its EAX is the highest subleaf of leaf 7
  CpuidRegs leaf7_1;      // CPUID.(7, 1)
  uint64_t xcr0 = 0;      // XGETBV(0); 0 when CPUID.1:ECX.OSXSAVE is clear (XGETBV would fault)
};

// This CPU's values.
CpuidSnapshot read_host_cpuid();

// The features the CPU has (its CPUID bit, in a leaf it reports) whose registers the OS saves and restores (XCR0),
// and whose prerequisite features are there too.
CpuFeatureSet decode_cpu_features(const CpuidSnapshot& s);

// `features` less those HCQ_CPU_FEATURES's text masks off ("-amx_tile,-avx512_bf16": a comma-separated list of
// "-name"), and less what depends on them (masking avx512f masks every AVX-512 feature). Throws InvalidArgument
// naming the variable, the entry and the known names for an entry that is not "-" and a known name.
CpuFeatureSet apply_cpu_feature_mask(CpuFeatureSet features, std::string_view mask);

// Asks Linux for permission to use AMX tile data (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), once per
// process: later calls return the first answer. 0 when granted, else the errno. Thread-safe.
int request_amx_permission();

// The report from a snapshot: decode, then the mask (std::nullopt: none), then, while AMX remains, the permission
// (`request_amx`, returning 0 or an errno): refused, the AMX features are dropped and the note says why.
CpuIsa resolve_cpu_isa(const CpuidSnapshot& s, const std::optional<std::string>& mask,
                       const std::function<int()>& request_amx);

// This host's report: read_host_cpuid, knobs::cpu_features (HCQ_CPU_FEATURES), request_amx_permission.
CpuIsa host_cpu_isa();

}  // namespace hcq::cpu
