// GPU tiles (issue 19: local tiles, operands staged through shared memory): a product's kernel on a GPU is a thread
// kernel whose workgroup computes a block of outputs from A and B panels in shared memory, two barriers a step. The
// rendering against a hand-made AMD GPU's facts runs everywhere; the products on the GPU HCQ_DEVICE names
// (gpu_under_test.hpp) run on the simulators, whose thread runner fills shared memory with 0xff bytes and resumes
// threads in a shuffled order, so a missing barrier or a panel element left unwritten gives NaN or a wrong sum.
// Expected values are double loops over the same host data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/realize.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "framework_sched/render_inputs.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {
namespace {

// An AMD GPU as the simulated gfx1100 reports itself: 32-wide waves (128 threads a workgroup), 64 KiB of LDS.
TargetFacts wave32_gpu_facts(bool optimize = true) {
  DeviceInfo info;
  info.name = "hand-made";
  info.interface = "sim-kfd";
  info.arch = "gfx1100";
  info.wave_size = 32;
  info.shared_memory_bytes = 65536;
  info.compute_units = 48;
  return target_facts(info, 1, optimize);
}

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

}  // namespace
}  // namespace hcq::fw
