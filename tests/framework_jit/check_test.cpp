// HCQ_JIT_CHECK=1: the first replays (calls 1 to 3) also run the function eagerly and compare every output bit for
// bit; a deliberately wrong kernel in the replay is a JitError naming the output, the element, both values and the
// kernel. On the default device (the CPU device; scripts/test.sh's GPU runs set HCQ_DEVICE to a simulated GPU).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/engine/realize.hpp"
#include "framework_jit/jit_test_util.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::expect_same_bits;

// An elementwise kernel that reads element 0 of its first input everywhere ("b1[i]" becomes "b1[0*i]"); reduces are
// left as they are. It rewrites scalar loads: a GPU's vector load reads a whole run of elements from its start,
// where reading element 0 instead changes nothing for a 4-element tensor, so the tests that use it build
// unoptimised kernels (HCQ_NOOPT=1: each GPU thread loads one element, as on the CPU device).
void elementwise_reads_element_0(fw::RenderedKernel& k) {
  if (k.name.rfind("E_", 0) != 0) return;
  if (size_t at = k.source.find("b1["); at != std::string::npos) k.source.insert(at + 3, "0*");
}

// A right replay passes the check: the function runs at call 0, the capture, and once more for each checked replay
// (calls 1, 2, 3), then never again.
TEST(FrameworkJitCheck, RightReplaysPass) {
  const jittest::ScopedKnob check("HCQ_JIT_CHECK", "1");
  int runs = 0;
  TinyJit jit([&](const std::vector<Tensor>& in) {
    ++runs;
    return std::vector<Tensor>{in[0] * 3 + 1, in[0].sum(), in[0] + Tensor::rand({4}, dtypes::float32, in[0].device())};
  });
  for (uint32_t c = 0; c < 6; ++c) (void)jit({Tensor(jittest::values(4, c), {4})});
  EXPECT_EQ(runs, 5);
}

// The capture (call 1) is made with the elementwise kernel wrong; its own check reruns the function on the same
// (wrong) cached schedule, so call 1 passes. From call 2 the kernels are rendered right again, and call 2's check
// finds the replay's output 0 wrong at element 1 (element 0 reads element 0 either way).
TEST(FrameworkJitCheck, NamesTheFirstWrongElementAndItsKernel) {
  const jittest::ScopedKnob check("HCQ_JIT_CHECK", "1");
  const jittest::ScopedKnob scalar("HCQ_NOOPT", "1");  // see elementwise_reads_element_0
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1, in[0].sum()}; });
  const Tensor x(std::vector<float>{1, 2, 3, 4}, {4});
  (void)jit({x});
  std::vector<Tensor> wrong;
  jittest::with_render_hook(elementwise_reads_element_0, [&] { wrong = jit({x}); });
  EXPECT_EQ(wrong[0].data<float>(), (std::vector<float>{2, 2, 2, 2}));  // the kernel is wrong indeed
  EXPECT_EQ(
      jittest::jit_error([&] { (void)jit({x}); }),
      "TinyJit (HCQ_JIT_CHECK): call 2's output 0 ((4,) float32) differs from the function run eagerly at "
      "element 1: replay 2 (0x40000000), eager 3 (0x40400000); written in the replay by kernel E_4 (ADD -> float32 (4,)). The "
      "replay does not compute what the function does: call the function without TinyJit until this is fixed, "
      "and report it with this message");
}

// Without the knob nothing is compared: the same wrong replay returns its wrong values.
TEST(FrameworkJitCheck, OffByDefault) {
  const jittest::ScopedKnob scalar("HCQ_NOOPT", "1");  // see elementwise_reads_element_0
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1}; });
  const Tensor x(std::vector<float>{1, 2, 3, 4}, {4});
  (void)jit({x});
  jittest::with_render_hook(elementwise_reads_element_0, [&] { (void)jit({x}); });
  EXPECT_EQ(jit({x})[0].data<float>(), (std::vector<float>{2, 2, 2, 2}));
}

}  // namespace
}  // namespace hcq
