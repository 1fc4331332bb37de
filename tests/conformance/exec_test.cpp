// Conformance: kernel launches. One kernel, two kernels x100 on a patched timeline value, patched dims (fixed and
// fuzzed local sizes), patched kernel arguments, and kernel timing.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <random>
#include <sstream>

#include "common/timeline.hpp"
#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

class ConformanceExec : public ConformanceFixture {
 protected:
  void SetUp() override {
    ConformanceFixture::SetUp();
    add_one_ = load(kernels().add_one_f32);
    // a = [0, 1], b = [0, 0], as tinygrad's setUp.
    a_ = std::make_unique<DeviceMemory>(dev(), 2 * sizeof(float));
    b_ = std::make_unique<DeviceMemory>(dev(), 2 * sizeof(float));
    a_->upload_as<float>({0.0f, 1.0f});
    b_->upload_as<float>({0.0f, 0.0f});
    dev().synchronize();
  }
  void TearDown() override {
    ConformanceFixture::TearDown();
    a_.reset();
    b_.reset();
    add_one_.reset();
  }
  // out = in + 1 over 2 floats, as one workgroup of 2 threads.
  void exec_add_one(HWQueue& q, const DeviceMemory& out, const DeviceMemory& in) const {
    q.exec(*add_one_, LaunchArgs{{out.va(), in.va()}, {2u}}, Dims{1u, 1u, 1u}, Dims{2u, 1u, 1u});
  }

  std::unique_ptr<Program> add_one_;
  std::unique_ptr<DeviceMemory> a_, b_;
};

TEST_P(ConformanceExec, OneKernel) {
  auto q = dev().compute_queue();
  wait_previous(*q);
  exec_add_one(*q, *b_, *a_);
  uint64_t value = signal_next(*q);
  q->submit();
  wait_timeline(value);
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{1.0f, 2.0f}));
}

// One queue built once: wait(timeline, v-1), b = a+1, a = b+1, signal(timeline, v); submitted 100 times with v a
// variable. Kernels in one queue run in order, and each submission waits the previous one.
TEST_P(ConformanceExec, TwoKernels100TimesWithPatchedValue) {
  auto q = dev().compute_queue();
  q->wait(dev().timeline_signal(), Var{0} - 1);
  exec_add_one(*q, *b_, *a_);
  exec_add_one(*q, *a_, *b_);
  q->signal(dev().timeline_signal(), Var{0});

  uint64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    last = hcq::test::take_timeline_value(dev());
    std::array<uint64_t, 1> vars{last};
    q->submit(vars);
  }
  wait_timeline(last);
  EXPECT_EQ(a_->download_as<float>(2), (std::vector<float>{200.0f, 201.0f}));
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{199.0f, 200.0f}));
}

// Global and local x are variables (tinygrad's test_exec_update): one thread writes b[0] only; then two.
TEST_P(ConformanceExec, PatchedDims) {
  auto q = dev().compute_queue();
  q->wait(dev().timeline_signal(), Var{2} - 1);
  q->exec(*add_one_, LaunchArgs{{b_->va(), a_->va()}, {2u}}, Dims{Var{0}, 1u, 1u}, Dims{Var{1}, 1u, 1u});
  q->signal(dev().timeline_signal(), Var{2});

  uint64_t value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 3> one_thread{1, 1, value};
  q->submit(one_thread);
  wait_timeline(value);
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{1.0f, 0.0f})) << "b[1] must not be written";

  b_->upload_as<float>({0.0f, 0.0f});
  value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 3> two_groups{2, 1, value};
  q->submit(two_groups);
  wait_timeline(value);
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{1.0f, 2.0f})) << "global x patched to 2";

  b_->upload_as<float>({0.0f, 0.0f});
  value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 3> two_threads{1, 2, value};
  q->submit(two_threads);
  wait_timeline(value);
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{1.0f, 2.0f})) << "local x patched to 2";
}

// All six dims are variables; each submission runs mark_threads on a zeroed buffer and every thread of the grid
// must have run exactly once. First every local size in 1..3 per dim (tinygrad's test_exec_update_fuzz), then
// seeded random local and global sizes. The buffer is written by the host and read by the kernel, so the queue
// starts with a memory barrier.
TEST_P(ConformanceExec, PatchedDimsFuzzedLocalSizes) {
  auto mark = load(kernels().mark_threads);
  const LaunchLimits& limits = mark->limits();
  constexpr uint32_t kCap = 4096;  // words in the buffer; no launch below covers more threads
  DeviceMemory counts(dev(), kCap * sizeof(uint32_t), BufferSpec{.cpu_access = true, .nolru = true});
  auto* words = reinterpret_cast<uint32_t*>(counts.host());

  auto q = dev().compute_queue();
  q->wait(dev().timeline_signal(), Var{6} - 1);
  q->memory_barrier();
  q->exec(*mark, LaunchArgs{{counts.va()}, {kCap}}, Dims{Var{0}, Var{1}, Var{2}}, Dims{Var{3}, Var{4}, Var{5}});
  q->signal(dev().timeline_signal(), Var{6});

  auto run = [&](std::array<uint32_t, 3> global, std::array<uint32_t, 3> local) {
    std::ostringstream what;
    what << "global " << global[0] << "x" << global[1] << "x" << global[2] << ", local " << local[0] << "x" << local[1]
         << "x" << local[2];
    SCOPED_TRACE(what.str());
    std::memset(words, 0, kCap * sizeof(uint32_t));
    uint64_t value = hcq::test::take_timeline_value(dev());
    std::array<uint64_t, 7> vars{global[0], global[1], global[2], local[0], local[1], local[2], value};
    q->submit(vars);
    wait_timeline(value);
    uint64_t threads = uint64_t{global[0]} * global[1] * global[2] * local[0] * local[1] * local[2];
    uint64_t wrong = 0, first_wrong = kCap;
    for (uint64_t i = 0; i < kCap; ++i) {
      uint32_t want = i < threads ? 1u : 0u;
      if (words[i] != want) {
        if (wrong++ == 0) first_wrong = i;
      }
    }
    EXPECT_EQ(wrong, 0u) << "of " << threads << " threads; first wrong word " << first_wrong << " holds "
                         << (first_wrong < kCap ? words[first_wrong] : 0u);
  };

  for (uint32_t x = 1; x <= 3; ++x)
    for (uint32_t y = 1; y <= 3; ++y)
      for (uint32_t z = 1; z <= 3; ++z) run({1, 1, 1}, {x, y, z});

  // Random but reproducible: --gtest_random_seed=N picks another sequence.
  int flag_seed = GTEST_FLAG_GET(random_seed);
  uint32_t seed = flag_seed != 0 ? static_cast<uint32_t>(flag_seed) : 0x5eed1234u;
  SCOPED_TRACE(testing::Message() << "fuzz seed " << seed << " (rerun with --gtest_random_seed=" << seed << ")");
  std::mt19937 rng(seed);
  auto pick = [&](uint32_t lo, uint32_t hi) { return std::uniform_int_distribution<uint32_t>(lo, hi)(rng); };
  for (int i = 0; i < 40; ++i) {
    std::array<uint32_t, 3> local{};
    uint32_t budget = std::min<uint32_t>(limits.max_threads_per_group, 256);
    for (int d = 0; d < 3; ++d) {
      local[d] = pick(1, std::max<uint32_t>(1, std::min(limits.max_local[d], budget)));
      budget = std::max<uint32_t>(1, budget / local[d]);
    }
    uint32_t per_group = local[0] * local[1] * local[2];
    std::array<uint32_t, 3> global{1, 1, 1};
    uint32_t groups_budget = std::max<uint32_t>(1, kCap / per_group);
    for (int d = 0; d < 3; ++d) {
      global[d] = pick(1, std::max<uint32_t>(1, std::min({groups_budget, limits.max_global[d], 4u})));
      groups_budget = std::max<uint32_t>(1, groups_budget / global[d]);
    }
    run(global, local);
  }
}

// A kernel argument (a 32-bit value) is a variable.
TEST_P(ConformanceExec, PatchedKernelValue) {
  auto add_value = load(kernels().add_value_u32);
  constexpr uint32_t kN = 64;
  DeviceMemory in(dev(), kN * 4), out(dev(), kN * 4);
  std::vector<uint32_t> input(kN);
  for (uint32_t i = 0; i < kN; ++i) input[i] = i * 7;
  in.upload_as(input);

  auto q = dev().compute_queue();
  q->wait(dev().timeline_signal(), Var{0} - 1);
  q->exec(*add_value, LaunchArgs{{out.va(), in.va()}, {kN, Var{1}}}, Dims{kN / 16, 1u, 1u}, Dims{16u, 1u, 1u});
  q->signal(dev().timeline_signal(), Var{0});
  for (uint32_t add : {5u, 1000u, 0xfffffff0u}) {
    SCOPED_TRACE(testing::Message() << "value " << add);
    uint64_t value = hcq::test::take_timeline_value(dev());
    std::array<uint64_t, 2> vars{value, add};
    q->submit(vars);
    wait_timeline(value);
    auto got = out.download_as<uint32_t>(kN);
    for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], input[i] + add) << "at " << i;
  }
}

// Buffer addresses of a launch are variables: the same queue computes into two different buffers.
TEST_P(ConformanceExec, PatchedKernelBuffers) {
  DeviceMemory c(dev(), 2 * sizeof(float));
  auto q = dev().compute_queue();
  q->wait(dev().timeline_signal(), Var{0} - 1);
  q->exec(*add_one_, LaunchArgs{{Var{1}, Var{2}}, {2u}}, Dims{1u, 1u, 1u}, Dims{2u, 1u, 1u});
  q->signal(dev().timeline_signal(), Var{0});

  uint64_t value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 3> b_from_a{value, b_->va(), a_->va()};
  q->submit(b_from_a);
  value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 3> c_from_b{value, c.va(), b_->va()};
  q->submit(c_from_b);
  wait_timeline(value);
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(c.download_as<float>(2), (std::vector<float>{2.0f, 3.0f}));
}

// Timestamps around a kernel, and Program's eager launch with wait=true, give a positive device time.
TEST_P(ConformanceExec, KernelTiming) {
  constexpr uint32_t kN = 1 << 16;
  DeviceMemory in(dev(), kN * sizeof(float)), out(dev(), kN * sizeof(float));
  in.upload_as(std::vector<float>(kN, 41.0f));
  dev().synchronize();

  OwnedSignal start(0, "kernel start"), end(0, "kernel end");
  auto q = dev().compute_queue();
  wait_previous(*q);
  q->timestamp(start);
  q->exec(*add_one_, LaunchArgs{{out.va(), in.va()}, {kN}}, Dims{kN / 256, 1u, 1u}, Dims{256u, 1u, 1u});
  q->timestamp(end);
  uint64_t value = signal_next(*q);
  q->submit();
  wait_timeline(value);
  EXPECT_GE(end->timestamp(), start->timestamp());
  EXPECT_GE(dev().ticks_to_us(end->timestamp() - start->timestamp()), 0.0);

  std::array<uint64_t, 2> bufs{out.va(), in.va()};
  std::array<uint32_t, 1> vals{kN};
  std::optional<double> seconds = (*add_one_)(bufs, vals, {kN / 256, 1, 1}, {256, 1, 1}, /*wait=*/true);
  ASSERT_TRUE(seconds.has_value()) << "a launch with wait=true returns the kernel's time";
  EXPECT_GT(*seconds, 0.0);
  EXPECT_LT(*seconds, 60.0) << "seconds, not ticks or microseconds";
  auto got = out.download_as<float>(kN);
  EXPECT_EQ(got.front(), 42.0f);
  EXPECT_EQ(got.back(), 42.0f);
}

// The eager launch without wait follows the timeline protocol: a synchronize sees its result.
TEST_P(ConformanceExec, EagerLaunchFollowsTimeline) {
  std::array<uint64_t, 2> bufs{b_->va(), a_->va()};
  std::array<uint32_t, 1> vals{2};
  uint64_t before = dev().timeline_value();
  EXPECT_FALSE((*add_one_)(bufs, vals, {1, 1, 1}, {2, 1, 1}).has_value());
  EXPECT_GT(dev().timeline_value(), before) << "an eager launch signals the timeline";
  dev().synchronize();
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{1.0f, 2.0f}));
}

// An eager queue (Device::submit's: it ends with the timeline's signal) goes away without waiting for the device to
// read it: here the device cannot, held by a gate the test opens only afterwards. (The destructor used to wait for
// the ring, and slept doing so: an empty kernel's launch took 78 us on SIM-AMD.) Its kernel arguments are not reused
// meanwhile: a launch queued behind it, with other arguments, computes its own.
TEST_P(ConformanceExec, AnEagerQueueGoesWithoutWaitingForTheDevice) {
  OwnedSignal gate(0, "conformance gate");
  std::future<void> first = std::async(std::launch::async, [&] {
    auto q = dev().compute_queue();
    dev().submit(*q, [&](HWQueue& b) {
      b.wait(gate, 1);
      exec_add_one(b, *b_, *a_);  // b = a + 1
    });
  });
  // A bound far beyond a submission's cost: past it the destructor is waiting for the device, which waits for us.
  const bool gone = first.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  auto q = dev().compute_queue();
  dev().submit(*q, [&](HWQueue& b) { exec_add_one(b, *a_, *b_); });  // then a = b + 1
  q.reset();
  gate->set_value(1);
  first.get();
  dev().synchronize();
  EXPECT_TRUE(gone) << "the eager queue's destructor waited for the device";
  EXPECT_EQ(b_->download_as<float>(2), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(a_->download_as<float>(2), (std::vector<float>{2.0f, 3.0f}));
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceExec);

}  // namespace
}  // namespace hcq::conformance
