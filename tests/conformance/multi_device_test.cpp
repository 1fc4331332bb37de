// Conformance: two devices of one kind. A queue on one waits a signal a queue on the other writes; copies into
// memory of the peer mapped at the same VA; Buffer::copy_from across devices.
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

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

// Peer copies are ordered by the bytes they touch (Device::defer_join). The setup: a third device, `gate`, holds
// its next work until the host says so; the peer drives a copy into the gate device's memory, which waits for that,
// and so holds up the peer's timeline. Returns the gate's signal: set it to 1 to let everything run.
class PeerCopyOrder : public ConformanceMultiDevice {
 protected:
  static constexpr size_t kN = 4096;
  void SetUp() override {
    ConformanceMultiDevice::SetUp();
    if (IsSkipped()) return;
    // A third device: another CPU device when these are CPU devices, else CPU:0, whose memory every device maps.
    gate_dev_ = &open_device(dev().name().rfind("CPU", 0) == 0 ? "CPU:2" : "CPU:0");
    for (size_t i = 0; i < kN; ++i) {
      mine_[i] = static_cast<uint32_t>(i * 2654435761u);
      theirs_[i] = static_cast<uint32_t>(i * 40503u + 7);
    }
  }
  void TearDown() override {
    open_gate();  // whatever a failed expectation left waiting
    if (gate_dev_ != nullptr) {
      EXPECT_NO_THROW(gate_dev_->synchronize());
    }
    ConformanceMultiDevice::TearDown();
  }
  // Closes the gate and has the peer's timeline wait behind it (a copy of `z` on the peer into the gate device).
  void hold_up_the_peer(Buffer& z, Buffer& g) {
    auto q = gate_dev_->compute_queue();
    gate_dev_->submit(*q, [&](HWQueue& hq) { hq.wait(gate_, 1); });
    g.copy_from(z);
  }
  void open_gate() { gate_->set_value(1); }
  // Opens the gate from another thread after kBlockedWait: join the thread it returns.
  std::thread open_gate_soon() {
    return std::thread([this] {
      std::this_thread::sleep_for(kBlockedWait);
      open_gate();
    });
  }
  // A copy of `theirs_` from the peer into `b0` (on this device) that the peer drives, held up behind the gate.
  Completion held_up_copy_into(Buffer& b0) {
    held_.push_back(std::make_unique<Buffer>(peer(), kN * 4));
    Buffer& a1 = *held_.back();
    held_.push_back(std::make_unique<Buffer>(peer(), kN * 4));
    Buffer& z1 = *held_.back();
    held_.push_back(std::make_unique<Buffer>(*gate_dev_, kN * 4));
    Buffer& g = *held_.back();
    a1.copyin(std::span<const uint32_t>(theirs_));
    peer().synchronize();
    hold_up_the_peer(z1, g);
    return b0.copy_from(a1);
  }
  std::vector<uint32_t> read(const Buffer& b) {
    std::vector<uint32_t> got(kN);
    b.copyout(std::span<uint32_t>(got));
    return got;
  }

  Device* gate_dev_ = nullptr;
  OwnedSignal gate_{0, "gate"};
  std::vector<std::unique_ptr<Buffer>> held_;  // held_up_copy_into's buffers, kept until the test ends
  std::vector<uint32_t> mine_ = std::vector<uint32_t>(kN), theirs_ = std::vector<uint32_t>(kN);
};

// Two devices copying to each other: the copy into the peer does not wait for the peer's copy the other way (held
// up here), since nothing queued on the peer touches its destination. Before, it waited for the peer's whole timeline
// and the two directions ran one after the other.
TEST_P(PeerCopyOrder, CopiesBetweenTwoDevicesDoNotWaitForEachOther) {
  Buffer a0(dev(), kN * 4), b0(dev(), kN * 4), a1(peer(), kN * 4), b1(peer(), kN * 4), z1(peer(), kN * 4);
  Buffer g(*gate_dev_, kN * 4);
  a0.copyin(std::span<const uint32_t>(mine_));
  a1.copyin(std::span<const uint32_t>(theirs_));
  dev().synchronize();
  peer().synchronize();
  hold_up_the_peer(z1, g);
  const Completion back = b0.copy_from(a1);   // driven by the peer: behind the held-up copy
  const Completion there = b1.copy_from(a0);  // driven by this device: free to run
  EXPECT_NO_THROW(dev().wait_signal(dev().timeline_signal(), there.value(), std::chrono::seconds(20)))
      << "the copy into " << peer().name() << " waited for " << peer().name() << "'s copy the other way";
  EXPECT_FALSE(back.done()) << "the held-up copy ran: the test proves nothing";
  open_gate();
  back.wait();
  EXPECT_EQ(read(b1), mine_);
  EXPECT_EQ(read(b0), theirs_);
}

// A copy into this device that another device drives, still pending: this device's next submission waits for it,
// a host read of its destination waits for it, and so does synchronize().
TEST_P(PeerCopyOrder, WorkOnTheDestinationWaitsForAPendingCopy) {
  Buffer b0(dev(), kN * 4);
  const Completion copied = held_up_copy_into(b0);
  auto q = dev().compute_queue();
  const Completion next = dev().submit(*q, [](HWQueue&) {});
  EXPECT_THROW(dev().wait_signal(dev().timeline_signal(), next.value(), kBlockedWait), TimeoutError)
      << dev().name() << "'s next submission ran before the copy into its memory";
  EXPECT_FALSE(copied.done());
  std::thread opener = open_gate_soon();
  dev().synchronize();
  EXPECT_TRUE(copied.done()) << "synchronize() returned before the copy into " << dev().name() << "'s memory";
  opener.join();
  EXPECT_EQ(read(b0), theirs_);
}

// The same, read by the host at once (Buffer::copyout), before any other submission on this device.
TEST_P(PeerCopyOrder, AHostReadWaitsForAPendingCopy) {
  Buffer b0(dev(), kN * 4);
  held_up_copy_into(b0);
  std::thread opener = open_gate_soon();
  EXPECT_EQ(read(b0), theirs_);
  opener.join();
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceMultiDevice);
HCQ_CONFORMANCE_INSTANTIATE(PeerCopyOrder);

}  // namespace
}  // namespace hcq::conformance
