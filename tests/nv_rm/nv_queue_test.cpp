// NV queues (drivers/nv/rm/nv_queue.cpp) on the whole simulated GPU (SIM-NV: RM simulator + channel executor +
// host twins): signals, waits released by the host, timestamps, writes, copies (and the 2 GiB LAUNCH_DMA split),
// bound queues resubmitted with patched variables, GPFIFO ring and pushbuffer wrap with backpressure from GPGet,
// and the shape of what reaches the channel.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "nv/decode.hpp"
#include "nv/encode.hpp"
#include "nv/rm/nv_device.hpp"
#include "sim/nv/sim_nv_device.hpp"

namespace hcq::nv {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Device> open_gpu(const std::string& gpu) { return sim::open_sim_nv_gpu("SIM-NV:" + gpu, gpu); }

// Host-visible device memory, freed with its scope.
class Mem {
 public:
  Mem(Device& dev, uint64_t size, BufferSpec spec = BufferSpec{.cpu_access = true})
      : dev_(dev), a_(dev.alloc_memory(size, spec)) {
    std::memset(host(), 0, size);
  }
  ~Mem() { dev_.free_memory(a_); }
  uint64_t va() const { return a_.va; }
  std::byte* host() const { return static_cast<std::byte*>(a_.host_ptr()); }
  template <typename T>
  T& at(size_t byte_offset) const {
    return *reinterpret_cast<T*>(host() + byte_offset);
  }

 private:
  Device& dev_;
  Allocation a_;
};

// How many times `op` appears among the decoded methods of `words`.
size_t count_methods(std::span<const uint32_t> words, const NvArchInfo& arch, std::string_view op) {
  size_t n = 0;
  for (const DecodedEntry& e : decode_pushbuffer(words, arch)) {
    EXPECT_TRUE(e.ok()) << e.op << ": " << e.error;
    if (e.op == op) ++n;
  }
  return n;
}

const NvArchInfo& arch_of(Device& dev) { return *static_cast<NvDevice&>(dev).gpu().facts().arch; }

class NvQueueOnSim : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { dev_ = open_gpu(GetParam()); }
  void TearDown() override { dev_.reset(); }
  Device& dev() { return *dev_; }
  // Waits for the timeline to reach `value`, on the standard timeout.
  void wait_timeline(uint64_t value) { dev().wait_signal(dev().timeline_signal(), value, 10s); }
  std::unique_ptr<Device> dev_;
};

TEST_P(NvQueueOnSim, InfoCountsOneQueueOfEachKind) {
  const DeviceInfo i = dev().info();
  EXPECT_EQ(i.compute_queues, 1u);
  EXPECT_EQ(i.copy_queues, 1u);
}

TEST_P(NvQueueOnSim, SignalOnBothQueuesWritesValueAndClock) {
  for (QueueKind k : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(k));
    OwnedSignal s(0, "nv signal");
    auto q = dev().new_queue(k);
    q->signal(s, 0x1'0000'0005ull);  // 64-bit
    q->submit();
    dev().wait_signal(s, 0x1'0000'0005ull, 10s);
    EXPECT_EQ(s->value(), 0x1'0000'0005ull);
    EXPECT_NE(s->timestamp(), 0u);
  }
}

TEST_P(NvQueueOnSim, WaitIsReleasedByTheHost) {
  for (QueueKind k : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(k));
    OwnedSignal gate(0, "nv gate"), done(0, "nv done");
    auto q = dev().new_queue(k);
    q->wait(gate, 0x2'0000'0000ull);  // a 64-bit compare: the low word alone never satisfies it
    q->signal(done, 1);
    q->submit();
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(done->value(), 0u);
    gate->set_value(0xffff'ffffull);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(done->value(), 0u) << "the wait passed on the low 32 bits";
    gate->set_value(0x2'0000'0000ull);
    dev().wait_signal(done, 1, 10s);
  }
}

TEST_P(NvQueueOnSim, TimestampKeepsTheValue) {
  for (QueueKind k : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(k));
    OwnedSignal s(42, "nv timestamp"), done(0, "nv done");
    auto q = dev().new_queue(k);
    q->timestamp(s);
    q->signal(done, 1);
    q->submit();
    dev().wait_signal(done, 1, 10s);
    EXPECT_EQ(s->value(), 42u);
    EXPECT_NE(s->timestamp(), 0u);
    EXPECT_LE(s->timestamp(), done->timestamp());
  }
}

TEST_P(NvQueueOnSim, WritesConstantAndPatched) {
  for (QueueKind k : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(k));
    Mem m(dev(), 64);
    std::memset(m.host(), 0xab, 64);
    OwnedSignal done(0, "nv done");
    auto q = dev().new_queue(k);
    q->write(m.va() + 4, 0xdeadbeefu, Width::b32);
    q->write(m.va() + 16, 0x0123456789abcdefull, Width::b64);
    q->write(Var{0}, Var{1}, Width::b64);
    q->signal(done, 1);
    std::vector<uint64_t> vars{m.va() + 32, 0xfedcba9876543210ull};
    q->submit(vars);
    dev().wait_signal(done, 1, 10s);
    EXPECT_EQ(m.at<uint32_t>(0), 0xababababu);
    EXPECT_EQ(m.at<uint32_t>(4), 0xdeadbeefu);
    EXPECT_EQ(m.at<uint32_t>(8), 0xababababu);
    EXPECT_EQ(m.at<uint64_t>(16), 0x0123456789abcdefull);
    EXPECT_EQ(m.at<uint64_t>(32), 0xfedcba9876543210ull);
    EXPECT_EQ(m.at<uint32_t>(40), 0xababababu);
  }
}

TEST_P(NvQueueOnSim, PollBitWaitsForEveryBitOfTheMask) {
  Mem m(dev(), 8);
  std::atomic_ref<uint32_t> bits(m.at<uint32_t>(0));
  OwnedSignal done(0, "nv done");
  auto q = dev().compute_queue();
  q->poll_bit(m.va(), 0x30, true);
  q->signal(done, 1);
  q->submit();
  bits.store(0x10);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(done->value(), 0u);
  bits.store(0x30);
  dev().wait_signal(done, 1, 10s);
}

TEST_P(NvQueueOnSim, SmallCopies) {
  Mem src(dev(), 4096), dst(dev(), 4096, BufferSpec{.cpu_access = true});
  for (int i = 0; i < 4096; ++i) src.host()[i] = static_cast<std::byte>(i * 7);
  OwnedSignal done(0, "nv done");
  auto q = dev().copy_queue();
  q->copy(dst.va(), src.va(), 8);
  q->copy(dst.va() + 100, src.va() + 100, 3000);
  q->signal(done, 1);
  q->submit();
  dev().wait_signal(done, 1, 10s);
  EXPECT_EQ(std::memcmp(dst.host(), src.host(), 8), 0);
  EXPECT_EQ(dst.at<uint8_t>(8), 0u);
  EXPECT_EQ(std::memcmp(dst.host() + 100, src.host() + 100, 3000), 0);
  EXPECT_EQ(dst.at<uint8_t>(3100), 0u);
}

TEST_P(NvQueueOnSim, CopyOverTheEngineLimitIsSplit) {
  // Encoding only (moving 2 GiB is no unit test): a copy one page over kMaxCopyBytes is two LAUNCH_DMAs, the second
  // starting kMaxCopyBytes in.
  auto q = dev().copy_queue();
  const uint64_t src = 0x10'0000'0000ull, dst = 0x20'0000'0000ull;
  q->copy(dst, src, kMaxCopyBytes + 4096);
  std::vector<uint32_t> words(q->words().begin(), q->words().end());
  EXPECT_EQ(count_methods(words, arch_of(dev()), "LAUNCH_DMA"), 2u);
  std::vector<uint64_t> lengths;
  for (const DecodedEntry& e : decode_pushbuffer(words, arch_of(dev())))
    if (e.op == "LINE_LENGTH_IN") lengths.push_back(e.data);
  EXPECT_EQ(lengths, (std::vector<uint64_t>{kMaxCopyBytes, 4096}));
}

TEST_P(NvQueueOnSim, ExecAndMemoryBarrierOnTheWrongQueueAreRefused) {
  auto copy = dev().copy_queue();
  EXPECT_THROW(copy->memory_barrier(), InvalidArgument);
  auto compute = dev().compute_queue();
  EXPECT_THROW(compute->copy(0x1000, 0x2000, 8), InvalidArgument);
}

TEST_P(NvQueueOnSim, BoundQueueResubmittedWithPatchedVariables) {
  for (QueueKind k : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(k));
    Mem m(dev(), 64);
    OwnedSignal gate(0, "nv gate"), done(0, "nv done");
    auto q = dev().new_queue(k);
    q->wait(gate, Var{0});
    q->write(Var{1}, Var{0}, Width::b64);
    q->signal(done, Var{0});
    q->bind();
    EXPECT_TRUE(q->bound());
    for (uint64_t i = 1; i <= 20; ++i) {
      gate->set_value(i);
      std::vector<uint64_t> vars{i, m.va() + 8 * (i % 8)};
      q->submit(vars);
      dev().wait_signal(done, i, 10s);
      ASSERT_EQ(m.at<uint64_t>(8 * (i % 8)), i);
    }
  }
}

TEST_P(NvQueueOnSim, GpfifoRingWrapsWithBackpressure) {
  // Hold the channel on a wait, then submit more than the ring holds from another thread: the submitter must block
  // on GPGet (never overwriting unfetched entries) until the host releases the wait, then everything runs in order.
  const uint32_t n = NvDevice::kRingEntries + 200;
  OwnedSignal gate(0, "nv gate"), done(0, "nv done");
  auto hold = dev().compute_queue();
  hold->wait(gate, 1);
  hold->submit();
  std::atomic<uint32_t> submitted{0};
  std::thread submitter([&] {
    for (uint32_t i = 1; i <= n; ++i) {
      auto q = dev().compute_queue();
      q->signal(done, i);
      q->submit();
      submitted.store(i);
    }
  });
  std::this_thread::sleep_for(100ms);
  const uint32_t before = submitted.load();
  EXPECT_LT(before, NvDevice::kRingEntries) << "more entries in flight than the ring holds";
  EXPECT_EQ(done->value(), 0u);
  gate->set_value(1);
  submitter.join();
  dev().wait_signal(done, n, 10s);
  EXPECT_EQ(done->value(), n);
}

TEST_P(NvQueueOnSim, PushbufferWrapsWithBackpressure) {
  // Each submission carries ~16 KiB of methods, so the 1 MiB pushbuffer fills long before the GPFIFO ring: the
  // submitter must wait on GPGet for pushbuffer room, and segments skip the end of the pushbuffer rather than wrap.
  constexpr uint32_t kWrites = 1000;  // x 6 dwords
  const uint32_t n = 3 * static_cast<uint32_t>(NvDevice::kPushbufferBytes / (kWrites * 6 * 4)) + 5;
  Mem m(dev(), 8 * kWrites);
  OwnedSignal gate(0, "nv gate"), done(0, "nv done");
  auto hold = dev().compute_queue();
  hold->wait(gate, 1);
  hold->submit();
  std::atomic<uint32_t> submitted{0};
  std::thread submitter([&] {
    for (uint32_t i = 1; i <= n; ++i) {
      auto q = dev().compute_queue();
      for (uint32_t w = 0; w < kWrites; ++w) q->write(m.va() + 8 * w, uint64_t{i} << 20 | w, Width::b64);
      q->signal(done, i);
      q->submit();
      submitted.store(i);
    }
  });
  std::this_thread::sleep_for(200ms);
  EXPECT_LE(submitted.load(), NvDevice::kPushbufferBytes / (kWrites * 6 * 4)) << "the pushbuffer was overrun";
  gate->set_value(1);
  submitter.join();
  dev().wait_signal(done, n, 10s);
  for (uint32_t w = 0; w < kWrites; ++w) ASSERT_EQ(m.at<uint64_t>(8 * w), uint64_t{n} << 20 | w);
}

TEST_P(NvQueueOnSim, HangReportNamesTheChannels) {
  OwnedSignal gate(0, "nv gate");
  auto q = dev().compute_queue();
  q->wait(gate, 1);
  q->submit();
  const std::string s = dev().describe_state();
  EXPECT_NE(s.find("compute channel"), std::string::npos) << s;
  EXPECT_NE(s.find("GPGet"), std::string::npos) << s;
  EXPECT_NE(s.find("busy"), std::string::npos) << s;
  gate->set_value(1);
}

// Holds the compute channel on a wait nobody releases and submits more than its ring holds: exits 3 after printing
// the TimeoutError, 1 if no timeout came.
[[noreturn]] void fill_a_hung_ring() {
  auto dev = open_gpu("hopper");
  OwnedSignal gate(0, "nv gate"), done(0, "nv done");
  auto hold = dev->compute_queue();
  hold->wait(gate, 1);
  hold->submit();
  try {
    for (uint32_t i = 1; i <= 2 * NvDevice::kRingEntries; ++i) {
      auto q = dev->compute_queue();
      q->signal(done, i);
      q->submit();
    }
  } catch (const TimeoutError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    std::_Exit(3);  // the channel stays hung: no destructors
  }
  std::_Exit(1);
}

// A channel that never moves: a submitter out of ring space gives up after the standard timeout with a
// TimeoutError naming the channel, GPGet and GPPut. In a re-executed child, since the timeout knob is read once per
// process and the hung channel must not outlive the test.
TEST(NvRingBackpressure, FullRingTimesOutNamingGpGetAndGpPut) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const char* old = std::getenv("HCQ_WAIT_TIMEOUT_MS");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("HCQ_WAIT_TIMEOUT_MS", "200", 1);
  EXPECT_EXIT(fill_a_hung_ring(), ::testing::ExitedWithCode(3),
              "compute channel 0x[0-9a-f]+: no room for 1 GPFIFO entries.*GPGet stays at 1, GPPut [0-9]+");
  if (old != nullptr) ::setenv("HCQ_WAIT_TIMEOUT_MS", saved.c_str(), 1);
  else ::unsetenv("HCQ_WAIT_TIMEOUT_MS");
}

INSTANTIATE_TEST_SUITE_P(Gpus, NvQueueOnSim, ::testing::Values("ampere", "ga100", "hopper", "blackwell"));

}  // namespace
}  // namespace hcq::nv
