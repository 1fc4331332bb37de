// Channel faults on the whole simulated GPU: the simulated RM writes the channel's error notifier as RM does, the
// backend finds it while waiting (NvDevice::poll_fault) and makes it the device's sticky DeviceFault, naming the
// channel, the RM error, the GPFIFO position and entry, the signal values and what the GPU said about the address.
// A faulted device fails fast (no 30 s timeout), every later wait fails the same way, other devices carry on, and
// teardown is prompt.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "nv/facts/methods.hpp"
#include "nv/rm/nv_device.hpp"
#include "sim/nv/sim_nv_device.hpp"

namespace hcq::nv {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// No mapping of the process's VA space lies this low: every GPU access to it faults.
constexpr uint64_t kUnmapped = 0xdead0000;
// A fault must be seen long before the standard 30 s timeout.
constexpr auto kPrompt = 5s;

constexpr const char* kAddValue = R"(
HCQ_KERNEL(add_value_u32, 2, 2) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[i] = HCQ_BUF(uint32_t, 1)[i] + HCQ_VAL(1);
  }
}
)";

std::unique_ptr<Device> open_gpu(const std::string& gpu) { return sim::open_sim_nv_gpu("SIM-NV:" + gpu, gpu); }

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class NvFaultOnSim : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { dev_ = open_gpu(GetParam()); }
  void TearDown() override { dev_.reset(); }
  Device& dev() { return *dev_; }

  // Ends `q` with a timeline signal and submits it.
  void submit(HWQueue& q) {
    q.signal(dev().timeline_signal(), hcq::test::take_timeline_value(dev()));
    q.submit();
  }

  // synchronize() must fail promptly with a DeviceFault; returns its message.
  std::string expect_fault() {
    const auto t0 = Clock::now();
    std::string msg;
    try {
      dev().synchronize();
      ADD_FAILURE() << "synchronize after a fault returned";
    } catch (const DeviceFault& e) {
      msg = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a DeviceFault: " << e.what();
    }
    EXPECT_LT(Clock::now() - t0, kPrompt) << msg;
    return msg;
  }

  // The fault is sticky: synchronize and a wait on any signal raise the same DeviceFault.
  void expect_sticky(const std::string& first) {
    try {
      dev().synchronize();
      ADD_FAILURE() << "the second synchronize returned";
    } catch (const DeviceFault& e) {
      EXPECT_EQ(first, e.what());
    }
    OwnedSignal never(0, "never written");
    const auto t0 = Clock::now();
    try {
      dev().wait_signal(never, 1, 20s);
      ADD_FAILURE() << "a wait on a faulted device returned";
    } catch (const DeviceFault& e) {
      EXPECT_EQ(first, e.what());
    }
    EXPECT_LT(Clock::now() - t0, kPrompt);
  }

  // Another simulated GPU works while this one is faulted.
  void expect_others_unaffected() {
    auto other = open_gpu(GetParam());
    OwnedSignal s(0, "other device");
    auto q = other->copy_queue();
    q->signal(s, 7);
    q->submit();
    other->wait_signal(s, 7, 10s);
    EXPECT_EQ(s->value(), 7u);
    EXPECT_FALSE(other->has_error());
  }

  // Queues and device go without waiting out a timeout.
  void expect_prompt_teardown(std::unique_ptr<HWQueue> q) {
    const auto t0 = Clock::now();
    q.reset();
    dev_.reset();
    EXPECT_LT(Clock::now() - t0, kPrompt);
  }

  std::unique_ptr<Device> dev_;
};

// steady_clock in ns: the simulated GPU's clock.
uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count());
}

// The "at GPU time N ns" of a fault report (RM's notifier time, high word first), or 0.
uint64_t reported_gpu_time(const std::string& msg) {
  const std::string key = "at GPU time ";
  const size_t at = msg.find(key);
  return at == std::string::npos ? 0 : std::stoull(msg.substr(at + key.size()));
}

TEST_P(NvFaultOnSim, CopyFromAnUnmappedAddress) {
  const Allocation dst = dev().alloc_memory(4096, BufferSpec{.cpu_access = true});
  auto q = dev().copy_queue();
  q->copy(dst.va, kUnmapped, 256);
  const uint64_t before = now_ns();
  submit(*q);
  const std::string msg = expect_fault();
  const uint64_t time = reported_gpu_time(msg);
  EXPECT_GE(time, before) << msg;
  EXPECT_LE(time, now_ns()) << msg;
  EXPECT_TRUE(has(msg, "MMU fault (RM error 31")) << msg;
  EXPECT_TRUE(has(msg, "copy channel")) << msg;
  EXPECT_TRUE(has(msg, "GPGet")) << msg;
  EXPECT_TRUE(has(msg, "GPPut")) << msg;
  EXPECT_TRUE(has(msg, "entry at GPGet")) << msg;
  EXPECT_TRUE(has(msg, "LAUNCH_DMA")) << msg;  // the entry's methods, decoded
  EXPECT_TRUE(has(msg, "timeline signal")) << msg;
  EXPECT_TRUE(has(msg, hex(kUnmapped))) << msg;  // the address, from the simulated GPU
  EXPECT_TRUE(dev().has_error());
  expect_sticky(msg);
  expect_others_unaffected();
  dev().free_memory(dst);
  expect_prompt_teardown(std::move(q));
}

// RM recovers a faulted channel's whole channel group: the compute channel, blocked on a semaphore when the copy
// channel faults, never runs again, even once its semaphore is released.
TEST_P(NvFaultOnSim, AFaultStopsTheWholeChannelGroup) {
  OwnedSignal gate(0, "nv gate"), after(0, "nv after");
  auto waiting = dev().compute_queue();
  waiting->wait(gate, 1).signal(after, 1).submit();
  const Allocation dst = dev().alloc_memory(4096, BufferSpec{.cpu_access = true});
  auto copy = dev().copy_queue();
  copy->copy(dst.va, kUnmapped, 256);
  submit(*copy);
  const std::string msg = expect_fault();
  EXPECT_TRUE(has(msg, "stopped with it (same channel group): compute channel")) << msg;
  gate->set_value(1);
  std::this_thread::sleep_for(50ms);  // time for a channel that was still running to pass the acquire
  EXPECT_EQ(after->value(), 0u) << "the compute channel ran on after its group was stopped";
  const std::string state = static_cast<NvDevice&>(dev()).describe_state();
  EXPECT_TRUE(has(state, "stopped with its channel group")) << state;
  dev().free_memory(dst);
  waiting.reset();
  expect_prompt_teardown(std::move(copy));
}

TEST_P(NvFaultOnSim, MalformedMethod) {
  // A method on subchannel 7, to which no class was ever bound: the PBDMA refuses it.
  const std::vector<uint32_t> bad = {pb::header(SecOp::inc_method, 7, 0x200, 1), 0x1234};
  static_cast<NvDevice&>(dev()).submit_raw(NvEngine::compute, bad);
  auto q = dev().compute_queue();
  submit(*q);
  const std::string msg = expect_fault();
  EXPECT_TRUE(has(msg, "PBDMA error (RM error 32")) << msg;
  EXPECT_TRUE(has(msg, "compute channel")) << msg;
  EXPECT_TRUE(has(msg, "entry at GPGet")) << msg;
  EXPECT_TRUE(has(msg, "subchannel 7")) << msg;
  EXPECT_TRUE(has(msg, "timeline signal")) << msg;
  expect_sticky(msg);
  expect_others_unaffected();
  expect_prompt_teardown(std::move(q));
}

// A kernel storing to an address the GPU does not map: an MMU fault (Xid 31) of the SM's L1, as hardware reports it
// (not a GR exception, Xid 13), and RM's record of it names the address and the write.
TEST_P(NvFaultOnSim, KernelTouchingAnUnmappedAddress) {
  if (dev().compiler().identity().find("unavailable") != std::string::npos)
    GTEST_SKIP() << "no NVRTC here: " << dev().compiler().identity();
  const std::vector<uint8_t> cubin = dev().compiler().compile(kAddValue);
  auto prog = dev().load_program("add_value_u32", cubin);
  const Allocation src = dev().alloc_memory(4096, BufferSpec{.cpu_access = true});
  auto q = dev().compute_queue();
  LaunchArgs args;
  args.bufs = {Sym(kUnmapped), Sym(src.va)};
  args.vals = {Sym(uint64_t{64}), Sym(uint64_t{1})};
  q->exec(*prog, args, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
  submit(*q);
  const std::string msg = expect_fault();
  EXPECT_TRUE(has(msg, "MMU fault (RM error 31, Xid 31, on GR0 at GPU time ")) << msg;
  EXPECT_TRUE(has(msg, "compute channel")) << msg;
  EXPECT_TRUE(has(msg, "entry at GPGet")) << msg;
  EXPECT_TRUE(has(msg, "faulting VA " + hex(kUnmapped) + " (PTE fault (no valid page table entry), write access)"))
      << msg;
  expect_sticky(msg);
  expect_others_unaffected();
  dev().free_memory(src);
  q.reset();
  prog.reset();
  const auto t0 = Clock::now();
  dev_.reset();
  EXPECT_LT(Clock::now() - t0, kPrompt);
}

TEST_P(NvFaultOnSim, TimeoutNamesTheChannelEntryAndSignals) {
  OwnedSignal gate(0, "nv gate");
  auto q = dev().compute_queue();
  q->wait(gate, 1);
  submit(*q);
  try {
    dev().wait_signal(dev().timeline_signal(), dev().timeline_value() - 1, 100ms);
    ADD_FAILURE() << "the wait returned";
  } catch (const TimeoutError& e) {
    const std::string msg = e.what();
    EXPECT_TRUE(has(msg, "compute channel")) << msg;
    EXPECT_TRUE(has(msg, "GPGet")) << msg;
    EXPECT_TRUE(has(msg, "entry at GPGet")) << msg;
    EXPECT_TRUE(has(msg, "SEM_EXECUTE")) << msg;  // the acquire it waits at
    EXPECT_TRUE(has(msg, "timeline signal")) << msg;
  }
  gate->set_value(1);
  dev().synchronize();
}

TEST(NvPeerOnSim, SecondGpuMapsTheFirstGpusMemory) {
  auto first = sim::open_sim_nv_gpu("SIM-NV:hopper", "hopper", sim::nv_engine::Scheduling::threaded, 2);
  auto second = sim::open_sim_nv_peer("SIM-NV:hopper:1", *first, 1);
  EXPECT_EQ(second->info().arch, "sm_90");
  EXPECT_THROW(sim::open_sim_nv_peer("SIM-NV:hopper:2", *first, 2), UnsupportedDriver);
  // VRAM of the first GPU, copied by the second GPU's copy engine into its own VRAM.
  const Allocation a = first->alloc_memory(4096, BufferSpec{.cpu_access = true});
  const Allocation b = second->alloc_memory(4096, BufferSpec{.cpu_access = true});
  std::memset(a.host_ptr(), 0x5a, 4096);
  second->map_memory(a);
  auto q = second->copy_queue();
  q->copy(b.va, a.va, 4096);
  q->signal(second->timeline_signal(), hcq::test::take_timeline_value(*second));
  q->submit();
  second->synchronize();
  EXPECT_EQ(std::memcmp(a.host_ptr(), b.host_ptr(), 4096), 0);
  q.reset();
  second->free_memory(b);
  first->free_memory(a);
  second.reset();
  first.reset();
}

INSTANTIATE_TEST_SUITE_P(Gpus, NvFaultOnSim, ::testing::Values("ampere", "hopper", "blackwell"));

}  // namespace
}  // namespace hcq::nv
