// Conformance: bind (a queue copied into device memory and resubmitted with changing variables), memory barriers,
// write (32 and 64 bit), poll_bit (set and clear).
#include <atomic>
#include <cstring>

#include "common/timeline.hpp"
#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

constexpr BufferSpec kHostVisible{.cpu_access = true, .nolru = true};

class ConformanceQueueOps : public ConformanceFixture {};

// tinygrad's test_bind: a bound queue waits a patched signal address and value.
TEST_P(ConformanceQueueOps, BindWithPatchedWait) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal fake(0, "bound wait");
    auto q = dev().new_queue(qk);
    q->wait(Var{0}, Var{1});
    q->signal(dev().timeline_signal(), Var{2});
    q->bind();
    EXPECT_TRUE(q->bound());
    for (uint64_t target : {0x30ull, 0x31ull, 0x40ull}) {
      fake->set_value(target);
      uint64_t value = hcq::test::take_timeline_value(dev());
      std::array<uint64_t, 3> vars{fake->addr(), target, value};
      q->submit(vars);
      wait_timeline(value);
    }
  }
}

// A bound compute queue submitted many times, with the timeline value and a kernel argument patched each time;
// the result is checked after every submission.
TEST_P(ConformanceQueueOps, BoundKernelQueueResubmitted) {
  auto add_value = load(kernels().add_value_u32);
  constexpr uint32_t kN = 32;
  DeviceMemory in(dev(), kN * 4), out(dev(), kN * 4);
  std::vector<uint32_t> input(kN);
  for (uint32_t i = 0; i < kN; ++i) input[i] = 1000 * i;
  in.upload_as(input);

  auto q = dev().compute_queue();
  q->wait(dev().timeline_signal(), Var{0} - 1);
  q->exec(*add_value, LaunchArgs{{out.va(), in.va()}, {kN, Var{1}}}, Dims{2u, 1u, 1u}, Dims{16u, 1u, 1u});
  q->signal(dev().timeline_signal(), Var{0});
  q->bind();
  for (uint32_t round = 0; round < 20; ++round) {
    uint64_t value = hcq::test::take_timeline_value(dev());
    std::array<uint64_t, 2> vars{value, round * 3 + 1};
    q->submit(vars);
    wait_timeline(value);
    auto got = out.download_as<uint32_t>(kN);
    for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(got[i], input[i] + round * 3 + 1) << "round " << round << ", at " << i;
  }
}

// A bound copy queue with patched source and destination, checked each time.
TEST_P(ConformanceQueueOps, BoundCopyQueueResubmitted) {
  if (!has_copy_queue()) GTEST_SKIP() << dev().name() << " has no copy queue";
  constexpr int kSlots = 8;
  DeviceMemory src(dev(), kSlots * 8, kHostVisible), dst(dev(), kSlots * 8, kHostVisible);
  auto* s = reinterpret_cast<uint64_t*>(src.host());
  for (int i = 0; i < kSlots; ++i) s[i] = 0xA000 + i;
  std::memset(dst.host(), 0, kSlots * 8);

  auto q = dev().copy_queue();
  q->wait(dev().timeline_signal(), Var{0} - 1);
  q->copy(Var{1}, Var{2}, 8);
  q->signal(dev().timeline_signal(), Var{0});
  q->bind();
  for (int i = 0; i < kSlots; ++i) {
    // Slot i of dst gets slot (kSlots-1-i) of src.
    uint64_t value = hcq::test::take_timeline_value(dev());
    std::array<uint64_t, 3> vars{value, dst.va() + 8 * i, src.va() + 8 * (kSlots - 1 - i)};
    q->submit(vars);
    wait_timeline(value);
    auto got = dst.download_as<uint64_t>(kSlots);
    for (int j = 0; j < kSlots; ++j)
      ASSERT_EQ(got[j], j <= i ? 0xA000u + (kSlots - 1 - j) : 0u) << "after copy " << i << ", slot " << j;
  }
}

// tinygrad's test_memory_barrier: the host writes device memory, a barrier makes it visible to the kernel.
TEST_P(ConformanceQueueOps, MemoryBarrierBeforeKernel) {
  auto add_one = load(kernels().add_one_u8);
  DeviceMemory out(dev(), 2, BufferSpec{.nolru = true}), in(dev(), 2, kHostVisible);
  for (int i = 0; i < 255; ++i) {
    std::memset(in.host(), i, 2);
    auto q = dev().compute_queue();
    wait_previous(*q);
    q->memory_barrier();
    q->exec(*add_one, LaunchArgs{{out.va(), in.va()}, {2u}}, Dims{1u, 1u, 1u}, Dims{2u, 1u, 1u});
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    auto got = out.download_as<uint8_t>(2);
    ASSERT_EQ(got[0], i + 1) << "iteration " << i;
    ASSERT_EQ(got[1], i + 1) << "iteration " << i;
  }
}

// tinygrad's test_memory_barrier_before_copy: a barrier on the compute queue, then copies on the copy queue,
// ordered by the timeline.
TEST_P(ConformanceQueueOps, MemoryBarrierBeforeCopy) {
  if (!has_copy_queue()) GTEST_SKIP() << dev().name() << " has no copy queue";
  DeviceMemory first(dev(), 1, BufferSpec{.nolru = true}), second(dev(), 1, BufferSpec{.nolru = true});
  DeviceMemory src(dev(), 1, kHostVisible);
  for (int i = 0; i < 256; ++i) {
    src.host()[0] = static_cast<std::byte>(i);
    auto barrier = dev().compute_queue();
    wait_previous(*barrier);
    barrier->memory_barrier();
    signal_next(*barrier);
    barrier->submit();

    auto copies = dev().copy_queue();
    wait_previous(*copies);
    copies->copy(first.va(), src.va(), 1);
    copies->copy(second.va(), first.va(), 1);
    uint64_t value = signal_next(*copies);
    copies->submit();
    wait_timeline(value);
    ASSERT_EQ(second.download()[0], static_cast<std::byte>(i)) << "iteration " << i;
  }
}

// write: 32-bit and 64-bit stores in order with the queue, constant and patched, touching nothing else.
TEST_P(ConformanceQueueOps, Write32And64) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    DeviceMemory mem(dev(), 64, kHostVisible);
    std::memset(mem.host(), 0xAB, 64);
    auto q = dev().new_queue(qk);
    q->wait(dev().timeline_signal(), Var{2} - 1);
    q->write(mem.va() + 4, 0xdeadbeefu, Width::b32);
    q->write(mem.va() + 16, 0x0123456789abcdefull, Width::b64);
    q->write(Var{0}, Var{1}, Width::b64);
    q->write(Var{0} + 12, Var{3} + 1, Width::b32);
    q->signal(dev().timeline_signal(), Var{2});

    uint64_t value = hcq::test::take_timeline_value(dev());
    std::array<uint64_t, 4> vars{mem.va() + 32, 0xfedcba9876543210ull, value, 0x76543210};
    q->submit(vars);
    wait_timeline(value);

    auto got = mem.download();
    std::vector<std::byte> want(64, std::byte{0xAB});
    auto put = [&](size_t at, uint64_t v, size_t n) { std::memcpy(want.data() + at, &v, n); };
    put(4, 0xdeadbeefu, 4);
    put(16, 0x0123456789abcdefull, 8);
    put(32, 0xfedcba9876543210ull, 8);
    put(44, 0x76543211u, 4);
    for (size_t i = 0; i < 64; ++i) ASSERT_EQ(got[i], want[i]) << "at byte " << i;
  }
}

// poll_bit: the queue blocks until every bit of the mask is set (or clear); a partial match is not enough.
TEST_P(ConformanceQueueOps, PollBitSet) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    DeviceMemory mem(dev(), 8, kHostVisible);
    auto* word = reinterpret_cast<uint32_t*>(mem.host());
    std::atomic_ref<uint32_t> bits(*word);
    bits.store(0x1, std::memory_order_release);  // a bit outside the mask: irrelevant
    auto q = dev().new_queue(qk);
    q->poll_bit(mem.va(), 0x30, /*set=*/true);
    uint64_t value = signal_next(*q);
    q->submit();

    EXPECT_TRUE(timeline_blocked_before(value)) << "poll_bit(set) passed with no bit of the mask set";
    bits.store(0x11, std::memory_order_release);
    EXPECT_TRUE(timeline_blocked_before(value)) << "poll_bit(set) passed with only part of the mask set";
    bits.store(0x31, std::memory_order_release);
    wait_timeline(value);
  }
}

TEST_P(ConformanceQueueOps, PollBitClear) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    DeviceMemory mem(dev(), 8, kHostVisible);
    auto* word = reinterpret_cast<uint32_t*>(mem.host());
    std::atomic_ref<uint32_t> bits(*word);
    bits.store(0xff, std::memory_order_release);
    auto q = dev().new_queue(qk);
    q->poll_bit(mem.va(), 0x6, /*set=*/false);
    uint64_t value = signal_next(*q);
    q->submit();

    EXPECT_TRUE(timeline_blocked_before(value)) << "poll_bit(clear) passed with the mask's bits set";
    bits.store(0xfd, std::memory_order_release);
    EXPECT_TRUE(timeline_blocked_before(value)) << "poll_bit(clear) passed with one bit of the mask still set";
    bits.store(0xf9, std::memory_order_release);
    wait_timeline(value);
  }
}

// poll_bit's address is a variable.
TEST_P(ConformanceQueueOps, PollBitPatchedAddress) {
  DeviceMemory mem(dev(), 16, kHostVisible);
  auto* words = reinterpret_cast<uint32_t*>(mem.host());
  std::atomic_ref<uint32_t>(words[0]).store(0, std::memory_order_release);
  std::atomic_ref<uint32_t>(words[2]).store(0x8, std::memory_order_release);
  auto q = dev().compute_queue();
  q->poll_bit(Var{0}, 0x8, /*set=*/true);
  q->signal(dev().timeline_signal(), Var{1});
  uint64_t value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 2> vars{mem.va() + 8, value};
  q->submit(vars);
  wait_timeline(value);  // polls words[2], which has the bit; words[0] would block forever
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceQueueOps);

}  // namespace
}  // namespace hcq::conformance
