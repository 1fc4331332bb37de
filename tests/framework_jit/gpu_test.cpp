// TinyJit on the GPU HCQ_DEVICE names (scripts/test.sh runs the framework suites on SIM-AMD:gfx1100 and
// SIM-NV:hopper; skipped on the CPU device): replays equal eager runs, copies from the CPU device inside the
// function, freeing.
#include <gtest/gtest.h>

#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "hcq/allocator.hpp"
#include "hcq/device.hpp"
#include "hcq/jit.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::expect_same_bits;
using jittest::values;

TEST(FrameworkJitGpu, ReplayEqualsEagerBitForBit) {
  FW_REQUIRE_GPU(gpu);
  Tensor w(values(16, 9), {4, 4}, gpu);
  const TinyJit::Function f = [&](const std::vector<Tensor>& in) {
    Tensor h = in[0].matmul(w).relu();
    return std::vector<Tensor>{h.sum(1), (in[0] - h).exp(), h.max()};
  };
  TinyJit jit(f);
  for (uint32_t call = 0; call < 5; ++call) {
    Tensor x(values(16, call), {4, 4}, gpu);
    const std::vector<Tensor> got = jit({x});
    const std::vector<Tensor> want = f({x});
    for (size_t k = 0; k < got.size(); ++k) expect_same_bits(got[k], want[k], cat("call ", call, " output ", k));
  }
  EXPECT_EQ(jit.info().graphs, 1u);
}

// CPU kernel -> copy to the GPU -> GPU kernel -> copy back -> CPU kernel, inputs on the CPU device.
TEST(FrameworkJitGpu, CopiesFromTheCpuInside) {
  FW_REQUIRE_GPU(gpu);
  TinyJit jit([&](const std::vector<Tensor>& in) {
    Tensor on_gpu = (in[0] * 2).to(gpu) + 1;
    return std::vector<Tensor>{on_gpu.to("CPU") * 3, on_gpu};
  });
  for (int call = 0; call < 5; ++call) {
    Tensor x(std::vector<float>{float(call), 2, 3, 4}, {4}, "CPU");
    const std::vector<Tensor> out = jit({x});
    EXPECT_EQ(out[0].data<float>(), (std::vector<float>{6.0f * call + 3, 15, 21, 27})) << call;
    EXPECT_EQ(out[1].device(), gpu);
    EXPECT_EQ(out[1].data<float>(), (std::vector<float>{2.0f * call + 1, 5, 7, 9})) << call;
  }
  EXPECT_EQ(jit.info().host_copies, 2u);
  EXPECT_EQ(jit.info().kernels, 3u);
}

TEST(FrameworkJitGpu, DestroyingFreesWhatItCaptured) {
  FW_REQUIRE_GPU(gpu);
  Device& dev = open_device(gpu);
  const TinyJit::Function f = [](const std::vector<Tensor>& in) {
    Tensor h = (in[0] * in[0] + 1).realize();
    return std::vector<Tensor>{h.sum(), h - 1};
  };
  Tensor a(values(256, 3), {256}, gpu);
  auto in_use = [&] {
    dev.synchronize();
    dev.allocator().free_cache();
    return dev.bytes_in_use() - dev.allocator().cached_bytes();
  };
  auto life = [&] {  // the first warms the device's pools (staging, side memory), which stay with it
    TinyJit jit(f);
    for (int call = 0; call < 4; ++call) jit({a})[1].data<float>();
  };
  life();
  const uint64_t baseline = in_use();
  life();
  EXPECT_EQ(in_use(), baseline);
}

}  // namespace
}  // namespace hcq
