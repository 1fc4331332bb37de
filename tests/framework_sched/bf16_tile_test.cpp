// bf16 tiles on the CPU device (render_c.cpp, choose_bf16_tile): which kernels take them, with which micro-kernel
// of the device's bf16 path (rendered directly, asserted exactly), and that a bf16 matmul computes what a double loop
// over the same bf16 values does, rounded once to bf16, on every path this CPU can run: each one through a CPU device
// opened with HCQ_CPU_FEATURES masking the better ones off (amx, then avx512_bf16, avx512, avx2).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/realize.hpp"
#include "framework_sched/render_inputs.hpp"
#include "hcq/cpu_features.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {
namespace {

// bf16 operands widened to float32, the sum rounded to bf16 (render_inputs.hpp).
Node bf16_matmul_kernel(int64_t M, int64_t K, int64_t N) {
  return matmul_kernel(M, K, N, false, false, DType::bfloat16);
}

TargetFacts cpu_facts(unsigned workers, Bf16MatmulPath path) { return avx512_cpu_facts(workers, true, path); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(CpuBf16Tile, ShapeOptsAndMicroKernelFollowTheDevice) {
  // 64 x 96 x 128: AMX takes 32 rows by 64 columns (two 32 x 32 blocks); K a multiple of 32 and A a plain load: A
  // read in place.
  const RenderedKernel amx = render_c(bf16_matmul_kernel(64, 96, 128), cpu_facts(1, Bf16MatmulPath::amx));
  EXPECT_EQ(amx.name, "r_64_128_96_up32x64");
  EXPECT_EQ(amx.opts, "UPCAST(0,32) UPCAST(1,64) TC(amx)");
  EXPECT_TRUE(contains(amx.source, "hcq_amx_begin();")) << amx.source;
  EXPECT_TRUE(contains(amx.source, "hcq_amx_end();")) << amx.source;
  EXPECT_TRUE(contains(amx.source, "hcq_bf16_mm32_amx(")) << amx.source;
  EXPECT_FALSE(contains(amx.source, "uint16_t pa")) << amx.source;
  // 48 rows: 16-row steps of 16 x 16 blocks.
  const RenderedKernel amx16 = render_c(bf16_matmul_kernel(48, 96, 128), cpu_facts(1, Bf16MatmulPath::amx));
  EXPECT_EQ(amx16.opts, "UPCAST(0,16) UPCAST(1,64) TC(amx)");
  EXPECT_TRUE(contains(amx16.source, "hcq_bf16_mm16_amx(")) << amx16.source;

  // The same kernel on the other paths: 16-row steps, their micro-kernel, no tile configuration.
  for (Bf16MatmulPath p : {Bf16MatmulPath::avx512_bf16, Bf16MatmulPath::avx512, Bf16MatmulPath::avx2}) {
    const RenderedKernel rk = render_c(bf16_matmul_kernel(64, 96, 128), cpu_facts(1, p));
    const std::string name(to_string(p));
    EXPECT_EQ(rk.opts, "UPCAST(0,16) UPCAST(1,64) TC(" + name + ")");
    EXPECT_TRUE(contains(rk.source, "hcq_bf16_mm16_" + name + "(")) << rk.source;
    EXPECT_FALSE(contains(rk.source, "hcq_amx_begin")) << rk.source;
  }

  // K = 50: A packed per row step, both operands zero-padded to 64 in k; 80 columns: blocks of 16.
  const RenderedKernel padded = render_c(bf16_matmul_kernel(32, 50, 80), cpu_facts(1, Bf16MatmulPath::amx));
  EXPECT_EQ(padded.opts, "UPCAST(0,16) UPCAST(1,16) TC(amx)");
  EXPECT_TRUE(contains(padded.source, "uint16_t pa")) << padded.source;
  EXPECT_TRUE(contains(padded.source, "for (int64_t tk = 50; tk < 64; ++tk)")) << padded.source;

  // Enough work for two workers: they split the column blocks (each packs only its own panels).
  EXPECT_EQ(render_c(bf16_matmul_kernel(256, 256, 256), cpu_facts(2, Bf16MatmulPath::amx)).opts,
            "THREAD(1,2) UPCAST(0,32) UPCAST(1,64) TC(amx)");

  // Not taken: 24 rows (no whole 16-row step), and a CPU whose bf16 path is scalar; float32 tiles instead.
  EXPECT_FALSE(contains(render_c(bf16_matmul_kernel(24, 96, 128), cpu_facts(1, Bf16MatmulPath::amx)).opts, "TC("));
  EXPECT_EQ(render_c(bf16_matmul_kernel(64, 96, 128), cpu_facts(1, Bf16MatmulPath::scalar)).opts,
            "UPCAST(0,4) UPCAST(1,64) PACK(1)");
}

float bf16_round_trip(float f) {  // truncation: any bf16 value will do as an input
  uint32_t w;
  std::memcpy(&w, &f, sizeof w);
  w &= 0xffff0000u;
  std::memcpy(&f, &w, sizeof f);
  return f;
}

double round_to_bf16(double v) {  // round to nearest even, as the kernels store
  const auto f = static_cast<float>(v);
  uint32_t w;
  std::memcpy(&w, &f, sizeof w);
  w = (w + 0x7fffu + ((w >> 16) & 1u)) & 0xffff0000u;
  float r;
  std::memcpy(&r, &w, sizeof r);
  return r;
}

std::vector<float> bf16_values(size_t n, unsigned salt) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) {
    const auto x = static_cast<float>((k * 7919 + salt * 104729) % 2003) / 1001.0f - 1.0f;
    v[k] = bf16_round_trip(x * 1.37f);
  }
  return v;
}

// The bf16 paths, each on a CPU device of its own, opened with the better paths masked off.
struct PathCase {
  Bf16MatmulPath path;
  const char* mask;    // HCQ_CPU_FEATURES
  const char* device;  // a CPU device no other test opens, so that the mask is read at its open
};

class CpuBf16TileValues : public ::testing::TestWithParam<PathCase> {
 protected:
  void SetUp() override {
    const PathCase& c = GetParam();
    ::setenv("HCQ_CPU_FEATURES", c.mask, 1);
    Device& dev = open_device(c.device);
    ::unsetenv("HCQ_CPU_FEATURES");
    const CpuIsa isa = dev.info().cpu_isa.value_or(CpuIsa{});
    if (isa.bf16_matmul != c.path)
      GTEST_SKIP() << c.device << " with HCQ_CPU_FEATURES=" << c.mask << " uses the " << to_string(isa.bf16_matmul)
                   << " path, not " << to_string(c.path) << " (features: " << isa.features.names() << ")";
    clear_schedule_cache();
    set_render_hook([this](RenderedKernel& rk) {
      if (contains(rk.opts, "TC(")) tc_opts_.push_back(rk.opts);
    });
  }
  void TearDown() override {
    set_render_hook({});
    clear_schedule_cache();
  }

  // relu(bf16(a @ b) + bias) for a [batch, M, K] and b [K, N] (given as [N, K] and transposed when `b_transposed`),
  // the operands realized as bf16 first when `realized` (plain loads: A read in place), else cast in the product's
  // kernel; against a double loop over the same bf16 values, rounded once to bf16.
  void check(int64_t batch, int64_t M, int64_t K, int64_t N, bool b_transposed, bool realized) {
    const std::string dev = GetParam().device;
    const std::vector<float> av = bf16_values(batch * M * K, 1), bv = bf16_values(K * N, 2), cv = bf16_values(N, 3);
    Tensor a = Tensor(av, {batch, M, K}, dev).cast(DType::bfloat16);
    Tensor b = b_transposed ? Tensor(bv, {N, K}, dev).cast(DType::bfloat16).transpose()
                            : Tensor(bv, {K, N}, dev).cast(DType::bfloat16);
    if (realized) {
      a.realize();
      b.realize();
    }
    const Tensor bias(cv, {N}, dev);
    const std::vector<float> got = (a.matmul(b).cast(DType::float32) + bias).relu().data<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(batch * M * N));
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double sum = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            const double p = double(av[static_cast<size_t>((s * M + i) * K + k)]) *
                             bv[static_cast<size_t>(b_transposed ? j * K + k : k * N + j)];
            sum += p;
            mag += std::fabs(p);
          }
          // One bf16 rounding of the float32 sum (whose order the path chooses): within a bf16 ulp of the double
          // sum rounded, plus float32's accumulation error.
          const double rounded = round_to_bf16(sum);
          const double want = std::max(rounded + cv[static_cast<size_t>(j)], 0.0);
          const double tol = std::ldexp(std::fabs(rounded), -8) + 4.0 * K * std::ldexp(mag, -24) + 1e-6;
          ASSERT_NEAR(got[static_cast<size_t>((s * M + i) * N + j)], want, tol)
              << to_string(GetParam().path) << ": batch " << s << ", row " << i << ", column " << j;
        }
  }

  // The opts a 64-column block gets: 32-row steps on AMX (hcq_bf16_mm32_amx), 16 on the other paths.
  static std::string rows() { return GetParam().path == Bf16MatmulPath::amx ? "32" : "16"; }
  static std::string tc() { return "TC(" + std::string(to_string(GetParam().path)) + ")"; }

  std::vector<std::string> tc_opts_;
};

TEST_P(CpuBf16TileValues, OperandsReadInPlaceAndPacked) {
  check(1, 64, 96, 128, false, true);   // A in place
  check(1, 64, 96, 128, false, false);  // both cast inside the kernel: packed
  ASSERT_EQ(tc_opts_.size(), 2u);
  for (const std::string& o : tc_opts_) EXPECT_EQ(o, "UPCAST(0," + rows() + ") UPCAST(1,64) " + tc());
}

TEST_P(CpuBf16TileValues, PaddedReduceTransposedRightOperandAndBatch) {
  check(1, 32, 50, 80, false, true);  // K padded to 64 with zeros, 16-column blocks (16 x 16 on every path)
  check(1, 48, 72, 32, true, true);   // B read across its rows
  check(3, 16, 64, 32, false, true);  // a batch axis outside the tile
  EXPECT_EQ(tc_opts_.size(), 3u);
}

TEST_P(CpuBf16TileValues, TwoWorkersSplitTheColumns) {
  check(1, 128, 256, 256, false, true);
  ASSERT_EQ(tc_opts_.size(), 1u);
  if (open_device(GetParam().device).info().compute_units < 2) GTEST_SKIP() << "one worker: " << tc_opts_[0];
  EXPECT_EQ(tc_opts_[0], "THREAD(1,2) UPCAST(0," + rows() + ") UPCAST(1,64) " + tc());
}

INSTANTIATE_TEST_SUITE_P(Paths, CpuBf16TileValues,
                         ::testing::Values(PathCase{Bf16MatmulPath::amx, "", "CPU:20"},
                                           PathCase{Bf16MatmulPath::avx512_bf16, "-amx_tile", "CPU:21"},
                                           PathCase{Bf16MatmulPath::avx512, "-amx_tile,-avx512_bf16", "CPU:22"},
                                           PathCase{Bf16MatmulPath::avx2, "-avx512f,-amx_tile", "CPU:23"}),
                         [](const auto& info) { return std::string(to_string(info.param.path)); });

}  // namespace
}  // namespace hcq::fw
