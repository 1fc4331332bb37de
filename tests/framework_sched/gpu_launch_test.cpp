// The GPU launch shape: one thread per output element, workgroups within the device's limits, and a grid-stride loop
// over outputs beyond the grid. A kernel rendered for a device that allows only 3 workgroups of 4 threads must still
// write all 37 of its outputs (each thread three or four of them), on the GPU HCQ_DEVICE names (gpu_under_test.hpp).
#include <gtest/gtest.h>

#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/compile.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

TEST(FrameworkGpuLaunch, GridStrideCoversOutputsBeyondTheGrid) {
  FW_REQUIRE_GPU(dev);
  Device& device = open_device(dev);
  // out[i] = in[i] + 1000 over 37 elements, built by hand as the lowering would.
  constexpr int64_t n = 37;
  const Node out = make_node(Op::PARAM, DType::int32, {}, {0, n});
  const Node in = make_node(Op::PARAM, DType::int32, {}, {1, n});
  const Node r = make_node(Op::RANGE, kIndex, {}, {0, n, 0});
  const Node v =
      make_node(Op::ADD, DType::int32, {make_node(Op::LOAD, DType::int32, {in, r}), const_node(DType::int32, 1000)});
  const Node kernel = make_node(Op::KERNEL, DType::int32, {make_node(Op::STORE, DType::int32, {out, r, v})});

  TargetFacts facts = target_facts(device.info(), 1, true);
  facts.threads_per_group = 4;
  facts.max_groups = 3;
  const RenderedKernel rk = render_c(kernel, facts);
  EXPECT_EQ(rk.global, (std::array<uint32_t, 3>{3, 1, 1}));
  EXPECT_EQ(rk.local, (std::array<uint32_t, 3>{4, 1, 1}));
  EXPECT_NE(rk.source.find("gi += 12)"), std::string::npos) << rk.source;

  const std::vector<std::shared_ptr<const CompiledKernel>> k = compile_kernels({KernelRequest{dev, rk}});
  std::vector<int32_t> x(n), got(n, -1);
  std::iota(x.begin(), x.end(), -5);
  Buffer bin(device, n * sizeof(int32_t)), bout(device, n * sizeof(int32_t));
  bin.copyin(std::span<const int32_t>(x));
  bout.copyin(std::span<const int32_t>(got));  // -1 everywhere: an element no thread wrote stays -1
  const Buffer* bufs[] = {&bout, &bin};
  k[0]->program->launch(bufs, {}, rk.global, rk.local).wait();
  bout.copyout(std::span<int32_t>(got));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], i - 5 + 1000) << "element " << i;
}

}  // namespace
}  // namespace hcq::fw
