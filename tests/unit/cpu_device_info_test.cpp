// The CPU device's DeviceInfo: the launch limits its programs and its worker check (drivers/cpu/cpu_limits.hpp),
// no UUID, and copies that run on the compute queue as well.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cpu/cpu_limits.hpp"
#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"

namespace hcq {
namespace {

TEST(CpuDeviceInfo, LaunchLimitsAreTheDevicesOwn) {
  const LaunchLimits got = open_device("CPU").info().launch_limits;
  const LaunchLimits& want = cpu::kCpuLaunchLimits;
  EXPECT_EQ(got.max_threads_per_group, want.max_threads_per_group);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(got.max_local[i], want.max_local[i]) << "dim " << i;
    EXPECT_EQ(got.max_global[i], want.max_global[i]) << "dim " << i;
  }
}

// A workgroup's threads run one after another (a wave of 1), shared arrays have the thread runner's 64 KiB, and
// the units are the worker threads HCQ_CPU_THREADS asks for (knobs.md).
TEST(CpuDeviceInfo, WaveSharedMemoryAndUnits) {
  const DeviceInfo i = open_device("CPU").info();
  EXPECT_EQ(i.wave_size, 1u);
  EXPECT_EQ(i.shared_memory_bytes, 64u * 1024);
  EXPECT_EQ(i.compute_units, knobs::cpu_threads());
}

TEST(CpuDeviceInfo, HasNoUuid) { EXPECT_FALSE(open_device("CPU").info().uuid.has_value()); }

// copies_on_compute is true: a copy on the compute queue runs.
TEST(CpuDeviceInfo, CopiesRunOnTheComputeQueue) {
  Device& dev = open_device("CPU");
  ASSERT_TRUE(dev.info().copies_on_compute);
  BufferSpec spec;
  spec.cpu_access = true;
  const Allocation src = dev.alloc_memory(64, spec), dst = dev.alloc_memory(64, spec);
  std::vector<std::byte> want(64);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<std::byte>(i * 7 + 1);
  std::memcpy(src.host_ptr(), want.data(), want.size());
  std::memset(dst.host_ptr(), 0, 64);
  auto q = dev.compute_queue();
  dev.submit(*q, [&](HWQueue& b) { b.copy(dst.va, src.va, 64); }).wait();
  EXPECT_EQ(std::memcmp(dst.host_ptr(), want.data(), want.size()), 0);
  dev.free_memory(src);
  dev.free_memory(dst);
}

}  // namespace
}  // namespace hcq
