// The CPU device's instruction-set features (drivers/cpu/cpu_features.cpp): the CPUID/XCR0 decode on register values
// of known CPUs (expectations written by hand from what each CPU has), the HCQ_CPU_FEATURES mask and its errors, the
// AMX permission refused, and the device's report against /proc/cpuinfo, which the kernel fills by its own decode.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "../../drivers/cpu/cpu_device.hpp"
#include "../../drivers/cpu/cpu_features.hpp"
#include "../common/message_of.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"

namespace hcq::cpu {
namespace {

using F = CpuFeature;

CpuFeatureSet set_of(std::initializer_list<CpuFeature> fs) {
  CpuFeatureSet s;
  for (CpuFeature f : fs) s.add(f);
  return s;
}

// Recorded on the machine these tests were written on (2026-12-03; a Sapphire Rapids class Xeon with AMX, as
// /proc/cpuinfo lists it): CPUID.0:EAX, CPUID.1, CPUID.(7,0), CPUID.(7,1), XCR0.
CpuidSnapshot sapphire_rapids() {
  CpuidSnapshot s;
  s.max_leaf = 0x20;
  s.leaf1 = {0x000a0678, 0x00020800, 0xfffa3203, 0x1f8bfbff};
  s.leaf7_0 = {0x00000002, 0xf1bf27eb, 0x1b415fde, 0xbfd14410};
  s.leaf7_1 = {0x00001c30, 0, 0, 0};
  s.xcr0 = 0x602e7;  // x87 SSE AVX opmask ZMM_Hi256 Hi16_ZMM PKRU XTILECFG XTILEDATA
  return s;
}

// A Zen 4 (AVX-512 with BF16, no FP16, no AMX): not a recording; words written for such a CPU from its documented
// features (CPUID.(7,0):EBX avx2 bit 5, avx512f 16, bw 30, vl 31; CPUID.(7,1):EAX avx512_bf16 bit 5), with the
// neighbouring bits it also has set, so a decode reading the wrong bit would see them.
CpuidSnapshot zen4() {
  CpuidSnapshot s;
  s.max_leaf = 0x10;
  s.leaf1 = {0x00a60f12, 0x00200800, 0x7ed8320b, 0x178bfbff};
  s.leaf7_0 = {0x00000001, 0xf1bf97a9, 0x00405fce, 0x10000010};
  s.leaf7_1 = {0x00000020, 0, 0, 0};
  s.xcr0 = 0x2e7;
  return s;
}

// A Haswell (AVX2 and FMA; likewise written from its features, not recorded; leaf 7 has no subleaf 1: its CPUID.(7,1) reads here as all ones, which must be ignored).
CpuidSnapshot haswell() {
  CpuidSnapshot s;
  s.max_leaf = 0xd;
  s.leaf1 = {0x000306c3, 0x00100800, 0x7ffafbff, 0xbfebfbff};
  s.leaf7_0 = {0x00000000, 0x000027ab, 0, 0};
  s.leaf7_1 = {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff};
  s.xcr0 = 0x7;
  return s;
}

const CpuFeatureSet kAll = set_of({F::avx2, F::fma, F::avx512f, F::avx512bw, F::avx512vl, F::avx512_bf16,
                                   F::avx512_fp16, F::amx_tile, F::amx_bf16, F::amx_int8});

TEST(CpuFeatures, SapphireRapidsHasEveryFeature) {
  EXPECT_EQ(decode_cpu_features(sapphire_rapids()).names(), kAll.names());
  EXPECT_EQ(choose_bf16_matmul_path(decode_cpu_features(sapphire_rapids())), Bf16MatmulPath::amx);
}

TEST(CpuFeatures, Zen4HasAvx512Bf16ButNoFp16NorAmx) {
  const CpuFeatureSet f = decode_cpu_features(zen4());
  EXPECT_EQ(f.names(), "avx2 fma avx512f avx512bw avx512vl avx512_bf16");
  EXPECT_EQ(choose_bf16_matmul_path(f), Bf16MatmulPath::avx512_bf16);
}

TEST(CpuFeatures, HaswellHasAvx2AndFmaOnly) {
  const CpuFeatureSet f = decode_cpu_features(haswell());
  EXPECT_EQ(f.names(), "avx2 fma");
  EXPECT_EQ(choose_bf16_matmul_path(f), Bf16MatmulPath::avx2);
}

// The OS decides as much as the CPU: state components it did not enable in XCR0 make their features unusable.
TEST(CpuFeatures, StateTheOsDidNotEnableIsNotUsable) {
  CpuidSnapshot s = sapphire_rapids();
  s.xcr0 = 0x2e7;  // no AMX tile state
  EXPECT_EQ(decode_cpu_features(s).names(), "avx2 fma avx512f avx512bw avx512vl avx512_bf16 avx512_fp16");
  s.xcr0 = 0x7;  // no AVX-512 state either
  EXPECT_EQ(decode_cpu_features(s).names(), "avx2 fma");
  s = haswell();
  s.leaf1.ecx &= ~(1u << 27);  // no OSXSAVE: XCR0 cannot be read, whatever the snapshot says
  EXPECT_EQ(decode_cpu_features(s).names(), "none");
  EXPECT_EQ(choose_bf16_matmul_path(decode_cpu_features(s)), Bf16MatmulPath::scalar);
}

TEST(CpuFeatures, LeavesTheCpuDoesNotReportAreIgnored) {
  CpuidSnapshot s = sapphire_rapids();
  s.max_leaf = 5;  // leaf 7 is past the highest leaf: its words are garbage
  EXPECT_EQ(decode_cpu_features(s).names(), "fma");
  s = sapphire_rapids();
  s.leaf7_0.eax = 0;  // no subleaf 1
  EXPECT_EQ(decode_cpu_features(s).names(),
            "avx2 fma avx512f avx512bw avx512vl avx512_fp16 amx_tile amx_bf16 amx_int8");
}

// A feature whose prerequisite is missing is not usable (Linux's cpuid-deps: avx512_bf16 needs avx512vl).
TEST(CpuFeatures, PrerequisitesAreRequired) {
  CpuidSnapshot s = sapphire_rapids();
  s.leaf7_0.ebx &= ~(1u << 31);  // no avx512vl
  EXPECT_EQ(decode_cpu_features(s).names(), "avx2 fma avx512f avx512bw avx512_fp16 amx_tile amx_bf16 amx_int8");
  s.leaf7_0.edx &= ~(1u << 24);  // no amx_tile: amx_bf16 and amx_int8 go with it
  EXPECT_EQ(decode_cpu_features(s).names(), "avx2 fma avx512f avx512bw avx512_fp16");
}

TEST(CpuFeatures, MaskTurnsFeaturesAndTheirDependentsOff) {
  EXPECT_EQ(apply_cpu_feature_mask(kAll, "-avx512f").names(), "avx2 fma amx_tile amx_bf16 amx_int8");
  const CpuFeatureSet f = apply_cpu_feature_mask(kAll, "-amx_tile,-avx512_bf16");
  EXPECT_EQ(f.names(), "avx2 fma avx512f avx512bw avx512vl avx512_fp16");
  EXPECT_EQ(choose_bf16_matmul_path(f), Bf16MatmulPath::avx512);
  EXPECT_EQ(choose_bf16_matmul_path(apply_cpu_feature_mask(kAll, "-avx512f,-amx_bf16")), Bf16MatmulPath::avx2);
  EXPECT_EQ(choose_bf16_matmul_path(apply_cpu_feature_mask(kAll, "-avx2,-avx512f,-amx_tile")), Bf16MatmulPath::scalar);
  EXPECT_EQ(apply_cpu_feature_mask(kAll, ""), kAll);
}

TEST(CpuFeatures, MaskErrorsNameTheVariableAndTheKnownNames) {
  constexpr const char* kKnown =
      "(known: avx2, fma, avx512f, avx512bw, avx512vl, avx512_bf16, avx512_fp16, amx_tile, amx_bf16, amx_int8)";
  EXPECT_EQ(test::message_of<InvalidArgument>([] { apply_cpu_feature_mask(kAll, "-amx_tile,-amx_tiles"); }),
            std::string("HCQ_CPU_FEATURES=\"-amx_tile,-amx_tiles\": unknown CPU feature \"amx_tiles\" ") + kKnown);
  EXPECT_EQ(test::message_of<InvalidArgument>([] { apply_cpu_feature_mask(kAll, "amx_tile"); }),
            std::string("HCQ_CPU_FEATURES=\"amx_tile\": entry \"amx_tile\" is not -<feature>: the variable only "
                        "masks features off, as in -amx_tile,-avx512_bf16 ") +
                kKnown);
  EXPECT_EQ(test::message_of<InvalidArgument>([] { apply_cpu_feature_mask(kAll, "-fma,"); }),
            std::string("HCQ_CPU_FEATURES=\"-fma,\": entry \"\" is not -<feature>: the variable only masks features "
                        "off, as in -amx_tile,-avx512_bf16 ") +
                kKnown);
}

TEST(CpuFeatures, RefusedAmxPermissionLeavesTheDeviceUsableWithTheReason) {
  int asked = 0;
  const CpuIsa isa = resolve_cpu_isa(sapphire_rapids(), std::nullopt, [&] {
    ++asked;
    return EPERM;
  });
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(isa.features.names(), "avx2 fma avx512f avx512bw avx512vl avx512_bf16 avx512_fp16");
  EXPECT_EQ(isa.bf16_matmul, Bf16MatmulPath::avx512_bf16);
  EXPECT_EQ(isa.note,
            "amx_tile, amx_bf16, amx_int8: not usable, Linux refused the tile data permission (arch_prctl "
            "ARCH_REQ_XCOMP_PERM XFEATURE_XTILEDATA: Operation not permitted)");
}

// The permission is asked only when AMX is there and not masked off.
TEST(CpuFeatures, PermissionIsAskedOnlyForAmx) {
  int asked = 0;
  auto ask = [&] {
    ++asked;
    return 0;
  };
  CpuIsa isa = resolve_cpu_isa(haswell(), std::nullopt, ask);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(isa.note, "");
  isa = resolve_cpu_isa(sapphire_rapids(), std::string("-amx_tile"), ask);
  EXPECT_EQ(asked, 0);
  EXPECT_EQ(isa.bf16_matmul, Bf16MatmulPath::avx512_bf16);
  EXPECT_EQ(isa.note, "amx_tile, amx_bf16, amx_int8: masked off by HCQ_CPU_FEATURES");
  isa = resolve_cpu_isa(sapphire_rapids(), std::nullopt, ask);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(isa.features, kAll);
  EXPECT_EQ(isa.bf16_matmul, Bf16MatmulPath::amx);
}

// The kernel decodes the same words for /proc/cpuinfo's flags (and clears those whose state XCR0 lacks): the
// device's features are exactly the flags of the ten names (unless the AMX permission was refused: then the note
// says so).
TEST(CpuFeatures, HostFeaturesAgreeWithProcCpuinfo) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = " " + line.substr(line.find(':') + 1) + " ";
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "/proc/cpuinfo has no flags line";
  const std::optional<CpuIsa> isa = open_device("CPU").info().cpu_isa;
  ASSERT_TRUE(isa.has_value());
  if (!isa->note.empty()) GTEST_SKIP() << "the CPU device reports: " << isa->note;
  for (size_t i = 0; i < kCpuFeatureCount; ++i) {
    const std::string name(kCpuFeatureNames[i]);
    EXPECT_EQ(isa->features.has(static_cast<CpuFeature>(i)), flags.find(" " + name + " ") != std::string::npos) << name;
  }
  EXPECT_EQ(isa->bf16_matmul, choose_bf16_matmul_path(isa->features));
}

class ScopedCpuFeatures {
 public:
  explicit ScopedCpuFeatures(const char* value) {
    if (const char* old = std::getenv("HCQ_CPU_FEATURES")) old_ = old;
    ::setenv("HCQ_CPU_FEATURES", value, 1);
  }
  ~ScopedCpuFeatures() {
    if (old_) ::setenv("HCQ_CPU_FEATURES", old_->c_str(), 1);
    else ::unsetenv("HCQ_CPU_FEATURES");
  }

 private:
  std::optional<std::string> old_;
};

// A device opened under the mask reports the masked paths as not chosen; a bad mask fails the open with the error.
TEST(CpuFeatures, DeviceOpenedUnderTheMask) {
  {
    ScopedCpuFeatures mask("-amx_tile,-avx512_bf16");
    const DeviceInfo i = CpuDevice("CPU:masked").info();
    ASSERT_TRUE(i.cpu_isa.has_value());
    EXPECT_FALSE(i.cpu_isa->features.has(F::amx_tile));
    EXPECT_FALSE(i.cpu_isa->features.has(F::amx_bf16));
    EXPECT_FALSE(i.cpu_isa->features.has(F::avx512_bf16));
    EXPECT_NE(i.cpu_isa->bf16_matmul, Bf16MatmulPath::amx);
    EXPECT_NE(i.cpu_isa->bf16_matmul, Bf16MatmulPath::avx512_bf16);
  }
  ScopedCpuFeatures bad("-sse9");
  EXPECT_EQ(test::message_of<InvalidArgument>([] { CpuDevice dev("CPU:bad"); }),
            "HCQ_CPU_FEATURES=\"-sse9\": unknown CPU feature \"sse9\" (known: avx2, fma, avx512f, avx512bw, "
            "avx512vl, avx512_bf16, avx512_fp16, amx_tile, amx_bf16, amx_int8)");
}

}  // namespace
}  // namespace hcq::cpu
