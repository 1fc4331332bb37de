// The kernel ABI's bf16 matmul micro-kernels (include/hcq/kernel_abi.h): each path compiled by the CPU device's own
// compiler and run on the device, on random bf16 inputs, against a double loop over the same bf16 values. A path
// whose features the device does not report (absent, or masked by HCQ_CPU_FEATURES) is skipped, saying so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"
#include "hcq/cpu_features.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"

namespace hcq {
namespace {

// One kernel per path: packs B (k x 16, row stride 16) into bp, then C[16 x 16] (row stride ldc) += A (16 x k, row
// stride lda) . B. The AMX kernel configures and releases the tiles around its call.
constexpr const char* kSource = R"(
#define MM_KERNEL(path, begin, end)                                                                \
  HCQ_KERNEL(mm_##path, 4, 4) {                                                                    \
    float *c = HCQ_BUF(float, 0);                                                                  \
    const uint16_t *a = HCQ_BUF(const uint16_t, 1), *b = HCQ_BUF(const uint16_t, 2);               \
    uint16_t *bp = HCQ_BUF(uint16_t, 3);                                                           \
    const uint32_t k = HCQ_VAL(0), ldc = HCQ_VAL(1), lda = HCQ_VAL(2), ldbp = HCQ_VAL(3);          \
    hcq_bf16_pack_vnni(bp, ldbp, b, 16, k, 16);                                                    \
    begin;                                                                                         \
    hcq_bf16_mm16_##path(c, ldc, a, lda, bp, ldbp, k);                                             \
    end;                                                                                           \
  }
MM_KERNEL(amx, hcq_amx_begin(), hcq_amx_end())
MM_KERNEL(avx512_bf16, (void)0, (void)0)
MM_KERNEL(avx512, (void)0, (void)0)
MM_KERNEL(avx2, (void)0, (void)0)
MM_KERNEL(scalar, (void)0, (void)0)
)";

double bf16_value(uint16_t h) {
  const uint32_t w = uint32_t{h} << 16;
  float f;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

class CpuBf16MicroKernel : public ::testing::TestWithParam<Bf16MatmulPath> {};

TEST_P(CpuBf16MicroKernel, MatchesADoubleLoop) {
  const Bf16MatmulPath path = GetParam();
  Device& dev = open_device("CPU");
  const std::optional<CpuIsa> isa = dev.info().cpu_isa;
  ASSERT_TRUE(isa.has_value());
  if (!bf16_matmul_path_usable(isa->features, path))
    GTEST_SKIP() << "the " << to_string(path)
                 << " path needs features this CPU device does not report (it has: " << isa->features.names()
                 << (isa->note.empty() ? "" : "; ") << isa->note << ")";

  static const std::vector<uint8_t> obj = dev.compiler().compile(kSource);
  auto program = dev.load_program("mm_" + std::string(to_string(path)), obj);
  std::mt19937 rng(1234 + static_cast<unsigned>(path));
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  auto bf16 = [&] {
    const float f = dist(rng);
    uint32_t w;
    std::memcpy(&w, &f, sizeof w);
    return static_cast<uint16_t>(w >> 16);  // any bf16 will do: truncation keeps it exact
  };

  // k: one 32-deep step, an odd number of steps (AMX's second accumulator has no partner for the last), K = 1024.
  for (const uint32_t k : {32u, 96u, 1024u}) {
    const uint32_t ldc = 20, lda = k + 8, ldbp = 40;  // strides wider than the block, to catch a stride mix-up
    BufferSpec spec;
    spec.cpu_access = true;
    const Allocation c = dev.alloc_memory(16 * ldc * 4, spec), a = dev.alloc_memory(16 * lda * 2, spec),
                     b = dev.alloc_memory(k * 16 * 2, spec), bp = dev.alloc_memory(k / 2 * ldbp * 2, spec);
    auto* cf = static_cast<float*>(c.host_ptr());
    auto* ah = static_cast<uint16_t*>(a.host_ptr());
    auto* bh = static_cast<uint16_t*>(b.host_ptr());
    for (uint32_t i = 0; i < 16 * ldc; ++i) cf[i] = dist(rng);
    for (uint32_t i = 0; i < 16 * lda; ++i) ah[i] = bf16();
    for (uint32_t i = 0; i < k * 16; ++i) bh[i] = bf16();
    std::vector<double> want(16 * 16), scale(16 * 16);
    for (int i = 0; i < 16; ++i)
      for (int j = 0; j < 16; ++j) {
        double s = cf[i * ldc + j], mag = std::fabs(s);
        for (uint32_t kk = 0; kk < k; ++kk) {
          const double p = bf16_value(ah[i * lda + kk]) * bf16_value(bh[kk * 16 + j]);
          s += p;
          mag += std::fabs(p);
        }
        want[i * 16 + j] = s;
        scale[i * 16 + j] = mag;
      }
    const std::vector<float> c_before(cf, cf + 16 * ldc);

    auto q = dev.compute_queue();  // a queue is submitted once
    dev.submit(*q,
               [&](HWQueue& h) {
                 h.exec(
                     *program,
                     LaunchArgs{{Sym(c.va), Sym(a.va), Sym(b.va), Sym(bp.va)}, {Sym(k), Sym(ldc), Sym(lda), Sym(ldbp)}},
                     Dims{1u, 1u, 1u}, Dims{1u, 1u, 1u});
               })
        .wait();

    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) {
        // fp32 accumulation of k products: a rounding per sum, well inside k * 2^-24 of the magnitudes' sum.
        const double tol = 4.0 * k * std::ldexp(1.0, -24) * scale[i * 16 + j];
        ASSERT_NEAR(cf[i * ldc + j], want[i * 16 + j], tol)
            << to_string(path) << " k=" << k << " C[" << i << "][" << j << "]";
      }
      for (uint32_t j = 16; j < ldc; ++j)  // the padding between C's rows is not written
        ASSERT_EQ(cf[i * ldc + j], c_before[i * ldc + j]) << "k=" << k << " row " << i << " padding " << j;
    }
    for (const Allocation& x : {c, a, b, bp}) dev.free_memory(x);
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, CpuBf16MicroKernel,
                         ::testing::Values(Bf16MatmulPath::amx, Bf16MatmulPath::avx512_bf16, Bf16MatmulPath::avx512,
                                           Bf16MatmulPath::avx2, Bf16MatmulPath::scalar),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace hcq
