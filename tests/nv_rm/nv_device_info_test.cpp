// SIM-NV's DeviceInfo: the UUID is the one the simulated GPU reports (SimNvGpuSpec::uuid), the launch limits are the
// architecture's block size with CUDA's block and grid dims, and copies refuse the compute queue as the field says.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "hcq/error.hpp"
#include "nv/cubin/cubin.hpp"
#include "nv/facts/arch.hpp"
#include "nv/rm/nv_program.hpp"
#include "sim/nv/sim_nv_device.hpp"
#include "sim/nv/sim_nv_gpus.hpp"

namespace hcq::nv {
namespace {

class SimNvDeviceInfoTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { dev_ = sim::open_sim_nv_device("SIM-NV:" + GetParam(), GetParam()); }
  const sim::SimNvGpuSpec& spec() const { return sim::SimNvGpuSpec::of(GetParam()); }
  std::unique_ptr<Device> dev_;
};

TEST_P(SimNvDeviceInfoTest, UuidIsTheSimulatedGpus) {
  const std::vector<uint8_t> want = spec().uuid(0);  // the device is the machine's GPU 0
  const std::optional<std::array<uint8_t, 16>> got = dev_->info().uuid;
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(std::vector<uint8_t>(got->begin(), got->end()), want);
}

TEST_P(SimNvDeviceInfoTest, LaunchLimitsAreTheArchitectures) {
  const hcq::LaunchLimits l = dev_->info().launch_limits;
  EXPECT_EQ(l.max_threads_per_group, spec().arch_info().max_threads_per_block);
  // CUDA's block dims; grids as the QMD's raster fields hold them (width kept below 2^31, height and depth 16 bits).
  const uint32_t local[3] = {1024, 1024, 64}, global[3] = {0x7fffffff, 65535, 65535};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(l.max_local[i], local[i]) << "dim " << i;
    EXPECT_EQ(l.max_global[i], global[i]) << "dim " << i;
  }
}

// A kernel's own limits never pass the device's: registers can only take threads away.
TEST_P(SimNvDeviceInfoTest, ProgramLimitsLieWithinTheDevices) {
  const hcq::LaunchLimits dev = dev_->info().launch_limits;
  for (uint32_t registers : {16u, 32u, 64u, 128u, 255u}) {
    CubinKernel k;
    k.registers = registers;
    const hcq::LaunchLimits p = nv_launch_limits(spec().arch_info(), k);
    EXPECT_LE(p.max_threads_per_group, dev.max_threads_per_group) << registers << " registers";
    for (int i = 0; i < 3; ++i) {
      EXPECT_LE(p.max_local[i], dev.max_local[i]) << registers << " registers, dim " << i;
      EXPECT_LE(p.max_global[i], dev.max_global[i]) << registers << " registers, dim " << i;
    }
  }
}

TEST_P(SimNvDeviceInfoTest, CopiesStayOffTheComputeQueue) {
  EXPECT_FALSE(dev_->info().copies_on_compute);
  auto q = dev_->compute_queue();
  EXPECT_THROW(q->copy(0x1000, 0x2000, 16), InvalidArgument);
}

// NVIDIA's figures for the GPU each simulated one is (data sheets and the CUDA programming guide's per-compute-
// capability table): a warp of 32 everywhere; RTX 3090 (sm_86) 82 SMs, 99 KiB of shared memory per block opted in;
// A100 (sm_80) 108 SMs, 163 KiB; H100 SXM (sm_90) 132 SMs, 227 KiB; B200 (sm_100) 148 SMs, 227 KiB.
TEST_P(SimNvDeviceInfoTest, WarpSharedMemoryAndSmsAreTheGpus) {
  struct Want {
    uint32_t shared_kib, sms;
  };
  const std::string& g = GetParam();
  const Want want = g == "ampere"      ? Want{99, 82}
                    : g == "ga100"     ? Want{163, 108}
                    : g == "hopper"    ? Want{227, 132}
                    : g == "blackwell" ? Want{227, 148}
                                       : Want{0, 0};
  if (want.sms == 0) GTEST_SKIP() << "no published figures written down for " << g;
  const DeviceInfo i = dev_->info();
  EXPECT_EQ(i.wave_size, 32u);
  EXPECT_EQ(i.shared_memory_bytes, want.shared_kib * 1024);
  EXPECT_EQ(i.compute_units, want.sms);
}

INSTANTIATE_TEST_SUITE_P(Gpus, SimNvDeviceInfoTest, ::testing::ValuesIn(sim::SimNvGpuSpec::names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace
}  // namespace hcq::nv
