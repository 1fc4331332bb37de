// Gradients inside a TinyJit: a jitted step accumulates gradients across replays into a buffer it assigns (the
// way to carry anything from one call to the next: a replay reruns kernels, it does not rebuild the graph), and
// equals the same step run eagerly, bit for bit. On the default device (scripts/test.sh's GPU runs set
// HCQ_DEVICE to a simulated GPU).
#include <gtest/gtest.h>

#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::expect_same_bits;

// d/dw sum(w * x * x) = x * x, accumulated over the calls, zeroed between them as an optimiser would.
struct Accumulator {
  Tensor w = Tensor(std::vector<float>{1, -1, 0.5f, 2}, {4}).requires_grad_();
  Tensor acc = Tensor::empty({4});
  Accumulator() { acc.assign(Tensor::zeros({4})).realize(); }
  std::vector<Tensor> step(const Tensor& x) {
    w.zero_grad();
    (w * x * x).sum().backward();
    acc.assign(acc + w.grad());
    return {acc.realize()};
  }
};

TEST(FrameworkJitGrad, AccumulatesGradientsAcrossReplays) {
  Accumulator eager, jitted;
  TinyJit jit([&](const std::vector<Tensor>& in) { return jitted.step(in[0]); });
  std::vector<float> sum(4, 0);
  for (uint32_t call = 0; call < 5; ++call) {
    const std::vector<float> xv = jittest::values(4, call);
    const Tensor x(xv, {4});
    const std::vector<Tensor> want = eager.step(x);
    const std::vector<Tensor> got = jit({x});
    expect_same_bits(got[0], want[0], "call " + std::to_string(call));
    for (size_t k = 0; k < 4; ++k) sum[k] += xv[k] * xv[k];
  }
  // The plain sum of x * x over the five calls, in float as the kernels add.
  EXPECT_EQ(jitted.acc.data<float>(), sum);
  EXPECT_EQ(jit.info().calls, 5u);
}

}  // namespace
}  // namespace hcq
