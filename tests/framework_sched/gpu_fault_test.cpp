// Faults reach the user (issue 15): a kernel that reads out of bounds on a simulated GPU ends in that GPU's typed
// DeviceFault, naming the kernel and the tensor op it came from, and the CPU device keeps working. The kernel is made
// wrong on purpose through the renderer's test hook: its loads from buffer 1 land 8 GiB past the buffer, inside the
// simulators' guard beyond the mapped VA (a generated kernel never does that).
//
// Each case runs in a child process of its own (a gtest death test, re-executed: "threadsafe" style): a fault is
// sticky on the registry's device, which the other framework tests share. The child prints what it saw and exits 0
// only if the fault was a DeviceFault; the parent matches the text.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"
#include "sim_gpus/sim_gpus.hpp"

namespace hcq {
namespace {

void read_far_past_buffer_1(fw::RenderedKernel& k) {
  for (size_t at = 0; (at = k.source.find("b1[", at)) != std::string::npos; at += 3)
    k.source.insert(at + 3, "(1LL << 31) + ");
}

// The child: the faulting expression on `gpu`, then a reduce on the CPU device.
[[noreturn]] void fault_then_use_the_cpu(const std::string& gpu) {
  int code = 1;
  Tensor x(std::vector<float>{1, 2, 3, 4}, {4}, gpu);
  x.realize();
  fw::set_render_hook(read_far_past_buffer_1);
  try {
    const std::vector<float> v = (x * 2.0f).data<float>();
    std::fprintf(stderr, "no fault: read %g\n", static_cast<double>(v[0]));
  } catch (const DeviceFault& e) {
    std::fprintf(stderr, "DeviceFault: %s\n", e.what());
    code = 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "another error: %s\n", e.what());
  }
  fw::set_render_hook({});
  const double sum = Tensor(std::vector<float>{1, 2, 3}, {3}, "CPU").sum().item();
  std::fprintf(stderr, "the CPU device's sum: %g\n", sum);
  std::fflush(stderr);
  std::_Exit(code);  // no exit-time teardown of the faulted device: the parent only reads what was printed
}

class FrameworkGpuFault : public ::testing::TestWithParam<test::SimGpu> {};

TEST_P(FrameworkGpuFault, OutOfBoundsKernelIsADeviceFaultNamingItsOp) {
  const std::string gpu = GetParam().name();
  std::string compiler;
  try {
    compiler = open_device(gpu).compiler().identity();
  } catch (const UnsupportedDriver& e) {  // a program without that simulator: the hw-tests bundle links SIM-NV only
    GTEST_SKIP() << e.what();
  }
  if (compiler.find("unavailable") != std::string::npos)
    GTEST_SKIP() << "no compiler for " << gpu << " here: " << compiler;
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // The address each backend names, then the kernel and its op (exact), then the CPU device's result.
  const std::string address = GetParam().amd() ? "GPU memory fault at 0x" : "faulting VA 0x";
  EXPECT_EXIT(fault_then_use_the_cpu(gpu), ::testing::ExitedWithCode(0),
              "DeviceFault: .*" + address +
                  ".*\n  in kernel E_4 \\(MUL -> float32 \\(4,\\)\\)\n"
                  "the CPU device's sum: 6\n");
}

INSTANTIATE_TEST_SUITE_P(Sims, FrameworkGpuFault, test::all_sim_gpus(), test::sim_gpu_test_name);

}  // namespace
}  // namespace hcq
