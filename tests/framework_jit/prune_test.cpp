// Pruning (TinyJit::Options::prune, framework/jit/prune.hpp): captured kernels whose results cannot change between
// calls run once at capture and are not replayed; results still equal the eager calls bit for bit. On the default
// device (the CPU device; scripts/test.sh's GPU runs set HCQ_DEVICE to a simulated GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::expect_same_bits;
using jittest::values;

// c = exp(2w) and d = c + 1 read only the closed-over w (d through c): both pruned; the product with the input, and
// the random tensor (its key is rewritten each call), are replayed.
TEST(FrameworkJitPrune, KernelsOfClosedOverTensorsRunOnce) {
  const std::vector<float> wv = values(8, 3);
  const Tensor w(wv, {8});
  const TinyJit::Function f = [&](const std::vector<Tensor>& in) {
    const Tensor c = (w * 2).exp().realize();
    const Tensor d = (c + 1).realize();
    return std::vector<Tensor>{in[0] * d, in[0] + Tensor::rand({8}, dtypes::float32, in[0].device())};
  };
  TinyJit pruned(f, TinyJit::Options{.prune = true});
  TinyJit plain(f);
  for (uint32_t call = 0; call < 5; ++call) {
    const std::vector<float> xv = values(8, 10 + call);
    const Tensor x(xv, {8});
    Tensor::manual_seed(call);
    const std::vector<Tensor> got = pruned({x});
    Tensor::manual_seed(call);
    const std::vector<Tensor> all = plain({x});
    Tensor::manual_seed(call);
    const std::vector<Tensor> want = f({x});
    for (size_t k = 0; k < want.size(); ++k) {
      expect_same_bits(got[k], want[k], cat("pruned, call ", call, " output ", k));
      expect_same_bits(all[k], want[k], cat("not pruned, call ", call, " output ", k));
    }
    const std::vector<float> out = got[0].data<float>();
    for (size_t i = 0; i < 8; ++i)
      EXPECT_NEAR(out[i], xv[i] * (std::exp(2.0 * wv[i]) + 1), 1e-4 * std::abs(out[i])) << call << " " << i;
  }
  EXPECT_EQ(pruned.info().kernels, 4u);  // c, d, x * d, x + rand
  EXPECT_EQ(pruned.info().pruned, 2u);
  EXPECT_EQ(plain.info().kernels, 4u);
  EXPECT_EQ(plain.info().pruned, 0u);
}

// A kernel that reads what it writes (an accumulator in a closed-over tensor) reads no input, but its result changes
// every call: it is replayed, as is the kernel that reads it.
TEST(FrameworkJitPrune, AccumulatorsAreReplayed) {
  auto make = [](Tensor& acc) {
    return [&acc](const std::vector<Tensor>& in) {
      acc.assign(acc + 1).realize();
      return std::vector<Tensor>{in[0] * acc};
    };
  };
  // From host data: two Tensor::zeros({4}).realize() are one node, so one buffer.
  Tensor acc_jit(std::vector<float>(4, 0.0f), {4}), acc_eager(std::vector<float>(4, 0.0f), {4});
  TinyJit jit(make(acc_jit), TinyJit::Options{.prune = true});
  const TinyJit::Function eager = make(acc_eager);
  const Tensor x(std::vector<float>{1, 2, 3, 4}, {4});
  for (int call = 0; call < 5; ++call) {
    const std::vector<Tensor> got = jit({x});
    expect_same_bits(got[0], eager({x})[0], cat("call ", call));
    EXPECT_EQ(got[0].data<float>()[3], 4.0f * (call + 1)) << call;
  }
  EXPECT_EQ(jit.info().kernels, 2u);
  EXPECT_EQ(jit.info().pruned, 0u);
}

}  // namespace
}  // namespace hcq
