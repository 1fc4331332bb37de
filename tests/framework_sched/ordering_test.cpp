// Ordering (read-after-write, write-after-read through assign, a cycle is an error) and the memory plan.
#include <gtest/gtest.h>

#include "framework/schedule/memory_plan.hpp"
#include "framework/schedule/order.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

Tensor vec(std::vector<float> v) { return Tensor(v, {static_cast<int64_t>(v.size())}); }

TEST(FrameworkOrdering, ReadAfterWriteSeesTheNewValue) {
  Tensor a = vec({1, 2, 3, 4});
  Tensor b = (a * 2).contiguous();  // a kernel writing a temporary ...
  Tensor c = b + b.sum();           // ... read by two later kernels
  EXPECT_EQ(c.data<float>(), (std::vector<float>{22, 24, 26, 28}));
}

TEST(FrameworkOrdering, AssignAppliesInPlaceAndTwice) {
  Tensor x = vec({1, 2, 3});
  x.assign(x + 1).realize();
  x.assign(x + 1).realize();
  EXPECT_EQ(x.data<float>(), (std::vector<float>{3, 4, 5}));
}

// y reads x's old value; x is overwritten in the same schedule: the read must run first.
TEST(FrameworkOrdering, WriteAfterReadThroughAssign) {
  Tensor x = vec({1, 2, 3});
  Tensor y = x * 10;
  x.assign(x + 100);
  Tensor::realize({x, y});
  EXPECT_EQ(y.data<float>(), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(x.data<float>(), (std::vector<float>{101, 102, 103}));
}

// An assign whose value reads its own target at other positions (a flip) computes the value first.
TEST(FrameworkOrdering, AssignReadingItsTargetElsewhereIsNotTorn) {
  Tensor x = vec({1, 2, 3, 4, 5});
  x.assign(x.flip(0) * 1).realize();
  EXPECT_EQ(x.data<float>(), (std::vector<float>{5, 4, 3, 2, 1}));
}

TEST(FrameworkOrdering, AssignsThatReadEachOtherAreACycle) {
  Tensor a = vec({1, 2}), b = vec({3, 4});
  // Both values read the old buffers (copies of a Tensor share it, so build the values before either assign).
  Tensor from_b = b + 1, from_a = a + 1;
  a.assign(from_b);
  b.assign(from_a);
  try {
    Tensor::realize({a, b});
    FAIL() << "expected a cycle error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              "schedule: a cycle: the assign to float32 buffer of 2 elements ((2,)), the assign to float32 buffer of 2 "
              "elements ((2,)) each read a buffer another of them overwrites; realize them one at a time");
  }
}

TEST(FrameworkMemoryPlan, LiveBuffersNeverOverlapAndTheArenaIsSmallerThanTheSum) {
  // A chain: each temporary lives from its step to the next.
  std::vector<fw::Lifetime> bufs = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}, {4000, 0, 4}};
  const fw::Placement p = fw::plan_memory(bufs, 128);
  uint64_t sum = 0;
  for (const fw::Lifetime& b : bufs) sum += (b.bytes + 127) / 128 * 128;
  EXPECT_LT(p.arena_bytes, sum);
  EXPECT_EQ(p.arena_bytes, 4096u + 2048u);  // the long one, and two alternating slots
  for (size_t i = 0; i < bufs.size(); ++i)
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      const bool live_together = bufs[i].first <= bufs[j].last && bufs[j].first <= bufs[i].last;
      const bool overlap = p.offsets[i] < p.offsets[j] + bufs[j].bytes && p.offsets[j] < p.offsets[i] + bufs[i].bytes;
      EXPECT_FALSE(live_together && overlap) << i << " and " << j;
    }
}

// End to end: the temporaries of a realize land in one arena, and the caller's tensors are untouched.
TEST(FrameworkMemoryPlan, CallerBuffersAreNeverPlanned) {
  Tensor x = vec({1, 2, 3, 4});
  Tensor keep = (x + 1).realize();
  Tensor t1 = (x * 2).sum(0, true);  // temporaries: each reduce is read through an expand
  Tensor t2 = (x - t1).max(0, true);
  Tensor out = x - t2;
  // t1 = 20, t2 = max(x - 20) = -16, out = x + 16
  EXPECT_EQ(out.data<float>(), (std::vector<float>{17, 18, 19, 20}));
  EXPECT_EQ(keep.data<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_EQ(x.data<float>(), (std::vector<float>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace hcq

namespace hcq {
namespace {

// A graph across two devices: a kernel on CPU:0, a device copy to CPU:1, a kernel there, in one realize.
// Among the steps ready at once, one that reads what a copy wrote goes after the others. An allreduce over two
// devices lists its steps per device: copy into 0, add on 0, copy into 1, add on 1. In that order device 0's copy out
// would queue behind its add, which waits for device 1's copy; this way both directions are in flight at once (the
// runtime orders copies by the bytes they touch) and both adds come after them.
TEST(FrameworkOrdering, StepsReadingACopyGoAfterTheOtherReadySteps) {
  auto node = [](fw::Op op) {
    auto n = std::make_shared<fw::NodeData>();
    n->op = op;
    return n;
  };
  const fw::Node x0 = node(fw::Op::BUFFER), x1 = node(fw::Op::BUFFER);
  const fw::Node in0 = node(fw::Op::BUFFER), sum0 = node(fw::Op::BUFFER), in1 = node(fw::Op::BUFFER),
                 sum1 = node(fw::Op::BUFFER);
  std::vector<fw::StepAccess> steps = {
      {in0.get(), 0, {x1.get()}, true},               // 0: x1 copied to device 0
      {sum0.get(), 1, {x0.get(), in0.get()}, false},  // 1: x0 + that
      {in1.get(), 2, {x0.get()}, true},               // 2: x0 copied to device 1
      {sum1.get(), 3, {in1.get(), x1.get()}, false},  // 3: that + x1
  };
  auto describe = [](size_t k) { return std::to_string(k); };
  EXPECT_EQ(fw::order_steps(steps, describe), (std::vector<size_t>{0, 2, 1, 3}));
  // Without copies, the lowest index first among the ready steps (dependencies still win).
  for (fw::StepAccess& s : steps) s.copy = false;
  EXPECT_EQ(fw::order_steps(steps, describe), (std::vector<size_t>{0, 1, 2, 3}));
  steps[0].reads = {sum1.get()};  // step 0 now reads what step 3 writes
  EXPECT_EQ(fw::order_steps(steps, describe), (std::vector<size_t>{2, 3, 0, 1}));
  // A copy keeps its place among kernels that do not read a copy: here the kernel before it stays before it.
  steps = {{sum0.get(), 0, {x0.get()}, false}, {in1.get(), 1, {x0.get()}, true}, {sum1.get(), 2, {x1.get()}, false}};
  EXPECT_EQ(fw::order_steps(steps, describe), (std::vector<size_t>{0, 1, 2}));
}

TEST(FrameworkOrdering, CopyBetweenDevicesOrdersKernelsOnBoth) {
  Tensor x = vec({1, 2, 3, 4});
  Tensor y = (x * 2).to("CPU:1") + 1;
  EXPECT_EQ(y.device(), "CPU:1");
  const FrameworkCounters before = framework_counters();
  y.realize();
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.kernels - before.kernels, 2u);
  EXPECT_EQ(after.copies - before.copies, 1u);
  EXPECT_EQ(y.data<float>(), (std::vector<float>{3, 5, 7, 9}));
  // Mixing devices in one op is refused with both names.
  try {
    (void)(x + y);
    FAIL() << "expected an error";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              "add: the operands are on different devices (CPU:0 and CPU:1): move one with to()");
  }
}

}  // namespace
}  // namespace hcq
