// Faults on SIM-AMD become the device's sticky DeviceFault, as KFD reports them: the simulated GPU faults the
// queue, SimKfd fires the memory- or HW-exception event, and AmdDevice's watcher records a DeviceFault naming the
// fault, the queue, the packet at its read pointer and the timeline signal. Hangs time out with the same facts.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/amd_queue.hpp"
#include "amd/target.hpp"
#include "amd_codeobj/kernels.hpp"
#include "common/timeline.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "sim/kfd/sim_amd_device.hpp"

namespace hcq::amd {
namespace {

using namespace std::chrono_literals;

// Below every allocation of the unified VA space and inside the GPUVM aperture: mapped on no GPU.
constexpr uint64_t kUnmapped = 0x20000;

class AmdFaultTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_amd_gpu(cat("SIM-AMD:", GetParam()), GetParam());
    amd_ = dynamic_cast<AmdDevice*>(dev_.get());
    ASSERT_NE(amd_, nullptr);
  }
  // What synchronize() throws (it must throw DeviceFault).
  std::string sync_fault() {
    try {
      dev_->synchronize();
    } catch (const DeviceFault& e) {
      RecordProperty("fault", e.what());  // in --gtest_output=xml, for reading the message
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "synchronize threw something other than DeviceFault: " << e.what();
      return {};
    }
    ADD_FAILURE() << "synchronize returned on a faulted device";
    return {};
  }
  // The fault is sticky: every later synchronize and device wait raises it again, at once.
  void expect_sticky(const std::string& first) {
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(sync_fault(), first);
    const Signal& t = dev_->timeline_signal();
    EXPECT_THROW(dev_->wait_signal(t, t.value() + 1), DeviceFault);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "a sticky fault must not wait for the timeout";
    EXPECT_TRUE(dev_->has_error());
  }
  uint64_t signal_next(HWQueue& q) {
    const uint64_t v = hcq::test::take_timeline_value(*dev_);
    q.signal(dev_->timeline_signal(), v);
    return v;
  }
  static void expect_has(const std::string& msg, const std::string& what) {
    EXPECT_NE(msg.find(what), std::string::npos) << "no '" << what << "' in: " << msg;
  }

  std::unique_ptr<Device> dev_;
  AmdDevice* amd_ = nullptr;
};

TEST_P(AmdFaultTest, KernelTouchingAnUnmappedAddress) {
  auto prog = dev_->load_program("axpb", test::axpb_code_object(GetParam()));
  BufferSpec spec;
  spec.cpu_access = true;
  spec.zero = true;
  const Allocation in = dev_->alloc_memory(256, spec);
  auto q = dev_->compute_queue();
  q->exec(*prog, LaunchArgs{{Sym(kUnmapped), Sym(in.va)}, {16u, 1u, 0u}}, Dims{1u, 1u, 1u}, Dims{16u, 1u, 1u});
  signal_next(*q);
  q->submit();

  const std::string msg = sync_fault();
  expect_has(msg, dev_->name());
  expect_has(msg, "GPU memory fault at " + hex(kUnmapped));
  expect_has(msg, "page not present");
  expect_has(msg, "compute queue");
  expect_has(msg, "rptr");
  expect_has(msg, "at rptr: ");
  expect_has(msg, "DISPATCH");  // the packet the queue stopped at, decoded
  expect_has(msg, "timeline signal " + hex(dev_->timeline_signal().addr()));
  expect_sticky(msg);
  q.reset();
  prog.reset();
  dev_->free_memory(in);
}

TEST_P(AmdFaultTest, CopyFromAnUnmappedAddress) {
  BufferSpec spec;
  spec.cpu_access = true;
  const Allocation dst = dev_->alloc_memory(4096, spec);
  auto q = dev_->copy_queue();
  q->copy(dst.va, kUnmapped, 64);
  signal_next(*q);
  q->submit();

  const std::string msg = sync_fault();
  expect_has(msg, "GPU memory fault at " + hex(kUnmapped));
  expect_has(msg, "SDMA queue");
  expect_has(msg, "at rptr: COPY_LINEAR");
  expect_sticky(msg);
  q.reset();
  dev_->free_memory(dst);
}

TEST_P(AmdFaultTest, MalformedPacket) {
  // A ring of the device's GPU fed a PM4 type-3 header with an opcode no CP knows, then a signal that must not run.
  AmdRing ring(amd_->gpu(), Target::from_gfx(GetParam()), KfdQueue::Type::compute_pm4, 4096, dev_->name());
  OwnedSignal after(0, "after the bad packet");
  std::vector<uint32_t> words = {0xc000fe00u, 0u};  // type 3, opcode 0xfe (none), one body dword
  Pm4Encoder(Target::from_gfx(GetParam()), words).signal(after->addr(), 1u);
  ring.submit(words, {}, {});
  for (int i = 0; i < 5000 && !dev_->has_error(); ++i) std::this_thread::sleep_for(1ms);

  const std::string msg = sync_fault();
  expect_has(msg, dev_->name());
  expect_has(msg, "GPU hardware exception");
  EXPECT_EQ(after->value(), 0u) << "the queue ran past the malformed packet";
  // The ring says where it stopped, decoded: the unknown opcode.
  const std::string where = ring.describe();
  expect_has(where, "at rptr: OPCODE_0xfe");
  expect_sticky(msg);
}

TEST_P(AmdFaultTest, OtherDevicesAndTheProcessAreUnaffected) {
  std::unique_ptr<Device> other = sim::open_sim_amd_gpu(cat("SIM-AMD:", GetParam(), " (other)"), GetParam());
  BufferSpec spec;
  spec.cpu_access = true;
  const Allocation dst = dev_->alloc_memory(4096, spec);
  auto q = dev_->copy_queue();
  q->copy(dst.va, kUnmapped, 64);
  q->submit();
  for (int i = 0; i < 5000 && !dev_->has_error(); ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(dev_->has_error());

  // The other device runs and synchronizes as before.
  OwnedSignal s(0, "other device");
  auto oq = other->compute_queue();
  oq->signal(s, 5u);
  const uint64_t v = hcq::test::take_timeline_value(*other);
  oq->signal(other->timeline_signal(), v);
  oq->submit();
  EXPECT_NO_THROW(other->synchronize());
  EXPECT_EQ(s->value(), 5u);
  EXPECT_FALSE(other->has_error());
  q.reset();
  dev_->free_memory(dst);
}

TEST_P(AmdFaultTest, AFaultOnOneGpuLeavesItsPeerAlone) {
  // Two GPUs of one simulated machine (one KFD process): KFD tells both about the fault; only its GPU records it.
  dev_.reset();
  dev_ = sim::open_sim_amd_gpu(cat("SIM-AMD:", GetParam()), GetParam(), sim::amd_engine::Scheduling::threaded, 2);
  std::unique_ptr<Device> peer = sim::open_sim_amd_peer(cat("SIM-AMD:", GetParam(), ":1"), *dev_, 1);
  BufferSpec spec;
  spec.cpu_access = true;
  const Allocation dst = dev_->alloc_memory(4096, spec);
  auto q = dev_->copy_queue();
  q->copy(dst.va, kUnmapped, 64);
  q->submit();
  for (int i = 0; i < 5000 && !dev_->has_error(); ++i) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(dev_->has_error());
  std::this_thread::sleep_for(20ms);  // the peer's watcher has seen the exception by now
  EXPECT_FALSE(peer->has_error()) << "another GPU's fault became the peer's";
  OwnedSignal s(0, "peer");
  auto pq = peer->copy_queue();
  pq->signal(s, 9u);
  const uint64_t v = hcq::test::take_timeline_value(*peer);
  pq->signal(peer->timeline_signal(), v);
  pq->submit();
  EXPECT_NO_THROW(peer->synchronize());
  EXPECT_EQ(s->value(), 9u);
  q.reset();
  pq.reset();
  dev_->free_memory(dst);
  peer.reset();
}

TEST_P(AmdFaultTest, HangTimesOutNamingQueuePacketAndSignals) {
  OwnedSignal never(0, "never set");
  auto q = dev_->compute_queue();
  q->wait(never, 3u);
  const uint64_t v = signal_next(*q);
  q->submit();
  std::string msg;
  try {
    dev_->wait_signal(dev_->timeline_signal(), v, 200ms);
  } catch (const TimeoutError& e) {
    msg = e.what();
  }
  ASSERT_FALSE(msg.empty()) << "the hung wait did not time out";
  RecordProperty("timeout", msg);
  expect_has(msg, "compute queue");
  expect_has(msg, "rptr");
  if (std::string(GetParam()) == "gfx942") {
    expect_has(msg, "AQL compute queue");
    expect_has(msg, "at rptr: PM4_IB");  // the wait runs inside the PM4 indirect buffer of that AQL packet
  } else {
    expect_has(msg, "at rptr: WAIT_REG_MEM");
    expect_has(msg, hex(never->addr()));  // the signal the queue waits on, from the decoded packet
  }
  expect_has(msg, "timeline signal " + hex(dev_->timeline_signal().addr()) + " = " + std::to_string(v - 1));
  EXPECT_FALSE(dev_->has_error()) << "a hang is not a fault";
  never->set_value(3);
  EXPECT_NO_THROW(dev_->synchronize());
}

INSTANTIATE_TEST_SUITE_P(SimAmd, AmdFaultTest, ::testing::Values("gfx1100", "gfx942", "gfx1201"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace hcq::amd
