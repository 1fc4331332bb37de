// SIM-AMD's DeviceInfo: the UUID is the simulated KFD's unique_id as ROCr spells it, the launch limits are every AMD
// target's, and copies refuse the compute queue as the field says.
#include <gtest/gtest.h>

#include <array>
#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/kfd.hpp"
#include "hcq/error.hpp"
#include "sim/kfd/sim_amd_device.hpp"

namespace hcq::amd {
namespace {

// The value of `key` in a sysfs properties file ("key value" lines); 0 when absent.
uint64_t property(const std::string& text, const std::string& key) {
  const size_t at = text.find("\n" + key + " ");
  if (at == std::string::npos) return 0;
  const char* begin = text.data() + at + key.size() + 2;
  uint64_t v = 0;
  std::from_chars(begin, text.data() + text.size(), v);
  return v;
}

std::string as_text(const std::array<uint8_t, 16>& u) { return std::string(u.begin(), u.end()); }

class SimAmdDeviceInfoTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_amd_device(cat("SIM-AMD:", GetParam()), GetParam());
    amd_ = dynamic_cast<AmdDevice*>(dev_.get());
    ASSERT_NE(amd_, nullptr);
  }
  std::unique_ptr<Device> dev_;
  AmdDevice* amd_ = nullptr;
};

TEST_P(SimAmdDeviceInfoTest, UuidIsTheSimulatedUniqueIdAsRocrWritesIt) {
  // The simulated GPU is KFD topology node 1 (node 0 is the CPU).
  const std::optional<std::string> props =
      amd_->os().read_file("/sys/devices/virtual/kfd/kfd/topology/nodes/1/properties");
  ASSERT_TRUE(props.has_value());
  const uint64_t unique_id = property(*props, "unique_id");
  ASSERT_NE(unique_id, 0u) << "the simulated KFD reports a unique_id";
  char want[17];
  std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(unique_id));
  const std::optional<std::array<uint8_t, 16>> uuid = dev_->info().uuid;
  ASSERT_TRUE(uuid.has_value());
  EXPECT_EQ(as_text(*uuid), want);
}

TEST_P(SimAmdDeviceInfoTest, LaunchLimitsAreEveryAmdTargets) {
  // 1024 work-items per workgroup, any dimension up to that; 32-bit grids that hcq keeps below 2^31.
  const LaunchLimits l = dev_->info().launch_limits;
  EXPECT_EQ(l.max_threads_per_group, 1024u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(l.max_local[i], 1024u) << "dim " << i;
    EXPECT_EQ(l.max_global[i], 0x7fffffffu) << "dim " << i;
  }
}

TEST_P(SimAmdDeviceInfoTest, CopiesStayOffTheComputeQueue) {
  EXPECT_FALSE(dev_->info().copies_on_compute);
  auto q = dev_->compute_queue();
  EXPECT_THROW(q->copy(0x1000, 0x2000, 16), InvalidArgument);
}

// The figures AMD publishes for the GPU each target simulates: MI300X (gfx942, CDNA3: wave64, 304 CUs), RX 7900 XTX
// (gfx1100, RDNA3: wave32 as the compiler builds for it, 96 CUs), RX 9070 XT (gfx1201, RDNA4: wave32, 64 CUs); 64 KiB
// of LDS per workgroup on each.
TEST_P(SimAmdDeviceInfoTest, WaveSharedMemoryAndComputeUnitsAreTheGpus) {
  struct Want {
    uint32_t wave, cus;
  };
  const std::string gfx = GetParam();
  const Want want = gfx == "gfx942" ? Want{64, 304} : gfx == "gfx1100" ? Want{32, 96} : Want{32, 64};
  const DeviceInfo i = dev_->info();
  EXPECT_EQ(i.wave_size, want.wave);
  EXPECT_EQ(i.shared_memory_bytes, 64u * 1024);
  EXPECT_EQ(i.compute_units, want.cus);
}

INSTANTIATE_TEST_SUITE_P(Targets, SimAmdDeviceInfoTest, ::testing::Values("gfx1100", "gfx942", "gfx1201"));

// No unique_id (0, as older kernels and some parts report): no UUID, rather than sixteen zeros.
TEST(KfdNodeUuid, NoneWithoutUniqueId) {
  KfdNode n;
  EXPECT_FALSE(n.uuid().has_value());
}

TEST(KfdNodeUuid, SixteenLowercaseHexDigits) {
  KfdNode n;
  n.unique_id = 0x0123456789abcdefull;
  ASSERT_TRUE(n.uuid().has_value());
  EXPECT_EQ(as_text(*n.uuid()), "0123456789abcdef");
  n.unique_id = 0xf;
  EXPECT_EQ(as_text(*n.uuid()), "000000000000000f");
}

}  // namespace
}  // namespace hcq::amd
