// GPU tiles (issue 19: local tiles, operands staged through shared memory): a product's kernel on a GPU is a thread
// kernel whose workgroup computes a block of outputs from A and B panels in shared memory, two barriers a step. The
// rendering against a hand-made AMD GPU's facts runs everywhere; the products on the GPU HCQ_DEVICE names
// (gpu_under_test.hpp) run on the simulators, whose thread runner fills shared memory with 0xff bytes and resumes
// threads in a shuffled order, so a missing barrier or a panel element left unwritten gives NaN or a wrong sum.
// Expected values are double loops over the same host data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/beam.hpp"
#include "framework/engine/realize.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "framework_sched/render_inputs.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {
namespace {

// A GPU as a simulated one reports itself (interface, arch, wave, shared memory, compute units, matrix unit).
TargetFacts gpu_facts(const std::string& interface, const std::string& arch, uint32_t wave, uint32_t shared,
                      uint32_t units, MatrixUnit unit, bool optimize = true) {
  DeviceInfo info;
  info.name = "hand-made";
  info.interface = interface;
  info.arch = arch;
  info.wave_size = wave;
  info.shared_memory_bytes = shared;
  info.compute_units = units;
  info.matrix_unit = unit;
  return target_facts(info, 1, optimize);
}
// gfx1100 without its matrix unit: 32-wide waves (128 threads a workgroup), 64 KiB of LDS.
TargetFacts wave32_gpu_facts(bool optimize = true) {
  return gpu_facts("sim-kfd", "gfx1100", 32, 65536, 48, MatrixUnit::none, optimize);
}
// gfx1100 with it, and an NVIDIA GPU as the simulated Hopper reports itself (32-wide warps).
TargetFacts wmma_gpu_facts() { return gpu_facts("sim-kfd", "gfx1100", 32, 65536, 48, MatrixUnit::wmma_gfx11); }
TargetFacts mma_gpu_facts() { return gpu_facts("sim-rm", "sm_90", 32, 227 * 1024, 132, MatrixUnit::mma_sm80); }

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(FrameworkGpuTile, AProductRendersAsAThreadKernelOverSharedPanels) {
  const RenderedKernel rk = render_c(matmul_kernel(128, 64, 128), wave32_gpu_facts());
  // 8 x 16 threads, 4 x 4 sums each: 32 x 64 outputs a workgroup, 4 x 2 workgroups.
  EXPECT_EQ(rk.opts, "LOCAL(0,8) LOCAL(1,16) UPCAST(0,4) UPCAST(1,4) SMEM(16)");
  EXPECT_EQ(rk.local[0] * rk.local[1] * rk.local[2], 128u);
  EXPECT_EQ(rk.global[0], 8u);
  EXPECT_EQ(rk.name, "r_128_128_64");  // the name stays the shape's
  EXPECT_NE(rk.source.find("HCQ_THREAD_KERNEL(r_128_128_64, 3, 0)"), std::string::npos) << rk.source;
  EXPECT_NE(rk.source.find("HCQ_SHARED(float, tsa, 512);"), std::string::npos) << rk.source;
  EXPECT_NE(rk.source.find("HCQ_SHARED(float, tsb, 1024);"), std::string::npos) << rk.source;
  EXPECT_EQ(count(rk.source, "HCQ_BARRIER();"), 2u) << rk.source;
}

TEST(FrameworkGpuTile, SmallProductsAndUnoptimisedKernelsKeepOneThreadPerOutput) {
  for (const RenderedKernel& rk : {render_c(matmul_kernel(16, 64, 16), wave32_gpu_facts()),    // 256 outputs
                                   render_c(matmul_kernel(128, 16, 128), wave32_gpu_facts()),  // one step of K
                                   render_c(matmul_kernel(128, 64, 128), wave32_gpu_facts(false))}) {
    EXPECT_EQ(rk.source.find("SMEM"), std::string::npos) << rk.name << " " << rk.opts;
    EXPECT_EQ(rk.source.find("HCQ_BARRIER"), std::string::npos) << rk.source;
  }
}

// Half-type products on a GPU with a matrix unit: the panels hold 16-bit words, each wave makes two 16 x 16 x 16
// products per 16 k through the kernel ABI's macro for the unit and type, and reads its sums in that unit's layout.
TEST(FrameworkGpuTile, HalfProductsUseTheMatrixUnit) {
  const RenderedKernel f16 = render_c(matmul_kernel(128, 64, 128, false, false, DType::float16), wmma_gpu_facts());
  // 4 waves: 2 down the rows, 2 across 64 columns, each a 16 x 32 strip: 32 x 64 outputs a workgroup.
  EXPECT_EQ(f16.opts, "TC(wmma_gfx11) LOCAL(0,2) LOCAL(1,2) UPCAST(1,2) SMEM(32)");
  EXPECT_EQ(f16.global[0], 8u);
  EXPECT_EQ(f16.local[0], 128u);
  EXPECT_EQ(count(f16.source, "HCQ_MMA16_WMMA_GFX11_F16(tacc["), 2u) << f16.source;
  EXPECT_EQ(count(f16.source, "HCQ_MMA16_WMMA_GFX11_ROW(lane, tv)"), 1u) << f16.source;
  EXPECT_NE(f16.source.find("HCQ_SHARED(uint16_t, tsa, 1280);"), std::string::npos) << f16.source;  // 32 rows x 40
  EXPECT_NE(f16.source.find("HCQ_SHARED(uint16_t, tsb, 2560);"), std::string::npos) << f16.source;  // 64 columns x 40
  EXPECT_EQ(count(f16.source, "HCQ_BARRIER();"), 2u) << f16.source;
  const RenderedKernel bf16 = render_c(matmul_kernel(128, 64, 128, false, false, DType::bfloat16), mma_gpu_facts());
  EXPECT_EQ(bf16.opts, "TC(mma_sm80) LOCAL(0,2) LOCAL(1,2) UPCAST(1,2) SMEM(32)");
  EXPECT_EQ(count(bf16.source, "HCQ_MMA16_MMA_SM80_BF16(tacc["), 2u) << bf16.source;
  // gfx942's MFMA: 64-wide waves (256 threads, still 2 x 2 waves of 16 x 32 strips), 4 sums per lane and product.
  const RenderedKernel mfma = render_c(matmul_kernel(128, 64, 128, false, false, DType::float16),
                                       gpu_facts("sim-kfd", "gfx942", 64, 65536, 304, MatrixUnit::mfma_cdna3));
  EXPECT_EQ(mfma.opts, "TC(mfma_cdna3) LOCAL(0,2) LOCAL(1,2) UPCAST(1,2) SMEM(32)");
  EXPECT_EQ(mfma.local[0], 256u);
  EXPECT_NE(mfma.source.find("float tacc[2][4] = {0};"), std::string::npos) << mfma.source;
  EXPECT_NE(mfma.source.find("const int64_t lane = lx % 64, wm = lx / 128, wn = lx / 64 % 2;"), std::string::npos)
      << mfma.source;
  // float32 operands, or a GPU without a matrix unit: float panels.
  EXPECT_EQ(render_c(matmul_kernel(128, 64, 128), wmma_gpu_facts()).opts,
            "LOCAL(0,8) LOCAL(1,16) UPCAST(0,4) UPCAST(1,4) SMEM(16)");
  EXPECT_EQ(render_c(matmul_kernel(128, 64, 128, false, false, DType::float16), wave32_gpu_facts()).opts,
            "LOCAL(0,8) LOCAL(1,16) UPCAST(0,4) UPCAST(1,4) SMEM(16)");
}

// The search's choices on a GPU: a half-type product on the unit also renders with float panels (choice 1); other
// kernels have one rendering.
TEST(FrameworkGpuTile, AMatrixTileHasTheFloatPanelsAsItsAlternative) {
  const Node half = matmul_kernel(128, 64, 128, false, false, DType::float16);
  const std::string panels = "LOCAL(0,8) LOCAL(1,16) UPCAST(0,4) UPCAST(1,4) SMEM(16)";
  EXPECT_EQ(render_choices(half, wmma_gpu_facts()), 2u);
  EXPECT_EQ(render_c(half, wmma_gpu_facts(), 1).opts, panels);
  EXPECT_EQ(render_with_opts(half, wmma_gpu_facts(), panels).opts, panels);
  EXPECT_EQ(render_choices(matmul_kernel(128, 64, 128), wmma_gpu_facts()), 1u);
  EXPECT_EQ(render_choices(half, wave32_gpu_facts()), 1u);
}

// Opts as data: TC names the GPU's unit, and another unit is refused with the device's.
TEST(FrameworkGpuTile, TheMatrixOptNamesTheUnit) {
  const Node k = matmul_kernel(128, 64, 128, false, false, DType::float16);
  EXPECT_EQ(render_with_opts(k, wmma_gpu_facts(), "TC(wmma_gfx11) LOCAL(0,2) LOCAL(1,2) UPCAST(1,2) SMEM(32)").opts,
            "TC(wmma_gfx11) LOCAL(0,2) LOCAL(1,2) UPCAST(1,2) SMEM(32)");
  try {
    render_with_opts(k, wmma_gpu_facts(), "TC(mma_sm80)");
    FAIL() << "another GPU's unit was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              "opts \"TC(mma_sm80)\" for r_128_128_64: TC(mma_sm80) does not apply: the device's matrix unit is "
              "wmma_gfx11");
  }
  try {
    render_with_opts(k, wave32_gpu_facts(), "TC(wmma_gfx11)");
    FAIL() << "a GPU without a matrix unit took TC";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              "opts \"TC(wmma_gfx11)\" for r_128_128_64: TC(wmma_gfx11) does not apply: the device has no matrix "
              "unit the code generator uses");
  }
}

// The opts of the kernels the next realizes render, kept while it lives.
class RenderedOpts {
 public:
  RenderedOpts() {
    clear_schedule_cache();
    set_render_hook([this](RenderedKernel& k) { opts_.push_back(k.opts); });
  }
  ~RenderedOpts() {
    set_render_hook({});
    clear_schedule_cache();
  }
  size_t tiled() const {
    size_t n = 0;
    for (const std::string& o : opts_) n += o.find("SMEM(16)") != std::string::npos;
    return n;
  }
  size_t matrix_tiled() const {
    size_t n = 0;
    for (const std::string& o : opts_) n += o.rfind("TC(", 0) == 0 && o.find("SMEM(32)") != std::string::npos;
    return n;
  }

 private:
  std::vector<std::string> opts_;
};

std::vector<float> wavy(size_t n, double phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + phase) * 2.0);
  return v;
}

// batch x (M x K) by batch x (K x N), against a double loop; relu(product + bias) when `epilogue`.
void check_product(const std::string& gpu, int64_t batch, int64_t M, int64_t K, int64_t N, bool epilogue) {
  const std::vector<float> av = wavy(static_cast<size_t>(batch * M * K), 0.1),
                           bv = wavy(static_cast<size_t>(batch * K * N), 0.7), cv = wavy(static_cast<size_t>(N), 1.3);
  const Tensor a(av, {batch, M, K}, gpu), b(bv, {batch, K, N}, gpu), bias(cv, {N}, gpu);
  RenderedOpts seen;
  Tensor out = a.matmul(b);
  if (epilogue) out = (out + bias).relu();
  const std::vector<float> got = out.data<float>();
  EXPECT_EQ(seen.tiled(), 1u) << batch << "x" << M << "x" << K << "x" << N;
  ASSERT_EQ(got.size(), static_cast<size_t>(batch * M * N));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k)
          s += static_cast<double>(av[static_cast<size_t>((p * M + i) * K + k)]) *
               bv[static_cast<size_t>((p * K + k) * N + j)];
        if (epilogue) s = std::max(s + cv[static_cast<size_t>(j)], 0.0);
        const size_t at = static_cast<size_t>((p * M + i) * N + j);
        ASSERT_NEAR(got[at], s, 1e-4 * (1 + std::abs(s))) << "element " << p << "," << i << "," << j;
      }
}

TEST(FrameworkGpuTile, ProductsEqualTheDoubleLoop) {
  FW_REQUIRE_GPU(gpu);
  check_product(gpu, 1, 64, 64, 64, false);     // whole blocks and steps
  check_product(gpu, 1, 100, 45, 70, false);    // ragged rows, columns and the last step
  check_product(gpu, 2, 70, 40, 66, true);      // a batch, and a bias and ReLU after the sum
  check_product(gpu, 1, 128, 784, 128, false);  // the MLP's first layer
}

// The value a float16 or bfloat16 holds nearest to v (round to nearest even), and the type's relative half-ulp.
double round_half(double v, DType t) {
  if (v == 0) return 0;
  const int bits = t == DType::bfloat16 ? 8 : 11;  // significand bits, the hidden one included
  int e = 0;
  std::frexp(v, &e);
  const double q = std::ldexp(1.0, e - bits);
  return std::nearbyint(v / q) * q;
}

// half(a @ b) for half a [batch, M, K] and b [batch, K, N] (cast inside the product's kernel, or realized first:
// plain loads), then relu(+ bias) in float32 when `epilogue`; against a double loop over the same half values, the
// sum rounded once to the half type.
void check_half_product(const std::string& gpu, DType t, int64_t batch, int64_t M, int64_t K, int64_t N, bool epilogue,
                        bool realized, bool searched = false) {
  std::vector<float> av = wavy(static_cast<size_t>(batch * M * K), 0.1),
                     bv = wavy(static_cast<size_t>(batch * K * N), 0.7);
  for (float& v : av) v = static_cast<float>(round_half(v, t));
  for (float& v : bv) v = static_cast<float>(round_half(v, t));
  const std::vector<float> cv = wavy(static_cast<size_t>(N), 1.3);
  Tensor a = Tensor(av, {batch, M, K}, gpu).cast(t), b = Tensor(bv, {batch, K, N}, gpu).cast(t);
  if (realized) {
    a.realize();
    b.realize();
  }
  const Tensor bias(cv, {N}, gpu);
  RenderedOpts seen;
  Tensor out = a.matmul(b).cast(DType::float32);
  if (epilogue) out = (out + bias).relu();
  const std::vector<float> got = out.data<float>();
  if (!searched) {  // a search may pick the float panels
    EXPECT_EQ(seen.matrix_tiled(), 1u) << batch << "x" << M << "x" << K << "x" << N;
  }
  ASSERT_EQ(got.size(), static_cast<size_t>(batch * M * N));
  for (int64_t p = 0; p < batch; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double x = static_cast<double>(av[static_cast<size_t>((p * M + i) * K + k)]) *
                           bv[static_cast<size_t>((p * K + k) * N + j)];
          s += x;
          mag += std::abs(x);
        }
        // One rounding of the float32 sum to the half type: within its half-ulp of the double sum, plus float32's
        // accumulation error (the unit sums in its own order).
        const double rounded = round_half(s, t);
        const double ulp = std::ldexp(std::abs(rounded), t == DType::bfloat16 ? -8 : -11);
        double want = rounded;
        if (epilogue) want = std::max(want + cv[static_cast<size_t>(j)], 0.0);
        const size_t at = static_cast<size_t>((p * M + i) * N + j);
        ASSERT_NEAR(got[at], want, ulp + 4.0 * static_cast<double>(K) * std::ldexp(mag, -24) + 1e-6)
            << "element " << p << "," << i << "," << j;
      }
}

// On a GPU with a matrix unit (the simulated gfx1100 and Hopper), float16 and bfloat16 products through it.
TEST(FrameworkGpuTile, HalfProductsOnTheMatrixUnitEqualTheDoubleLoop) {
  FW_REQUIRE_GPU(gpu);
  if (open_device(gpu).info().matrix_unit == MatrixUnit::none) GTEST_SKIP() << gpu << " has no matrix unit";
  for (DType t : {DType::float16, DType::bfloat16}) {
    check_half_product(gpu, t, 1, 64, 64, 64, false, true);     // whole blocks and steps, plain loads
    check_half_product(gpu, t, 1, 100, 45, 70, false, false);   // ragged rows, columns and the last step; casts
    check_half_product(gpu, t, 2, 70, 40, 66, true, true);      // a batch, and a bias and ReLU after
    check_half_product(gpu, t, 1, 128, 784, 128, false, true);  // the MLP's first layer's shape
  }
}

// HCQ_BEAM on a GPU with a matrix unit: the half product's search times the unit and the float panels on the device,
// keeps the winner under its own cache directory, and a new schedule of the product reuses it without timing.
TEST(FrameworkGpuTile, TheSearchTimesTheMatrixUnitAgainstTheFloatPanels) {
  FW_REQUIRE_GPU(gpu);
  if (open_device(gpu).info().matrix_unit == MatrixUnit::none) GTEST_SKIP() << gpu << " has no matrix unit";
  if (knobs::assert_compile())
    GTEST_SKIP() << "the search compiles its candidates in a cache directory of its own, which HCQ_ASSERT_COMPILE=1 "
                    "forbids";
  // HCQ_BEAM=2 and a cache directory of its own for the test's length, whatever ends it.
  struct SearchScope {
    std::string saved = std::getenv("HCQ_CACHE_DIR") ? std::getenv("HCQ_CACHE_DIR") : "";
    std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("hcq-gpu-beam-test-" + std::to_string(::getpid()));
    SearchScope() {
      std::filesystem::remove_all(dir);
      ::setenv("HCQ_CACHE_DIR", dir.c_str(), 1);
      ::setenv("HCQ_BEAM", "2", 1);
      clear_schedule_cache();
    }
    ~SearchScope() {
      ::unsetenv("HCQ_BEAM");
      if (saved.empty()) ::unsetenv("HCQ_CACHE_DIR");
      else ::setenv("HCQ_CACHE_DIR", saved.c_str(), 1);
      clear_schedule_cache();
      std::filesystem::remove_all(dir);
    }
  } scope;
  const BeamStats before = beam_stats();
  check_half_product(gpu, DType::float16, 1, 64, 64, 64, false, false, true);
  const BeamStats searched = beam_stats();
  const auto stored = std::distance(std::filesystem::directory_iterator(scope.dir / "beam"), {});
  clear_schedule_cache();
  check_half_product(gpu, DType::float16, 1, 64, 64, 64, false, false, true);
  const BeamStats reused = beam_stats();
  EXPECT_EQ(searched.searches - before.searches, 1u);  // the product; the casts are in its kernel
  EXPECT_EQ(searched.timed - before.timed, 2u);        // both renderings compute the same values
  EXPECT_EQ(searched.rejected - before.rejected, 0u);
  EXPECT_EQ(stored, 1);
  EXPECT_EQ(reused.searches, searched.searches);
  EXPECT_EQ(reused.cache_hits - searched.cache_hits, 1u);
}

}  // namespace
}  // namespace hcq::fw
