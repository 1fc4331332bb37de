// Conformance: two devices of one kind. A queue on one waits a signal a queue on the other writes; copies into
// memory of the peer mapped at the same VA; Buffer::copy_from across devices.
#include <cstring>

#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

class ConformanceMultiDevice : public ConformanceFixture {
 protected:
  void SetUp() override {
    ConformanceFixture::SetUp();
    const auto& peer = conformance_device(GetParam()).peer;
    if (!peer) GTEST_SKIP() << "no second device of " << GetParam() << "'s kind";
    peer_ = &open_device(*peer);
    ASSERT_NE(peer_, &dev()) << "the peer must be another device instance";
    peer_->synchronize();
  }
  void TearDown() override {
    ConformanceFixture::TearDown();
    if (peer_ != nullptr) {
      EXPECT_NO_THROW(peer_->synchronize()) << "peer " << peer_->name();
      EXPECT_FALSE(peer_->has_error()) << "peer " << peer_->name() << " has a sticky error";
    }
  }
  Device& peer() const { return *peer_; }

 private:
  Device* peer_ = nullptr;
};

// tinygrad's test_multidevice_signal_wait, made order-proof: the waiting queue is submitted first and provably
// blocks until the other device signals.
TEST_P(ConformanceMultiDevice, SignalOnOneWaitOnOther) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal shared(0, "cross-device");
    auto waiter = peer().new_queue(qk);
    waiter->wait(shared, 0xfff);
    uint64_t peer_value = signal_next(peer(), *waiter);
    waiter->submit();

    const Signal& peer_timeline = peer().timeline_signal();
    EXPECT_THROW(peer_timeline.wait(peer_value, kBlockedWait), TimeoutError)
        << peer().name() << " passed a wait that " << dev().name() << " has not signalled";

    auto signaller = dev().new_queue(qk);
    signaller->signal(shared, 0xfff);
    uint64_t value = signal_next(*signaller);
    signaller->submit();
    wait_timeline(value);
    wait_timeline(peer(), peer_value);
    EXPECT_EQ(shared->value(), 0xfffu);
  }
}

// A chain bouncing between the two devices' timelines: each step waits the other device's previous step.
TEST_P(ConformanceMultiDevice, PingPong) {
  OwnedSignal ping(0, "ping"), pong(0, "pong");
  constexpr uint64_t kRounds = 16;
  std::vector<std::unique_ptr<HWQueue>> queues;  // kept until the chain is done
  for (uint64_t i = 1; i <= kRounds; ++i) {
    auto a = dev().compute_queue();
    a->wait(pong, i - 1);
    a->signal(ping, i);
    a->submit();
    auto b = peer().compute_queue();
    b->wait(ping, i);
    b->signal(pong, i);
    b->submit();
    queues.push_back(std::move(a));
    queues.push_back(std::move(b));
  }
  pong->wait(kRounds);
  EXPECT_EQ(ping->value(), kRounds);
}

// tinygrad's test_small_copies_from_host_buf_transfer: the peer's memory, mapped into this device at the same
// VA, is the destination of this device's copy queue.
TEST_P(ConformanceMultiDevice, SmallCopiesIntoPeerMemory) {
  if (!has_copy_queue()) GTEST_SKIP() << dev().name() << " has no copy queue";
  DeviceMemory mid(dev(), 1, BufferSpec{.nolru = true});
  DeviceMemory src(dev(), 1, BufferSpec{.host = true, .nolru = true});
  DeviceMemory on_peer(peer(), 1, BufferSpec{.nolru = true});
  dev().map_memory(on_peer.allocation());
  for (int i = 0; i < 256; ++i) {
    src.host()[0] = static_cast<std::byte>(i);
    auto q = dev().copy_queue();
    wait_previous(*q);
    q->copy(mid.va(), src.va(), 1);
    q->copy(on_peer.va(), mid.va(), 1);
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    ASSERT_EQ(on_peer.download()[0], static_cast<std::byte>(i)) << "copy " << i;
  }
}

// tinygrad's test_map_cpu_buffer_to_device: host memory of the CPU device, mapped into each device at the same VA,
// is the source of that device's copy queue.
TEST_P(ConformanceMultiDevice, MapCpuBufferToDevice) {
  if (!has_copy_queue()) GTEST_SKIP() << dev().name() << " has no copy queue";
  constexpr uint64_t kSize = 0x2000;
  Device& cpu = open_device("CPU:0");
  DeviceMemory host(cpu, kSize, BufferSpec{.cpu_access = true});
  for (uint64_t i = 0; i < kSize; ++i) host.host()[i] = static_cast<std::byte>(i & 0xff);
  for (Device* d : {&dev(), &peer()}) {
    SCOPED_TRACE(d->name());
    DeviceMemory local(*d, kSize, BufferSpec{.cpu_access = true});
    d->map_memory(host.allocation());
    auto q = d->copy_queue();
    wait_previous(*d, *q);
    q->copy(local.va(), host.va(), kSize);
    uint64_t value = signal_next(*d, *q);
    q->submit();
    wait_timeline(*d, value);
    auto got = local.download();
    EXPECT_EQ(std::memcmp(got.data(), host.host(), kSize), 0);
  }
}

// The runtime's device-to-device transfer (the reference protocol) through Buffer::copy_from, both ways.
TEST_P(ConformanceMultiDevice, BufferCopyFromPeer) {
  constexpr size_t kN = 4096;
  std::vector<uint32_t> data(kN);
  for (size_t i = 0; i < kN; ++i) data[i] = static_cast<uint32_t>(i * 2654435761u);
  Buffer here(dev(), kN * 4), there(peer(), kN * 4), back(dev(), kN * 4);
  here.copyin(std::span<const uint32_t>(data));
  there.copy_from(here);
  back.copy_from(there);
  std::vector<uint32_t> got(kN), got_there(kN);
  there.copyout(std::span<uint32_t>(got_there));
  back.copyout(std::span<uint32_t>(got));
  EXPECT_EQ(got_there, data);
  EXPECT_EQ(got, data);
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceMultiDevice);

}  // namespace
}  // namespace hcq::conformance
