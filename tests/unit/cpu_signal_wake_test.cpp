// The CPU device's wake-ups (drivers/cpu/cpu_signal_wake.hpp): a host wait for the timeline sleeps in the kernel
// until the worker that writes the timeline wakes it, and so does a queue waiting for another queue's signal. And a
// copyout, whose bytes the host reads where they are once the timeline has passed what was submitted before it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "../../drivers/cpu/cpu_device.hpp"
#include "../../drivers/cpu/cpu_signal_wake.hpp"
#include "hcq/buffer.hpp"
#include "hcq/signal.hpp"

namespace hcq::cpu {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Polls until `done` holds or 10 s pass.
template <class Done>
bool eventually(Done done) {
  const auto until = Clock::now() + 10s;
  while (!done()) {
    if (Clock::now() > until) return false;
    std::this_thread::sleep_for(100us);
  }
  return true;
}

TEST(CpuSignalWake, ASleeperWokenByTheWriterReturnsLongBeforeItsLimit) {
  CpuSignalWake wake;
  uint64_t value = 0;
  std::atomic<bool> back{false};
  std::thread sleeper([&] {
    wake.sleep(&value, 1, std::chrono::microseconds(60s));
    back = true;
  });
  ASSERT_TRUE(eventually([&] { return wake.sleepers() == 1; }));
  std::atomic_ref<uint64_t>(value).store(1, std::memory_order_release);
  wake.wake(&value);
  // Without the wake-up it would sleep its minute.
  EXPECT_TRUE(eventually([&] { return back.load(); }));
  sleeper.join();
  EXPECT_EQ(wake.sleepers(), 0u);
}

TEST(CpuSignalWake, ReturnsAtOnceWhenTheValueIsThereOrTheLimitPasses) {
  CpuSignalWake wake;
  uint64_t value = 5;
  const auto t0 = Clock::now();
  wake.sleep(&value, 5, std::chrono::microseconds(60s));  // reached already: no sleep at all
  wake.sleep(&value, 6, 20ms);                            // not reached, no writer: the limit ends it
  EXPECT_LT(Clock::now() - t0, 30s);
  EXPECT_EQ(wake.sleepers(), 0u);
  wake.wake(&value);  // with no sleeper: nothing to do, and no harm
}

TEST(CpuSignalWake, AWaitForTheTimelineSleepsUntilTheWorkerSignals) {
  auto dev = std::make_unique<CpuDevice>("CPU:wake-test");
  OwnedSignal gate(0);
  // The submission holds the timeline until the test opens the gate: its worker waits on it, then signals.
  const Completion done = dev->submit(*dev->compute_queue(), [&](HWQueue& q) { q.wait(gate, 1); });
  std::atomic<int> back{0};
  // A wait through the device (its sleeps are capped at a millisecond, so it would end without a wake-up too) ...
  std::thread waiter([&] {
    done.wait();
    ++back;
  });
  // ... and one that sleeps for a minute unless the worker's signal wakes it.
  std::thread sleeper([&] {
    dev->signal_wake().sleep(dev->timeline_signal().host_ptr(), done.value(), std::chrono::microseconds(60s));
    ++back;
  });
  // Both sleep in the kernel (not yielding and backing off), beside the worker, which naps on the gate's futex
  // between its looks at it ...
  ASSERT_TRUE(eventually([&] { return dev->signal_wake().sleepers() == 3; }));
  EXPECT_EQ(back.load(), 0);
  // ... and the worker's signal wakes them.
  gate->set_value(1);
  EXPECT_TRUE(eventually([&] { return back.load() == 2; }));
  waiter.join();
  sleeper.join();
  EXPECT_EQ(dev->signal_wake().sleepers(), 0u);
  EXPECT_FALSE(dev->has_error());
}

TEST(CpuSignalWake, AQueueWaitingForAnotherQueuesSignalSleepsUntilItIsWritten) {
  auto dev = std::make_unique<CpuDevice>("CPU:wake-test");
  OwnedSignal gate(0);
  const Completion held = dev->submit(*dev->compute_queue(), [&](HWQueue& q) { q.wait(gate, 1); });
  // The copy queue's submission waits for the compute queue's (the timeline orders them): its worker naps in the
  // kernel on the timeline value, so the compute worker's signal ends the nap at once. The compute worker naps on
  // the gate's futex meanwhile: two sleepers.
  EXPECT_TRUE(eventually([&] { return dev->signal_wake().sleepers() == 1; })) << "the compute queue does not sleep";
  const Completion after = dev->submit(*dev->copy_queue(), [](HWQueue&) {});
  EXPECT_TRUE(eventually([&] { return dev->signal_wake().sleepers() == 2; })) << "the copy queue does not sleep";
  EXPECT_FALSE(after.done());
  gate->set_value(1);
  held.wait();
  after.wait();
  EXPECT_TRUE(eventually([&] { return dev->signal_wake().sleepers() == 0; }));
  EXPECT_FALSE(dev->has_error());
}

TEST(CpuSignalWake, ACopyoutReadsInPlaceAfterEverythingSubmittedBeforeIt) {
  auto dev = std::make_unique<CpuDevice>("CPU:wake-test");
  Buffer b(*dev, 4096);
  std::vector<std::byte> zeros(4096), ones(4096, std::byte{1}), got(4096);
  b.copyin(std::span<const std::byte>(zeros));
  // A copyin queued behind a gate the test holds: the copyout must wait for it ...
  OwnedSignal gate(0);
  dev->submit(*dev->compute_queue(), [&](HWQueue& q) { q.wait(gate, 1); });
  b.copyin(std::span<const std::byte>(ones));
  const uint64_t next = dev->timeline_value();
  std::atomic<bool> read{false};
  std::thread reader([&] {
    b.copyout(std::span<std::byte>(got));
    read = true;
  });
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(read.load()) << "the copyout did not wait for the copyin before it";
  gate->set_value(1);
  reader.join();
  EXPECT_EQ(got, ones);
  // ... and submits nothing itself: no copy through staging on the copy queue.
  EXPECT_EQ(dev->timeline_value(), next);
  EXPECT_FALSE(dev->has_error());
}

}  // namespace
}  // namespace hcq::cpu
