// Graphs that span devices: to() between the CPU and each simulated GPU, and between two GPUs, in one realize each.
// The scheduler makes the copies steps of their own; the engine orders them between the kernels of both devices
// through the devices' timelines. Values are worked by hand; the counters say how many kernels and copies ran.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

// A simulated NVIDIA GPU compiles through NVRTC, which is optional: without it its tests skip, as the NV ones do.
bool compiles(const std::string& device) {
  return open_device(device).compiler().identity().find("unavailable") == std::string::npos;
}

class FrameworkAcrossDevices : public ::testing::TestWithParam<const char*> {};

// CPU kernel -> copy -> GPU kernel -> copy -> CPU kernel, one realize: (2x + 1) * 3.
TEST_P(FrameworkAcrossDevices, CpuToGpuAndBackInOneRealize) {
  const std::string gpu = GetParam();
  if (!compiles(gpu)) GTEST_SKIP() << gpu << ": its kernel compiler is unavailable (NVRTC not installed)";
  Tensor x(std::vector<float>{1, 2, 3, 4}, {4}, "CPU");
  Tensor on_gpu = (x * 2).to(gpu) + 1;
  EXPECT_EQ(on_gpu.device(), gpu);
  Tensor y = on_gpu.to("CPU") * 3;
  const FrameworkCounters before = framework_counters();
  y.realize();
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.kernels - before.kernels, 3u);
  EXPECT_EQ(after.copies - before.copies, 2u);
  EXPECT_EQ(y.data<float>(), (std::vector<float>{9, 15, 21, 27}));
  // The GPU's intermediate was realized on the way and reads back on its own.
  EXPECT_EQ(on_gpu.data<float>(), (std::vector<float>{3, 5, 7, 9}));
}

// A reduce on the GPU of data made on the CPU, read back through to("CPU").
TEST_P(FrameworkAcrossDevices, GpuReduceOfCpuData) {
  const std::string gpu = GetParam();
  if (!compiles(gpu)) GTEST_SKIP() << gpu << ": its kernel compiler is unavailable (NVRTC not installed)";
  Tensor x = Tensor::arange(0, 12, 1, "CPU").reshape({3, 4});  // rows 0..3, 4..7, 8..11
  Tensor s = x.to(gpu).sum(1).to("CPU");
  EXPECT_EQ(s.device().substr(0, 3), "CPU");
  EXPECT_EQ(s.data<int32_t>(), (std::vector<int32_t>{6, 22, 38}));
}

INSTANTIATE_TEST_SUITE_P(SimulatedGpus, FrameworkAcrossDevices, ::testing::Values("SIM-AMD:gfx1100", "SIM-NV:hopper"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param).substr(0, 6) == "SIM-AM" ? "SimAmd" : "SimNv";
                         });

// From one GPU to its peer on the same (simulated) machine: the second GPU of SIM-AMD:gfx1100's KFD maps the first's
// memory, so the copy is a device copy between them.
TEST(FrameworkAcrossDevicesTwoGpus, ToThePeerGpuAndBack) {
  Tensor x(std::vector<int32_t>{5, -1, 7}, {3}, "SIM-AMD:gfx1100");
  Tensor y = ((x * 10).to("SIM-AMD:gfx1100:1") - 3).to("SIM-AMD:gfx1100") + 1;
  EXPECT_EQ(y.device(), "SIM-AMD:gfx1100");
  EXPECT_EQ(y.data<int32_t>(), (std::vector<int32_t>{48, -12, 68}));
}

}  // namespace
}  // namespace hcq
