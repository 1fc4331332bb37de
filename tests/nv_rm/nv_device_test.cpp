// The NV backend (drivers/nv/rm) brought up on the simulated RM + UVM driver: device info per architecture, memory
// in VRAM and host mapped at the same VA on the host and the GPU, channels with their doorbell, driver version
// checks, and RM failures surfacing as typed errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/nv_channel.hpp"
#include "nv/rm/nv_device.hpp"
#include "sim/nv/sim_nv.hpp"
#include "sim/sim_os.hpp"

namespace hcq::nv {
namespace {

struct SimMachine {
  std::shared_ptr<sim::SimNv> driver;
  std::shared_ptr<sim::SimOs> os;
};

SimMachine machine(const std::string& gpu,
                   const std::string& version = std::string(sim::SimNv::kDefaultDriverVersion)) {
  SimMachine m;
  m.driver = std::make_shared<sim::SimNv>(std::vector<std::string>{gpu}, sim::ChannelRunnerFactory{}, version);
  m.os = std::make_shared<sim::SimOs>(std::vector<std::shared_ptr<sim::SimDriver>>{m.driver});
  return m;
}

std::unique_ptr<NvDevice> open(const SimMachine& m, const std::string& gpu) {
  auto dev = open_nv_device_on("SIM-NV:" + gpu, m.os, 0, "sim-rm");
  return std::unique_ptr<NvDevice>(static_cast<NvDevice*>(dev.release()));
}

class NvDeviceOnSim : public ::testing::TestWithParam<const char*> {};

TEST_P(NvDeviceOnSim, BringUpReportsTheGpu) {
  const std::string gpu = GetParam();
  SimMachine m = machine(gpu);
  auto dev = open(m, gpu);
  const sim::SimNvGpuSpec& spec = m.driver->gpu_spec(0);
  const DeviceInfo i = dev->info();
  EXPECT_EQ(i.name, "SIM-NV:" + gpu);
  EXPECT_EQ(i.interface, "sim-rm");
  EXPECT_EQ(i.arch, cat("sm_", spec.sm_version));
  EXPECT_EQ(i.memory_bytes, spec.vram_bytes);
  EXPECT_NE(i.driver_version.find(std::string(sim::SimNv::kDefaultDriverVersion)), std::string::npos)
      << i.driver_version;
  const NvGpuFacts& f = dev->gpu().facts();
  EXPECT_EQ(f.arch->arch, spec.arch);
  EXPECT_EQ(f.sm_count, spec.sm_count);
  EXPECT_NE(f.usermode_class, 0u);
  EXPECT_NE(dev->gpu().doorbell(), nullptr);
  // The first queue makes the channel group: a compute and a copy channel, each rung once with its setup methods
  // (nothing executes them here: this machine has no runner).
  auto compute = dev->compute_queue();
  auto copy = dev->copy_queue();
  EXPECT_EQ(compute->kind(), QueueKind::compute);
  EXPECT_EQ(copy->kind(), QueueKind::copy);
  const std::vector<sim::SimNv::ChannelState> channels = m.driver->channels();
  ASSERT_EQ(channels.size(), 2u);
  for (const sim::SimNv::ChannelState& c : channels) {
    EXPECT_TRUE(c.scheduled);
    EXPECT_GE(c.doorbells, 1u);
    EXPECT_FALSE(c.faulted);
  }
}

// The error notifier is mapped on the host and polled by waits: a fault RM reports (here injected into the
// simulated RM, no GPU executor) ends synchronize at once with the sticky DeviceFault.
TEST_P(NvDeviceOnSim, ChannelFaultBecomesTheStickyDeviceFault) {
  const std::string gpu = GetParam();
  SimMachine m = machine(gpu);
  auto dev = open(m, gpu);
  auto q = dev->copy_queue();
  uint32_t copy_channel = ~0u;
  const uint32_t copy_class = dev->gpu().facts().arch->classes.copy;
  for (const sim::SimNv::ChannelState& c : m.driver->channels())
    for (uint32_t k : c.engine_classes)
      if (k == copy_class) copy_channel = c.desc.channel_id;
  ASSERT_NE(copy_channel, ~0u);
  sim::ChannelFault f;
  f.kind = sim::ChannelFaultKind::mmu_fault;
  f.address = 0x1234000;
  f.reason = "injected";
  m.driver->inject_fault(0, copy_channel, f);
  q->signal(dev->timeline_signal(), hcq::test::take_timeline_value(*dev));
  q->submit();
  const auto t0 = std::chrono::steady_clock::now();
  std::string first;
  try {
    dev->synchronize();
    ADD_FAILURE() << "synchronize returned";
  } catch (const DeviceFault& e) {
    first = e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(first.find("MMU fault (RM error 31"), std::string::npos) << first;
  EXPECT_NE(first.find("copy channel"), std::string::npos) << first;
  EXPECT_NE(first.find("kernel log"), std::string::npos) << first;  // no simulator details on this device
  try {
    dev->synchronize();
    ADD_FAILURE() << "the second synchronize returned";
  } catch (const DeviceFault& e) {
    EXPECT_EQ(first, e.what());
  }
}

TEST_P(NvDeviceOnSim, MemoryIsTheSameBytesOnHostAndGpu) {
  const std::string gpu = GetParam();
  SimMachine m = machine(gpu);
  auto dev = open(m, gpu);
  struct Case {
    const char* what;
    BufferSpec spec;
  };
  BufferSpec vram_mapped;
  vram_mapped.cpu_access = true;
  BufferSpec host;
  host.host = true;
  BufferSpec uncached;
  uncached.uncached = true;
  for (const Case& c : {Case{"vram+cpu", vram_mapped}, Case{"host", host}, Case{"uncached", uncached}}) {
    SCOPED_TRACE(c.what);
    const uint64_t size = 3 * 4096 + 100;
    const uint64_t before = dev->bytes_in_use();
    Allocation a = dev->alloc_memory(size, c.spec);
    ASSERT_TRUE(a.host_mapped);
    EXPECT_GE(dev->bytes_in_use(), before + size);
    auto* host_bytes = static_cast<uint8_t*>(a.host_ptr());
    for (uint64_t i = 0; i < size; ++i) host_bytes[i] = static_cast<uint8_t>(i * 7 + 1);
    // The GPU's view of the VA (what the engine reads) is the same memory.
    const std::byte* gpu_bytes = m.driver->translate(0, a.va, size);
    ASSERT_NE(gpu_bytes, nullptr);
    EXPECT_EQ(std::memcmp(gpu_bytes, host_bytes, size), 0);
    // Through the process's own mapping, not an alias of it: the host's and the engine's atomics (GPPut, GPGet,
    // semaphores) must meet at one address for their ordering to hold for every observer (ThreadSanitizer too).
    EXPECT_EQ(static_cast<const void*>(gpu_bytes), static_cast<const void*>(host_bytes));
    const uint64_t va = a.va;
    dev->free_memory(a);
    EXPECT_EQ(dev->bytes_in_use(), before);
    EXPECT_EQ(m.driver->translate(0, va, 1), nullptr) << "still mapped on the GPU after free";
  }
  // VRAM the host does not see is still mapped on the GPU.
  Allocation v = dev->alloc_memory(1 << 20, BufferSpec{});
  EXPECT_FALSE(v.host_mapped);
  EXPECT_NE(m.driver->translate(0, v.va, 1 << 20), nullptr);
  dev->free_memory(v);
}

TEST_P(NvDeviceOnSim, SignalsAreMappedOnTheGpu) {
  const std::string gpu = GetParam();
  SimMachine m = machine(gpu);
  auto dev = open(m, gpu);
  const Signal& t = dev->timeline_signal();
  EXPECT_NE(m.driver->translate(0, t.addr(), 16), nullptr);
}

TEST_P(NvDeviceOnSim, ChannelsGetTheirRingsTokensAndDoorbell) {
  const std::string gpu = GetParam();
  SimMachine m = machine(gpu);
  auto dev = open(m, gpu);
  {
    NvChannelGroup group(dev->gpu(), {NvEngine::compute, NvEngine::copy}, 1024);
    ASSERT_EQ(group.size(), 2u);
    const NvChannelView& c = group.channel(0).view();
    const NvChannelView& d = group.channel(1).view();
    EXPECT_EQ(c.engine_class, dev->gpu().facts().arch->classes.compute);
    EXPECT_EQ(d.engine_class, dev->gpu().facts().arch->classes.copy);
    EXPECT_NE(c.token, d.token);
    EXPECT_EQ(c.entries, 1024u);
    // The ring and USERD are GPU-visible where the channel says.
    EXPECT_NE(m.driver->translate(0, c.ring_va, 1024 * 8), nullptr);
    c.ring[0] = 0x1234;
    EXPECT_EQ(*reinterpret_cast<const uint64_t*>(m.driver->translate(0, c.ring_va, 8)), 0x1234u);
    EXPECT_EQ(*c.gp_get(), 0u);
    const auto channels = m.driver->channels();
    ASSERT_EQ(channels.size(), 2u);
    for (const auto& s : channels) {
      EXPECT_TRUE(s.scheduled);
      EXPECT_EQ(s.desc.gpfifo_entries, 1024u);
    }
    // Ring the compute channel: its runner (here: the driver's count) sees exactly that doorbell.
    m.os->write_doorbell32(c.doorbell, c.token);
    uint64_t rung = 0;
    for (const auto& s : m.driver->channels())
      if (s.desc.work_submit_token == c.token) rung = s.doorbells;
      else EXPECT_EQ(s.doorbells, 0u);
    EXPECT_EQ(rung, 1u);
  }
  EXPECT_TRUE(m.driver->channels().empty()) << "channels outlived their group";
}

INSTANTIATE_TEST_SUITE_P(Archs, NvDeviceOnSim, ::testing::Values("ampere", "hopper", "blackwell"));

TEST(NvDeviceTwoGpus, ShareTheProcessUvmContextAndItsRanges) {
  // Two GPUs of one driver: one RM client and UVM context, and host pages both map (the signal pool's) share one
  // external range that outlives the first GPU to close.
  auto driver = std::make_shared<sim::SimNv>(std::vector<std::string>{"hopper", "ampere"});
  auto os = std::make_shared<sim::SimOs>(std::vector<std::shared_ptr<sim::SimDriver>>{driver});
  auto a = open_nv_device_on("SIM-NV:a", os, 0, "sim-rm");
  auto b = open_nv_device_on("SIM-NV:b", os, 1, "sim-rm");
  EXPECT_EQ(a->info().arch, "sm_90");
  EXPECT_EQ(b->info().arch, "sm_86");
  EXPECT_EQ(&static_cast<NvDevice&>(*a).gpu().driver(), &static_cast<NvDevice&>(*b).gpu().driver());
  const uint64_t sig = a->timeline_signal().addr();
  EXPECT_NE(driver->translate(0, sig, 16), nullptr);
  EXPECT_NE(driver->translate(1, sig, 16), nullptr);
  b.reset();
  EXPECT_NE(driver->translate(0, sig, 16), nullptr) << "closing one GPU unmapped a page the other still maps";
  // Each GPU's own memory is only on that GPU.
  Allocation m = a->alloc_memory(4096, BufferSpec{});
  EXPECT_NE(driver->translate(0, m.va, 4096), nullptr);
  EXPECT_EQ(driver->translate(1, m.va, 4096), nullptr);
  a->free_memory(m);
}

TEST(NvDeviceVersion, Accepts570And580RefusesOthers) {
  for (const char* v : {"580.126.20", "570.86.15"}) {
    SimMachine m = machine("hopper", v);
    auto dev = open(m, "hopper");
    EXPECT_EQ(dev->gpu().rm().version().text, v);
    EXPECT_EQ(dev->info().driver_version.rfind(v, 0), 0u) << dev->info().driver_version;
  }
  SimMachine m = machine("hopper", "999.1");
  try {
    open(m, "hopper");
    FAIL() << "999.1 accepted";
  } catch (const UnsupportedDriver& e) {
    EXPECT_STREQ(e.what(), "NVIDIA driver 999.1 is not supported (supported branches: 570, 580)");
  }
}

TEST(NvDeviceErrors, RmFailuresAreTypedAndNamed) {
  SimMachine m = machine("ampere");
  auto dev = open(m, "ampere");
  RmClient& rm = dev->gpu().rm();
  try {
    rm.alloc(dev->gpu().device(), 0xdead);
    FAIL() << "class 0xdead allocated";
  } catch (const RmError& e) {
    EXPECT_NE(e.status(), abi::status::ok);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("RM_ALLOC of class 0xdead"), std::string::npos) << msg;
    EXPECT_NE(msg.find("NV_ERR_"), std::string::npos) << msg;
  }
  abi::GidInfoParams gid{};
  try {
    rm.control(0x7777, abi::ctrl::gpu_get_gid_info, gid);
    FAIL() << "control on a handle that does not exist";
  } catch (const RmError& e) {
    EXPECT_NE(std::string(e.what()).find("on 0x7777"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dev->alloc_memory(0, BufferSpec{}), InvalidArgument);
  EXPECT_THROW(open_nv_device_on("SIM-NV:ampere", m.os, 5, "sim-rm"), UnsupportedDriver);
}

}  // namespace
}  // namespace hcq::nv
