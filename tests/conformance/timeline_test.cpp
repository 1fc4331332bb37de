// Conformance: the timeline across 2^32. With a synchronize after each submission (tinygrad's
// test_timeline_signal_rollover) the device swaps to its shadow timeline and restarts; where signal compares are
// 64-bit, a batch of submissions may also cross 2^32 between synchronizes.
#include <cstring>

#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

constexpr uint64_t k2Pow32 = uint64_t{1} << 32;

class ConformanceTimeline : public ConformanceFixture {};

TEST_P(ConformanceTimeline, RolloverWithSynchronize) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    dev().synchronize();
    dev().set_timeline_value(k2Pow32 - 20);
    ASSERT_EQ(dev().timeline_value(), k2Pow32 - 20);
    EXPECT_EQ(dev().timeline_signal().value(), k2Pow32 - 21) << "set_timeline_value(next) sets the signal to next-1";

    for (int i = 0; i < 40; ++i) {
      auto q = dev().new_queue(qk);
      wait_previous(*q);
      signal_next(*q);
      q->submit();
      dev().synchronize();
      ASSERT_GE(dev().timeline_signal().value(), dev().timeline_value() - 1) << "after synchronize " << i;
    }
    EXPECT_LT(dev().timeline_value(), uint64_t{1} << 31)
        << "a synchronize past 2^31 swaps to the shadow timeline and restarts at 1";

    // Still usable on the new timeline: a kernel runs and its result is right.
    auto add_one = load(kernels().add_one_f32);
    DeviceMemory a(dev(), 8), b(dev(), 8);
    a.upload_as<float>({5.0f, 6.0f});
    auto q = dev().compute_queue();
    wait_previous(*q);
    q->exec(*add_one, LaunchArgs{{b.va(), a.va()}, {2u}}, Dims{1u, 1u, 1u}, Dims{2u, 1u, 1u});
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    EXPECT_EQ(b.download_as<float>(2), (std::vector<float>{6.0f, 7.0f}));
  }
}

// 40 submissions alternating between the compute and copy queues, each ordered only by the timeline, crossing
// 2^32 without a synchronize in between. Each writes its index into its own slot; the last one checks the order
// by waiting for all slots written before it.
TEST_P(ConformanceTimeline, SubmissionsCrossing2Pow32) {
  if (!kind().wide_signal_compares) GTEST_SKIP() << dev().name() << " compares signals in 32 bits";
  constexpr int kSubmissions = 40;
  DeviceMemory slots(dev(), kSubmissions * 4, BufferSpec{.cpu_access = true, .nolru = true});
  std::memset(slots.host(), 0, kSubmissions * 4);
  std::vector<QueueKind> kinds = queue_kinds();
  dev().synchronize();
  dev().set_timeline_value(k2Pow32 - 20);

  std::vector<std::unique_ptr<HWQueue>> queues;
  uint64_t last = 0;
  for (int i = 0; i < kSubmissions; ++i) {
    auto q = dev().new_queue(kinds[i % kinds.size()]);
    wait_previous(*q);
    // Every earlier slot is already written when this submission runs: poll_bit on the previous slot's marker.
    if (i > 0) q->poll_bit(slots.va() + 4 * (i - 1), 0x80000000u, /*set=*/true);
    q->write(slots.va() + 4 * i, 0x80000000u | static_cast<uint32_t>(i), Width::b32);
    last = signal_next(*q);
    q->submit();
    queues.push_back(std::move(q));
  }
  EXPECT_EQ(last, k2Pow32 + 19);
  // Wait on the signal directly: a synchronize could swap timelines before we look at the value.
  wait_timeline(last);
  EXPECT_EQ(dev().timeline_signal().value(), k2Pow32 + 19);
  auto got = slots.download_as<uint32_t>(kSubmissions);
  for (int i = 0; i < kSubmissions; ++i) EXPECT_EQ(got[i], 0x80000000u | static_cast<uint32_t>(i)) << "slot " << i;
  dev().synchronize();
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceTimeline);

}  // namespace
}  // namespace hcq::conformance
