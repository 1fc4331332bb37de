// GraphSchedule on its own: which waits a call list needs, with no device. Queues 0..D-1 are the devices' compute
// queues; progress value of call j is j + 2, of a device's entry 1.
#include <gtest/gtest.h>

#include "hcq/error.hpp"
#include "hcq/graph.hpp"

namespace hcq {
namespace {

using Input = GraphSchedule::Input;
using Range = GraphSchedule::Range;

Range rd(uint64_t lo, uint64_t hi, int32_t var = -1) { return {var, lo, hi, false}; }
Range wr(uint64_t lo, uint64_t hi, int32_t var = -1) { return {var, lo, hi, true}; }

std::vector<std::pair<uint32_t, uint64_t>> waits(const std::vector<GraphSchedule::Wait>& ws) {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const auto& w : ws) out.emplace_back(w.queue, w.value);
  return out;
}
using Waits = std::vector<std::pair<uint32_t, uint64_t>>;

TEST(GraphSchedule, OneQueueChainNeedsNoWaits) {
  Input in{1, {0}, {}};
  for (int i = 0; i < 8; ++i) in.calls.push_back({0, {rd(0, 64), wr(0, 64)}});  // read-modify-write, in place
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(s.num_waits(), 0u);
  for (const auto& step : s.steps) EXPECT_FALSE(step.signals);
  EXPECT_EQ(s.entry_signals[0], 0);
}

TEST(GraphSchedule, CopyQueueWaitsForTheWriterAndTheEntry) {
  // queue 1 is device 0's copy queue. Call 0 writes [0,64) on compute; call 1 copies it out on the copy queue.
  Input in{1, {0, 0}, {{0, {wr(0, 64)}}, {1, {wr(100, 164), rd(0, 64)}}}};
  GraphSchedule s = GraphSchedule::build(in);
  // The wait for call 0 implies the entry (compute queue passed it first): one wait, not two.
  EXPECT_EQ(waits(s.steps[1].waits), (Waits{{0, 2}}));
  EXPECT_TRUE(s.steps[0].signals);
  EXPECT_EQ(s.entry_signals[0], 0);
  // The exit (on the compute queue) waits for the copy queue's last call.
  EXPECT_EQ(waits(s.exit_waits[0]), (Waits{{1, 3}}));
  EXPECT_TRUE(s.steps[1].signals);
}

TEST(GraphSchedule, IndependentCopyWaitsOnlyForTheEntry) {
  Input in{1, {0, 0}, {{0, {wr(0, 64)}}, {1, {wr(200, 264), rd(100, 164)}}}};
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(waits(s.steps[1].waits), (Waits{{0, GraphSchedule::kEntryValue}}));
  EXPECT_EQ(s.entry_signals[0], 1);
  EXPECT_FALSE(s.steps[0].signals);
}

TEST(GraphSchedule, ReadAfterReadIsNoDependency) {
  Input in{1, {0, 0}, {{0, {rd(0, 64), wr(500, 564)}}, {1, {rd(0, 64), wr(600, 664)}}}};
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(waits(s.steps[1].waits), (Waits{{0, GraphSchedule::kEntryValue}}));
}

TEST(GraphSchedule, WriteAfterReadAndByteGranularity) {
  // Call 1 writes [63, 64): it overlaps call 0's read of [0, 64) by one byte. Call 2 writes [64, 128): no overlap.
  Input in{1, {0, 0}, {{0, {rd(0, 64), wr(1000, 1004)}}, {1, {wr(63, 64)}}, {1, {wr(64, 128)}}}};
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(waits(s.steps[1].waits), (Waits{{0, 2}}));
  EXPECT_TRUE(s.steps[2].waits.empty());
}

TEST(GraphSchedule, TransitiveDependenciesArePruned) {
  // A (queue 0) writes x; B (queue 1) reads x, writes y; C (queue 0) reads y and x... C waits B only, and after
  // A on its own queue nothing. D (queue 1) reads what C wrote: waits C. E (queue 1) reads A's x: already known.
  Input in{1, {0, 0}, {}};
  in.calls = {{0, {wr(0, 8)}},
              {1, {rd(0, 8), wr(8, 16)}},
              {0, {rd(8, 16), rd(0, 8), wr(16, 24)}},
              {1, {rd(16, 24)}},
              {1, {rd(0, 8)}}};
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(waits(s.steps[1].waits), (Waits{{0, 2}}));
  EXPECT_EQ(waits(s.steps[2].waits), (Waits{{1, 3}}));
  EXPECT_EQ(waits(s.steps[3].waits), (Waits{{0, 4}}));
  EXPECT_TRUE(s.steps[4].waits.empty());
  EXPECT_TRUE(s.exit_waits[0].empty() == false);
}

TEST(GraphSchedule, OfTwoWaitsTheImpliedOneIsDropped) {
  // Queue 2 (copy of device 0) needs queue 0's call 0 and queue 1's call 1, and call 1 already waited call 0.
  Input in{1, {0, 0, 0}, {}};
  in.calls = {{0, {wr(0, 8)}}, {1, {rd(0, 8), wr(8, 16)}}, {2, {rd(0, 8), rd(8, 16)}}};
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(waits(s.steps[2].waits), (Waits{{1, 3}}));
}

TEST(GraphSchedule, VariablesAreSeparateAddressSpaces) {
  // The same offsets on two variables, and on a constant base, do not overlap; on one variable they do.
  Input in{1, {0, 0}, {{0, {wr(0, 64, 3)}}, {1, {wr(0, 64, 4)}}, {1, {wr(0, 64)}}, {1, {rd(32, 40, 3)}}}};
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(waits(s.steps[1].waits), (Waits{{0, GraphSchedule::kEntryValue}}));
  EXPECT_TRUE(s.steps[2].waits.empty());
  EXPECT_EQ(waits(s.steps[3].waits), (Waits{{0, 2}}));
}

TEST(GraphSchedule, TwoDevicesWaitEachOthersEntryAndExitOnEverything) {
  // Device 0 writes x, device 1 reads it. Device 1 also waits device 0's entry (implied by the call wait), and
  // each exit waits for the other device's last call.
  Input in{2, {0, 1}, {{0, {wr(0, 8)}}, {1, {rd(0, 8), wr(8, 16)}}}};
  GraphSchedule s = GraphSchedule::build(in);
  EXPECT_EQ(waits(s.steps[0].waits), (Waits{{1, GraphSchedule::kEntryValue}}));
  EXPECT_EQ(waits(s.steps[1].waits), (Waits{{0, 2}}));
  EXPECT_TRUE(s.exit_waits[1].empty());  // call 1 waited call 0, the last of queue 0
  EXPECT_EQ(waits(s.exit_waits[0]), (Waits{{1, 3}}));
  EXPECT_EQ(s.last_value, (std::vector<uint64_t>{2, 3}));
}

TEST(GraphSchedule, BadInputIsRefused) {
  EXPECT_THROW(GraphSchedule::build(Input{0, {}, {}}), InvalidArgument);
  EXPECT_THROW(GraphSchedule::build(Input{2, {0}, {}}), InvalidArgument);         // fewer queues than devices
  EXPECT_THROW(GraphSchedule::build(Input{1, {0, 3}, {}}), InvalidArgument);      // queue on device 3 of 1
  EXPECT_THROW(GraphSchedule::build(Input{2, {1, 0}, {}}), InvalidArgument);      // queue 0 not device 0's
  EXPECT_THROW(GraphSchedule::build(Input{1, {0}, {{5, {}}}}), InvalidArgument);  // call on queue 5
}

}  // namespace
}  // namespace hcq
