// Graphs that span devices: to() between the CPU and a GPU, and between two GPUs, in one realize each (on the GPU
// HCQ_DEVICE names: gpu_under_test.hpp).
// The scheduler makes the copies steps of their own; the engine orders them between the kernels of both devices
// through the devices' timelines. Values are worked by hand; the counters say how many kernels and copies ran.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework_sched/gpu_under_test.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

// CPU kernel -> copy -> GPU kernel -> copy -> CPU kernel, one realize: (2x + 1) * 3.
TEST(FrameworkAcrossDevices, CpuToGpuAndBackInOneRealize) {
  FW_REQUIRE_GPU(gpu);
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
TEST(FrameworkAcrossDevices, GpuReduceOfCpuData) {
  FW_REQUIRE_GPU(gpu);
  Tensor x = Tensor::arange(0, 12, 1, "CPU").reshape({3, 4});  // rows 0..3, 4..7, 8..11
  Tensor s = x.to(gpu).sum(1).to("CPU");
  EXPECT_EQ(s.device().substr(0, 3), "CPU");
  EXPECT_EQ(s.data<int32_t>(), (std::vector<int32_t>{6, 22, 38}));
}

// From one GPU to its peer on the same simulated machine (":1", the second GPU of its KFD or RM), and back.
TEST(FrameworkAcrossDevices, ToThePeerGpuAndBack) {
  FW_REQUIRE_GPU(gpu);
  const std::string peer = gpu + ":1";
  Tensor x(std::vector<int32_t>{5, -1, 7}, {3}, gpu);
  Tensor y = ((x * 10).to(peer) - 3).to(gpu) + 1;
  EXPECT_EQ(y.device(), gpu);
  EXPECT_EQ(y.data<int32_t>(), (std::vector<int32_t>{48, -12, 68}));
}

// A copy from the CPU device into GPU memory is driven by the GPU's copy engine; a CPU kernel that overwrites the
// source right after must wait until the GPU has read it (until 2026-12-03 it did not: an allreduce over two GPUs and
// the CPU device read a reused buffer in 3 of 15 runs). Each round the GPU must hold the old value.
TEST(FrameworkAcrossDevices, OverwritingACpuSourceWaitsForTheGpusCopy) {
  FW_REQUIRE_GPU(gpu);
  for (int round = 0; round < 8; ++round) {
    Tensor src = Tensor::full({1 << 18}, round, dtypes::float32, "CPU").realize();
    Tensor on_gpu = src.to(gpu).realize();
    src.assign(src + 1000).realize();
    const std::vector<float> got = on_gpu.data<float>();
    for (size_t k = 0; k < got.size(); k += 4093) ASSERT_EQ(got[k], static_cast<float>(round)) << round << ", " << k;
    EXPECT_EQ(src.data<float>()[7], static_cast<float>(round + 1000)) << round;
  }
}

}  // namespace
}  // namespace hcq
