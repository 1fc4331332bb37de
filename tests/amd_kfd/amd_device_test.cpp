// SIM-AMD devices: the real AMD backend brought up on the simulated KFD, its memory and queues.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "amd/kfd/amd_device.hpp"
#include "amd/target.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"
#include "sim/kfd/sim_amd_device.hpp"
#include "sim/kfd/sim_kfd.hpp"
#include "sim/sim_os.hpp"

namespace hcq::sim {
namespace {

class SimAmdDeviceTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = open_sim_amd_device(cat("SIM-AMD:", GetParam()), GetParam());
    amd_ = dynamic_cast<amd::AmdDevice*>(dev_.get());
    ASSERT_NE(amd_, nullptr);
    auto& os = dynamic_cast<SimOs&>(amd_->os());
    kfd_ = dynamic_cast<SimKfd*>(os.drivers().at(0).get());
    ASSERT_NE(kfd_, nullptr);
  }
  std::unique_ptr<Device> dev_;
  amd::AmdDevice* amd_ = nullptr;
  SimKfd* kfd_ = nullptr;
};

TEST_P(SimAmdDeviceTest, Info) {
  const DeviceInfo i = dev_->info();
  EXPECT_EQ(i.name, cat("SIM-AMD:", GetParam()));
  EXPECT_EQ(i.interface, "sim-kfd");
  EXPECT_EQ(i.arch, GetParam());
  EXPECT_EQ(i.memory_bytes, SimGpuSpec::of(GetParam()).vram_bytes);
  EXPECT_GT(i.compute_queues, 0u);
  EXPECT_GT(i.copy_queues, 0u);
  EXPECT_EQ(i.driver_version, "KFD 1.13");
}

TEST_P(SimAmdDeviceTest, MemorySameVaOnHostAndGpu) {
  const uint32_t gpu = kfd_->gpu_id(0);
  for (bool host : {false, true}) {
    BufferSpec spec;
    spec.cpu_access = true;
    spec.host = host;
    const uint64_t before = dev_->bytes_in_use();
    Allocation a = dev_->alloc_memory(10000, spec);
    ASSERT_TRUE(a.host_mapped);
    EXPECT_GE(dev_->bytes_in_use(), before + 10000);
    std::memset(a.host_ptr(), 0x5a, 10000);
    std::byte* g = kfd_->translate(gpu, a.va, 10000);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(static_cast<int>(g[9999]), 0x5a);
    dev_->free_memory(a);
    EXPECT_EQ(kfd_->translate(gpu, a.va, 8), nullptr) << "freed memory is unmapped from the GPU";
    EXPECT_EQ(dev_->bytes_in_use(), before);
    EXPECT_THROW(dev_->free_memory(a), InvalidArgument) << "double free";
  }
  // VRAM the host never maps still exists for the GPU.
  Allocation v = dev_->alloc_memory(1 << 20, BufferSpec{});
  EXPECT_FALSE(v.host_mapped);
  EXPECT_NE(kfd_->translate(gpu, v.va, 1 << 20), nullptr);
  dev_->free_memory(v);
  EXPECT_THROW(dev_->alloc_memory(0, BufferSpec{}), InvalidArgument);
  EXPECT_THROW(dev_->alloc_memory(uint64_t{1} << 45, BufferSpec{}), Error) << "more than the VRAM";
}

TEST_P(SimAmdDeviceTest, SignalsAreMappedOnTheGpu) {
  const Signal& t = dev_->timeline_signal();
  const uint64_t va = t.addr();
  std::byte* g = kfd_->translate(kfd_->gpu_id(0), va, 16);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(reinterpret_cast<uint64_t>(g), va) << "signals are host memory: the GPU sees them at their address";
}

TEST_P(SimAmdDeviceTest, ExternalHostMemory) {
  alignas(4096) static unsigned char host[3 * 4096];
  BufferSpec spec;
  spec.external_ptr = host;
  Allocation a = dev_->alloc_memory(sizeof host, spec);
  EXPECT_EQ(a.va, reinterpret_cast<uint64_t>(host));
  host[4100] = 9;
  std::byte* g = kfd_->translate(kfd_->gpu_id(0), a.va + 4100, 1);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(static_cast<int>(*g), 9);
  dev_->free_memory(a);
}

TEST_P(SimAmdDeviceTest, QueuesAndDoorbells) {
  amd::KfdGpu& gpu = amd_->gpu();
  for (auto type : {amd::KfdQueue::Type::compute_pm4, amd::KfdQueue::Type::sdma, amd::KfdQueue::Type::compute_aql}) {
    auto q = gpu.create_queue(type, 1 << 16);
    const auto st = kfd_->queue_state(q->queue_id());
    ASSERT_TRUE(st);
    EXPECT_EQ(st->desc.ring_va, q->ring_va());
    EXPECT_EQ(st->desc.ring_size, 1u << 16);
    EXPECT_EQ(st->desc.rptr_va, reinterpret_cast<uint64_t>(q->read_ptr()));
    EXPECT_EQ(st->desc.wptr_va, reinterpret_cast<uint64_t>(q->write_ptr()));
    EXPECT_EQ(st->desc.target->name, GetParam());
    EXPECT_NE(kfd_->translate(gpu.gpu_id(), q->ring_va(), 1 << 16), nullptr);
    q->submit(16);
    const auto after = kfd_->queue_state(q->queue_id());
    EXPECT_EQ(after->doorbell_writes, 1u);
    EXPECT_EQ(after->last_doorbell, 16u);
    EXPECT_EQ(*q->write_ptr(), 16u);
    const uint32_t id = q->queue_id();
    q.reset();
    EXPECT_FALSE(kfd_->queue_state(id)) << "destroyed with its RAII owner";
  }
  EXPECT_THROW(gpu.create_queue(amd::KfdQueue::Type::sdma, 3000), InvalidArgument);
  // The HWQueue layer on these rings: tests/amd_kfd/amd_queue_test.cpp.
  EXPECT_NE(dev_->compute_queue(), nullptr);
  EXPECT_NE(dev_->copy_queue(), nullptr);
}

TEST_P(SimAmdDeviceTest, NothingLeaksAtClose) {
  Allocation a = dev_->alloc_memory(4096, BufferSpec{});
  dev_->free_memory(a);
  dev_.reset();  // closes /dev/kfd: the simulated process goes away with everything in it
  SUCCEED();
}

INSTANTIATE_TEST_SUITE_P(Targets, SimAmdDeviceTest, ::testing::Values("gfx942", "gfx1100", "gfx1201"),
                         [](const auto& info) { return std::string(info.param); });

TEST(SimAmdRegistry, OpensByNameAndIsNotTheDefault) {
  Device& d = open_device("SIM-AMD:gfx1100");
  EXPECT_EQ(d.info().arch, "gfx1100");
  EXPECT_EQ(&open_device("sim-amd:gfx1100"), &d) << "one instance per canonical name";
  EXPECT_THROW(open_device("SIM-AMD:gfx9999"), InvalidArgument);
  for (const std::string& name : available_devices()) EXPECT_EQ(name.rfind("SIM-", 0), std::string::npos) << name;
}

}  // namespace
}  // namespace hcq::sim
