// Realisation: several tensors in one schedule, reading a realized tensor (no new kernel), assign in place (twice,
// broadcast and cast, seen through every handle, old values read in the same schedule first), contiguous(), and
// to("CPU").
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType I32 = DType::int32, F32 = DType::float32;

ref::Array plus(const ref::Array& a, double k) {
  return ref::map(a, [k](double v) { return v + k; });
}

TEST(TensorOpsRealize, SeveralTensorsInOneSchedule) {
  const ref::Array x = random_array({7, 13}, F32, {-8, 8, true}, 271);
  const Tensor t = to_tensor(x, F32);
  const Tensor shared = t + 1;
  Tensor a = shared * 2, b = shared.sum(1), c = shared.max();
  Tensor::realize({a, b, c});
  const ref::Array s = plus(x, 1);
  EXPECT_TRUE(matches(a, F32, ref::map(s, [](double v) { return 2 * v; }), kExact));
  EXPECT_TRUE(matches(b, F32, ref::sum(s, {1}, false), kExact));
  EXPECT_TRUE(matches(c, F32, ref::max(s, {}, false), kExact));
  // The part the three share reads correctly on its own afterwards, whether the schedule kept it or fused it away.
  EXPECT_TRUE(matches(shared, F32, s, kExact));
}

TEST(TensorOpsRealize, ReadingARealizedTensorRunsNoKernel) {
  const ref::Array x = random_array({7, 13}, F32, {-8, 8, true}, 277);
  Tensor y = to_tensor(x, F32) * 3;
  EXPECT_EQ(&y.realize(), &y);
  const uint64_t kernels = framework_counters().kernels;
  EXPECT_TRUE(matches(y, F32, ref::map(x, [](double v) { return 3 * v; }), kExact));
  y.realize();
  EXPECT_TRUE(matches(y, F32, ref::map(x, [](double v) { return 3 * v; }), kExact));
  EXPECT_EQ(framework_counters().kernels, kernels);
}

TEST(TensorOpsRealize, ReadAfterAnotherRealize) {
  const ref::Array x = random_array({5, 7}, I32, {-100, 100}, 281);
  Tensor a = to_tensor(x, I32) + 1;
  a.realize();
  Tensor b = a * 2;
  b.realize();
  Tensor c = (b - a).sum(0);
  c.realize();
  EXPECT_TRUE(matches(a, I32, plus(x, 1), kExact));
  EXPECT_TRUE(matches(b, I32, ref::map(plus(x, 1), [](double v) { return 2 * v; }), kExact));
  EXPECT_TRUE(matches(c, I32, ref::sum(plus(x, 1), {0}, false), kExact));
}

TEST(TensorOpsRealize, AssignTwiceAddsTwice) {
  const ref::Array x = random_array({7, 13}, F32, {-8, 8, true}, 283);
  Tensor t = to_tensor(x, F32);
  t.realize();             // assign needs a buffer to store into
  const Tensor alias = t;  // a copy of the handle is the same tensor
  t.assign(t + 1);
  t.assign(t + 1);
  EXPECT_TRUE(matches(t, F32, plus(x, 2), kExact));
  EXPECT_TRUE(matches(alias, F32, plus(x, 2), kExact));
  EXPECT_TRUE(matches(t * 10, F32, ref::map(plus(x, 2), [](double v) { return 10 * v; }), kExact));
}

TEST(TensorOpsRealize, AssignAfterRealizeKeepsEarlierResults) {
  const ref::Array x = random_array({5, 7}, I32, {-100, 100}, 293);
  Tensor t = to_tensor(x, I32);
  t.realize();
  Tensor before = t * 2;
  before.realize();
  t.assign(t + 10).realize();
  EXPECT_TRUE(matches(before, I32, ref::map(x, [](double v) { return 2 * v; }), kExact));
  EXPECT_TRUE(matches(t * 2, I32, ref::map(plus(x, 10), [](double v) { return 2 * v; }), kExact));
}

// Equal expressions are one node, computed once: two tensors realized from them hold one buffer. An assign to one
// must not change the other (two accumulators made the same way are two accumulators).
TEST(TensorOpsRealize, TensorsRealizedFromEqualExpressionsStaySeparateUnderAssign) {
  Tensor a = Tensor::zeros({4}, I32).contiguous();
  a.realize();
  Tensor b = Tensor::zeros({4}, I32).contiguous();
  b.realize();
  a.assign(a + 1).realize();
  b.assign(b + 5).realize();
  a.assign(a + 1).realize();
  EXPECT_EQ(a.data<int32_t>(), (std::vector<int32_t>{2, 2, 2, 2}));
  EXPECT_EQ(b.data<int32_t>(), (std::vector<int32_t>{5, 5, 5, 5}));

  Tensor c = Tensor::full({3}, 7, I32).contiguous(), d = Tensor::full({3}, 7, I32).contiguous();
  Tensor::realize({c, d});  // one realize, one slot for both
  d.assign(d * 2).realize();
  EXPECT_EQ(c.data<int32_t>(), (std::vector<int32_t>{7, 7, 7}));
  EXPECT_EQ(d.data<int32_t>(), (std::vector<int32_t>{14, 14, 14}));
}

TEST(TensorOpsRealize, ReadsOfTheOldValueScheduledWithTheAssignComeFirst) {
  const ref::Array x = random_array({5, 7}, I32, {-100, 100}, 307);
  Tensor t = to_tensor(x, I32);
  t.realize();
  Tensor old_times_three = t * 3;  // lazy: reads t's buffer
  t.assign(t + 1);
  Tensor::realize({old_times_three, t});
  EXPECT_TRUE(matches(old_times_three, I32, ref::map(x, [](double v) { return 3 * v; }), kExact));
  EXPECT_TRUE(matches(t, I32, plus(x, 1), kExact));
}

TEST(TensorOpsRealize, AssignBroadcastsAndCasts) {
  Tensor t = Tensor::zeros({2, 3}, F32);
  t.realize();
  t.assign(Tensor(std::vector<int32_t>{1, 2, 3}, {3}));
  EXPECT_EQ(t.dtype(), F32);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.data<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
  t.assign(Tensor::full({2, 3}, 2.5).cast(DType::float16));
  EXPECT_EQ(t.data<float>(), std::vector<float>(6, 2.5f));
}

TEST(TensorOpsRealize, ContiguousOfViews) {
  const ref::Array x = random_array({5, 7}, I32, 311);
  const Tensor t = to_tensor(x, I32);
  EXPECT_TRUE(matches(t.transpose().contiguous(), I32, ref::permute(x, {1, 0}), kExact));
  EXPECT_TRUE(matches(t.flip(0).contiguous() + 1, I32, plus(ref::flip(x, {0}), 1), kExact));
}

TEST(TensorOpsRealize, ToCpuKeepsValuesAndDtype) {
  const ref::Array x = random_array({5, 7}, F32, 313);
  const Tensor t = to_tensor(x, F32);
  const Tensor on_cpu = t.to("CPU");
  EXPECT_TRUE(on_cpu.device().starts_with("CPU")) << on_cpu.device();  // the canonical name, "CPU:0" today
  EXPECT_TRUE(matches(on_cpu, F32, x, kExact));
  EXPECT_TRUE(matches((t * 2).to("CPU") - 1, F32, ref::map(x, [](double v) { return stored(F32, 2 * v) - 1; }),
                      tolerance(F32, Accuracy::rounded)));
}

}  // namespace
}  // namespace hcq::optest
