// Reductions on a GPU (issue 15): grouped over a workgroup through shared memory and barriers when the outputs are
// few and the reduces long; split into two kernels when they are very long; a grid-stride loop over outputs beyond
// the device's workgroup limit; and a missing barrier that gives a wrong answer on the simulator instead of passing
// by luck. On the GPU HCQ_DEVICE names (gpu_under_test.hpp). Expected values are plain double (or exact integer)
// loops over the same host data.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/compile.hpp"
#include "framework/engine/realize.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "framework_sched/row_sum_kernel.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {
namespace {

// Deterministic data with no pattern a wrong order or a lost element could hide in.
std::vector<float> wavy(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)) * 3.0 + 0.25);
  return v;
}

// The sources of the kernels the next realizes render, kept while it lives.
class RenderedSources {
 public:
  RenderedSources() {
    clear_schedule_cache();
    set_render_hook([this](RenderedKernel& k) { sources_.push_back(k.source); });
  }
  ~RenderedSources() {
    set_render_hook({});
    clear_schedule_cache();
  }
  const std::vector<std::string>& sources() const { return sources_; }

 private:
  std::vector<std::string> sources_;
};

TEST(FrameworkGpuReduce, WholeSumIsOneGroupedKernel) {
  FW_REQUIRE_GPU(gpu);
  const std::vector<float> x = wavy(1000);
  double want = 0;
  for (float v : x) want += v;
  RenderedSources seen;
  Tensor t(x, {1000}, gpu);
  t.realize();
  const FrameworkCounters before = framework_counters();
  const double got = t.sum().item();
  EXPECT_EQ(framework_counters().kernels - before.kernels, 1u);
  ASSERT_EQ(seen.sources().size(), 1u);
  EXPECT_NE(seen.sources()[0].find("HCQ_THREAD_KERNEL(r_1000, 2, 0)"), std::string::npos) << seen.sources()[0];
  EXPECT_NE(seen.sources()[0].find("HCQ_BARRIER();"), std::string::npos) << seen.sources()[0];
  EXPECT_NEAR(got, want, 1e-3);
}

TEST(FrameworkGpuReduce, RowSumsAndColumnMaxima) {
  FW_REQUIRE_GPU(gpu);
  constexpr size_t rows = 300, cols = 517;
  const std::vector<float> x = wavy(rows * cols);
  Tensor t(x, {static_cast<int64_t>(rows), static_cast<int64_t>(cols)}, gpu);
  const std::vector<float> sums = t.sum(1).data<float>();
  const std::vector<float> maxima = t.max(0).data<float>();
  ASSERT_EQ(sums.size(), rows);
  ASSERT_EQ(maxima.size(), cols);
  for (size_t r = 0; r < rows; ++r) {
    double want = 0;
    for (size_t c = 0; c < cols; ++c) want += x[r * cols + c];
    EXPECT_NEAR(sums[r], want, 1e-3) << "row " << r;
  }
  for (size_t c = 0; c < cols; ++c) {
    float want = x[c];
    for (size_t r = 1; r < rows; ++r) want = std::max(want, x[r * cols + c]);
    EXPECT_EQ(maxima[c], want) << "column " << c;
  }
}

// 2^20 integers: a reduce of contiguous chunks into partials, then of the partials. Exact.
TEST(FrameworkGpuReduce, LargeSumSplitsIntoTwoKernels) {
  FW_REQUIRE_GPU(gpu);
  constexpr int32_t n = 1 << 20;
  std::vector<int32_t> x(n);
  int64_t want = 0;
  for (int32_t i = 0; i < n; ++i) want += x[static_cast<size_t>(i)] = i % 7 - 3;
  Tensor t(x, {n}, gpu);
  t.realize();
  const FrameworkCounters before = framework_counters();
  const double got = t.sum().item();
  EXPECT_EQ(framework_counters().kernels - before.kernels, 2u);
  EXPECT_EQ(got, static_cast<double>(want));
}

// A grouped reduce (7 outputs of 300 elements each) rendered for a device that allows 3 workgroups of 32 threads:
// each workgroup takes outputs g, g+3, ... and every output is written once, right.
TEST(FrameworkGpuReduce, GroupedReduceBeyondTheGrid) {
  FW_REQUIRE_GPU(gpu);
  Device& device = open_device(gpu);
  constexpr int64_t outs = 7, len = 300;
  const Node kernel = row_sum_kernel(outs, len);

  TargetFacts facts = target_facts(device.info(), 1, true);
  facts.threads_per_group = 32;
  facts.max_groups = 3;
  const RenderedKernel rk = render_c(kernel, facts);
  EXPECT_EQ(rk.global, (std::array<uint32_t, 3>{3, 1, 1}));
  EXPECT_EQ(rk.local, (std::array<uint32_t, 3>{32, 1, 1}));
  EXPECT_NE(rk.source.find("gi += 3)"), std::string::npos) << rk.source;

  const std::vector<std::shared_ptr<const CompiledKernel>> k = compile_kernels({KernelRequest{gpu, rk}});
  const std::vector<float> x = wavy(outs * len);
  std::vector<float> got(outs, -1.0f);
  Buffer bin(device, x.size() * sizeof(float)), bout(device, got.size() * sizeof(float));
  bin.copyin(std::span<const float>(x));
  bout.copyin(std::span<const float>(got));
  const Buffer* bufs[] = {&bout, &bin};
  k[0]->program->launch(bufs, {}, rk.global, rk.local).wait();
  bout.copyout(std::span<float>(got));
  for (int64_t i = 0; i < outs; ++i) {
    double want = 0;
    for (int64_t j = 0; j < len; ++j) want += x[static_cast<size_t>(i * len + j)];
    EXPECT_NEAR(got[static_cast<size_t>(i)], want, 1e-3) << "output " << i;
  }
}

// The mutation test: the same grouped kernel with its barriers removed. The simulator runs each thread of a
// workgroup in its own context, switching only at barriers in a seeded order, with shared memory poisoned at the
// start: without barriers a thread reads partials other threads have not written yet, so the sum is wrong.
TEST(FrameworkGpuReduce, MissingBarrierGivesAWrongResult) {
  FW_REQUIRE_GPU(gpu);
  if (open_device(gpu).info().interface.rfind("sim-", 0) != 0) GTEST_SKIP() << "on a real GPU the race may pass";
  const std::vector<float> x = wavy(1000);
  double want = 0;
  for (float v : x) want += v;
  Tensor t(x, {1000}, gpu);
  t.realize();
  clear_schedule_cache();
  set_render_hook([](RenderedKernel& k) {
    for (size_t at; (at = k.source.find("HCQ_BARRIER();")) != std::string::npos;) k.source.erase(at, 14);
  });
  const double racy = t.sum().item();
  set_render_hook({});
  clear_schedule_cache();
  EXPECT_FALSE(std::abs(racy - want) < 1e-2) << "without barriers the sum was still " << racy;
  EXPECT_NEAR(t.sum().item(), want, 1e-3) << "with them it is right";
}

}  // namespace
}  // namespace hcq::fw
