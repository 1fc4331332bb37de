// A kernel that faults during a replay names the kernel and its tensor op, as an eager launch's fault does (issue 15's
// fault context, framework/engine/fault_context.hpp). The kernel is made wrong on purpose through the renderer's test
// hook (its loads from buffer 1 land 2^31 elements past the buffer, beyond the simulators' mapped VA) for the
// capture; the fault is the capture's own replay's. On the simulated GPU HCQ_DEVICE names (skipped elsewhere), in a
// child process (a fault is sticky on the registry's device, which the other tests share).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/engine/realize.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/jit.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

void read_far_past_buffer_1(fw::RenderedKernel& k) {
  for (size_t at = 0; (at = k.source.find("b1[", at)) != std::string::npos; at += 3)
    k.source.insert(at + 3, "(1LL << 31) + ");
}

[[noreturn]] void replay_faults(const std::string& gpu) {
  int code = 1;
  const Tensor x(std::vector<float>{1, 2, 3, 4}, {4}, gpu);
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0f}; });
  (void)jit({x});
  fw::clear_schedule_cache();
  fw::set_render_hook(read_far_past_buffer_1);
  try {
    const std::vector<float> v = jit({x})[0].data<float>();
    std::fprintf(stderr, "no fault: read %g\n", static_cast<double>(v[0]));
  } catch (const DeviceFault& e) {
    std::fprintf(stderr, "DeviceFault: %s\n", e.what());
    code = 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "another error: %s\n", e.what());
  }
  std::fflush(stderr);
  std::_Exit(code);  // no exit-time teardown of the faulted device
}

TEST(FrameworkJitGpu, ReplayFaultNamesTheKernel) {
  FW_REQUIRE_GPU(gpu);
  if (open_device(gpu).info().interface.rfind("sim-", 0) != 0) GTEST_SKIP() << "faults on purpose: simulators only";
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(replay_faults(gpu), ::testing::ExitedWithCode(0),
              "DeviceFault: .*\n  in kernel E_4 \\(MUL -> float32 \\(4,\\)\\)\n");
}

}  // namespace
}  // namespace hcq
