// HCQ_VALIDATE=1 (framework/engine/validate.hpp): every kernel run off the CPU device, eagerly or in a TinyJit replay,
// is run again on the CPU device on copies of its inputs; a kernel made wrong on purpose for the GPU only (through the
// renderer's test hook: its GPU build reads element 0 of its input everywhere) is a ValidationError naming it. On the
// GPU HCQ_DEVICE names (scripts/test.sh: SIM-AMD:gfx1100, SIM-NV:hopper); skipped on the CPU device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/engine/realize.hpp"
#include "framework_jit/jit_test_util.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

// GPU builds (one thread per element: HCQ_FOR_EACH_THREAD) read element 0 of buffer 1 everywhere; the CPU device's
// builds of the same kernels are left right. It rewrites scalar loads: a GPU's vector load reads a whole run from
// its start, where reading element 0 instead changes nothing for a 4-element tensor, so the test builds
// unoptimised kernels (HCQ_NOOPT=1: each GPU thread loads one element).
void gpu_reads_element_0(fw::RenderedKernel& k) {
  if (k.source.find("HCQ_FOR_EACH_THREAD") == std::string::npos) return;
  if (size_t at = k.source.find("b1["); at != std::string::npos) k.source.insert(at + 3, "0*");
}

// The ValidationError's message `f` throws while the GPU builds are wrong.
std::string validation_error(const std::function<void()>& f) {
  std::string message;
  jittest::with_render_hook(gpu_reads_element_0, [&] {
    try {
      f();
      ADD_FAILURE() << "no ValidationError";
    } catch (const ValidationError& e) {
      message = e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a ValidationError: " << e.what();
    }
  });
  return message;
}

TEST(FrameworkJitGpu, ValidateCatchesAWrongKernel) {
  FW_REQUIRE_GPU(gpu);
  const jittest::ScopedKnob validate("HCQ_VALIDATE", "1");
  const jittest::ScopedKnob scalar("HCQ_NOOPT", "1");  // see gpu_reads_element_0
  const Tensor x(std::vector<float>{1, 2, 3, 4}, {4}, gpu);
  // Right kernels pass, eager and replayed.
  EXPECT_EQ((x * 3).data<float>(), (std::vector<float>{3, 6, 9, 12}));
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1, in[0].sum()}; });
  for (int call = 0; call < 4; ++call) {
    const std::vector<Tensor> out = jit({x});
    EXPECT_EQ(out[0].data<float>(), (std::vector<float>{2, 3, 4, 5})) << call;
    EXPECT_EQ(out[1].item(), 10.0) << call;
  }
  const std::string instead =
      " (float32 tolerance 1e-05 + 0.0001 * |CPU|). The kernel is wrong on this device (its generated code, its "
      "compiler or the device): report it with this message; HCQ_NOOPT=1 may avoid it";
  // Eager.
  EXPECT_EQ(validation_error([&] { (void)(x * 3).realize(); }),
            cat("HCQ_VALIDATE: kernel E_4 (MUL -> float32 (4,)) on ", gpu,
                " differs from the CPU device at element 1: ", gpu, " 3, CPU 6", instead));
  // Replayed: the capture's (call 1's) replay.
  TinyJit wrong([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] - 1}; });
  (void)wrong({x});
  EXPECT_EQ(validation_error([&] { (void)wrong({x}); }),
            cat("HCQ_VALIDATE: kernel E_4 (SUB -> float32 (4,)) on ", gpu,
                " differs from the CPU device at element 1: ", gpu, " 0, CPU 1", instead));
}

}  // namespace
}  // namespace hcq
