// The kernel cache (framework/schedule/kernel_cache.hpp): a kernel the process has built before is neither lowered
// nor rendered again when a new schedule needs it (the schedule cache cleared, another graph with the same kernel, or
// the same kernel twice in one schedule), and kernels that differ in anything (a constant, a dtype, a shape, one
// buffer in two roles) get programs of their own. Every value is checked against a loop written here.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/engine/realize.hpp"
#include "framework/schedule/kernel_cache.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

std::vector<float> ramp(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = from + static_cast<float>(k);
  return v;
}

// What the kernel cache and the compiler did between two points.
struct Delta {
  uint64_t lowered, lowering_hits, rendered, code_hits, compiled;
};
struct Watch {
  fw::KernelCacheStats s0 = fw::kernel_cache_stats();
  uint64_t c0 = framework_counters().compiles;
  Delta delta() const {
    const fw::KernelCacheStats s = fw::kernel_cache_stats();
    return Delta{s.lowered - s0.lowered, s.lowering_hits - s0.lowering_hits, s.rendered - s0.rendered,
                 s.code_hits - s0.code_hits, framework_counters().compiles - c0};
  }
};

// x * y + 2 over n elements, on new buffers each call.
Tensor fma_graph(size_t n, float c = 2) {
  return Tensor(ramp(n, 1), {static_cast<int64_t>(n)}) * Tensor(ramp(n, 10), {static_cast<int64_t>(n)}) + c;
}

std::vector<float> fma_values(size_t n, float c = 2) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = (1.0f + static_cast<float>(k)) * (10.0f + static_cast<float>(k)) + c;
  return v;
}

TEST(FrameworkKernelCache, AKernelBuiltBeforeIsNeitherLoweredNorRenderedAgain) {
  fw::clear_kernel_cache();
  fw::clear_schedule_cache();
  Watch first;
  EXPECT_EQ(fma_graph(37).data<float>(), fma_values(37));
  const Delta d1 = first.delta();
  EXPECT_EQ(d1.lowered, 1u);
  EXPECT_EQ(d1.rendered, 1u);

  // A new schedule (the schedule cache forgot the first) of the same kernel on other buffers.
  fw::clear_schedule_cache();
  Watch second;
  EXPECT_EQ(fma_graph(37).data<float>(), fma_values(37));
  const Delta d2 = second.delta();
  EXPECT_EQ(d2.lowered, 0u);
  EXPECT_EQ(d2.lowering_hits, 1u);
  EXPECT_EQ(d2.rendered, 0u);
  EXPECT_EQ(d2.code_hits, 1u);
  EXPECT_EQ(d2.compiled, 0u);
}

TEST(FrameworkKernelCache, TheSameKernelTwiceInOneScheduleIsBuiltOnce) {
  fw::clear_kernel_cache();
  fw::clear_schedule_cache();
  Watch w;
  std::vector<Tensor> outs{fma_graph(29), fma_graph(29)};
  Tensor::realize(outs);
  const Delta d = w.delta();
  EXPECT_EQ(d.lowered, 1u);
  EXPECT_EQ(d.lowering_hits, 1u);
  EXPECT_EQ(d.rendered, 1u);
  EXPECT_EQ(outs[0].data<float>(), fma_values(29));
  EXPECT_EQ(outs[1].data<float>(), fma_values(29));
}

// Each variant is one edit away from x * y + 2 on 6 float32 elements; after the base kernel is cached, each must be
// lowered and rendered anew and compute its own values.
TEST(FrameworkKernelCache, KernelsThatDifferGetTheirOwnPrograms) {
  struct Variant {
    std::string name;
    std::function<std::vector<float>()> run;  // realizes the graph, returns its values as floats
    std::vector<float> want;
  };
  const std::vector<float> x = ramp(6, 1), y = ramp(6, 10);
  std::vector<float> constant(6), shape(6), dtype(6), one_buffer(6);
  for (size_t k = 0; k < 6; ++k) {
    constant[k] = x[k] * y[k] + 3;
    dtype[k] = static_cast<float>(static_cast<int32_t>(x[k]) * static_cast<int32_t>(y[k]) + 2);
    one_buffer[k] = x[k] * x[k] + 2;
  }
  shape = fma_values(5);
  const std::vector<Variant> variants{
      {"constant", [] { return fma_graph(6, 3).data<float>(); }, constant},
      {"shape", [] { return fma_graph(5).data<float>(); }, shape},
      {"dtype",
       [&] {
         const Tensor a(std::vector<int32_t>(x.begin(), x.end()), {6}),
             b(std::vector<int32_t>(y.begin(), y.end()), {6});
         const std::vector<int32_t> v = (a * b + 2).data<int32_t>();
         return std::vector<float>(v.begin(), v.end());
       },
       dtype},
      {"one buffer in both roles",
       [&] {
         const Tensor a(x, {6});
         return (a * a + 2).data<float>();
       },
       one_buffer},
  };
  for (const Variant& v : variants) {
    fw::clear_kernel_cache();
    fw::clear_schedule_cache();
    EXPECT_EQ(fma_graph(6).data<float>(), fma_values(6));
    fw::clear_schedule_cache();
    Watch w;
    EXPECT_EQ(v.run(), v.want) << v.name;
    const Delta d = w.delta();
    EXPECT_EQ(d.lowering_hits, 0u) << v.name;
    EXPECT_EQ(d.code_hits, 0u) << v.name;
    EXPECT_EQ(d.rendered, 1u) << v.name;
  }
}

// A cached lowering used with this graph's buffers and variables: an assign reads and writes its target (its own
// buffer is the kernel's output and an input), and a variable's value comes with each call.
TEST(FrameworkKernelCache, AHitBindsThisGraphsBuffersAndVariables) {
  fw::clear_kernel_cache();
  for (int round = 0; round < 3; ++round) {
    fw::clear_schedule_cache();
    Watch w;
    Tensor acc(ramp(8, 1), {8});
    const Tensor add(ramp(8, 100), {8});
    acc.assign(acc * 2 + add * Variable("k", 0, 10).bind(round + 1));
    std::vector<float> want(8);
    for (size_t k = 0; k < 8; ++k) want[k] = (1.0f + k) * 2 + (100.0f + k) * static_cast<float>(round + 1);
    EXPECT_EQ(acc.data<float>(), want) << "round " << round;
    const Delta d = w.delta();
    EXPECT_EQ(d.lowered, round == 0 ? 1u : 0u) << "round " << round;
    EXPECT_EQ(d.rendered, round == 0 ? 1u : 0u) << "round " << round;
  }
}

TEST(FrameworkKernelCache, ClearingTheScheduleCacheKeepsItClearingItForgetsIt) {
  fw::clear_kernel_cache();
  fw::clear_schedule_cache();
  (void)fma_graph(11).data<float>();
  fw::clear_schedule_cache();
  Watch kept;
  EXPECT_EQ(fma_graph(11).data<float>(), fma_values(11));
  EXPECT_EQ(kept.delta().rendered, 0u);
  fw::clear_schedule_cache();
  fw::clear_kernel_cache();
  Watch cleared;
  EXPECT_EQ(fma_graph(11).data<float>(), fma_values(11));
  EXPECT_EQ(cleared.delta().lowered, 1u);
  EXPECT_EQ(cleared.delta().rendered, 1u);
  EXPECT_EQ(cleared.delta().compiled, 0u);  // the compile cache (by source) still has it
}

}  // namespace
}  // namespace hcq
