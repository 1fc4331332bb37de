// Kernel counts are the scheduler's contract: tinygrad (DEV=CPU DEBUG=2, its rangeify scheduler) gives the same
// counts for these expressions. Each test realizes once and counts launched kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

// Kernels launched by one realize of t.
uint64_t kernels_for(Tensor t) {
  const uint64_t before = framework_counters().kernels;
  t.realize();
  return framework_counters().kernels - before;
}

Tensor filled(Shape shape, float start) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) v[k] = start + 0.25f * static_cast<float>(k % 17) - 1.5f;
  return Tensor(v, shape);
}

TEST(FrameworkKernelCount, FusedElementwiseIsOneKernel) {
  Tensor a = filled({4, 8}, 0), b = filled({4, 8}, 1), c = filled({4, 8}, 2);
  Tensor out = ((a + b) * c).relu();
  EXPECT_EQ(kernels_for(out), 1u);
  const std::vector<float> got = out.data<float>();
  const std::vector<float> av = a.data<float>(), bv = b.data<float>(), cv = c.data<float>();
  for (size_t k = 0; k < got.size(); ++k) EXPECT_FLOAT_EQ(got[k], std::max(0.0f, (av[k] + bv[k]) * cv[k])) << k;
}

TEST(FrameworkKernelCount, ElementwiseIntoReduceIsOneKernel) {
  Tensor a = filled({4, 8}, 0), b = filled({4, 8}, 1), c = filled({4, 8}, 2);
  Tensor out = ((a + b) * c).relu().sum(1);
  EXPECT_EQ(kernels_for(out), 1u);
  const std::vector<float> got = out.data<float>();
  const std::vector<float> av = a.data<float>(), bv = b.data<float>(), cv = c.data<float>();
  for (size_t i = 0; i < 4; ++i) {
    double want = 0;
    for (size_t j = 0; j < 8; ++j) want += std::max(0.0f, (av[i * 8 + j] + bv[i * 8 + j]) * cv[i * 8 + j]);
    EXPECT_NEAR(got[i], want, 1e-4) << i;
  }
}

TEST(FrameworkKernelCount, SubtractMeanIsTwoKernels) {
  Tensor a = filled({5, 7}, 0);
  EXPECT_EQ(kernels_for(a - a.mean(1, true)), 2u);
}

TEST(FrameworkKernelCount, SoftmaxLogSoftmaxLayernormAtMostThree) {
  Tensor x = filled({6, 10}, 0);
  EXPECT_LE(kernels_for(x.softmax(-1)), 3u);
  EXPECT_LE(kernels_for(x.log_softmax(-1)), 3u);
  const Tensor centered = x - x.mean(-1, true);
  EXPECT_LE(kernels_for(centered * (centered * centered).mean(-1, true).add(1e-5).rsqrt()), 3u);
}

TEST(FrameworkKernelCount, MatmulBiasReluIsOneKernel) {
  Tensor x = filled({3, 5}, 0), w = filled({5, 4}, 1), b = filled({4}, 2);
  Tensor out = (x.matmul(w) + b).relu();
  EXPECT_EQ(kernels_for(out), 1u);
  const std::vector<float> got = out.data<float>();
  const std::vector<float> xv = x.data<float>(), wv = w.data<float>(), bv = b.data<float>();
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) {
      double acc = bv[j];
      for (size_t k = 0; k < 5; ++k) acc += static_cast<double>(xv[i * 5 + k]) * wv[k * 4 + j];
      EXPECT_NEAR(got[i * 4 + j], std::max(0.0, acc), 1e-4);
    }
}

TEST(FrameworkKernelCount, ReshapeTimesIsOneKernel) {
  Tensor x = filled({2, 3}, 0), y = filled({6}, 1);
  EXPECT_EQ(kernels_for(x.reshape({6}) * y), 1u);
}

TEST(FrameworkKernelCount, TransposeContiguousIsOneKernel) {
  Tensor a = filled({3, 4}, 0);
  Tensor t = a.transpose().contiguous();
  EXPECT_EQ(kernels_for(t), 1u);
  const std::vector<float> got = t.data<float>(), av = a.data<float>();
  for (size_t i = 0; i < 4; ++i)
    for (size_t j = 0; j < 3; ++j) EXPECT_EQ(got[i * 3 + j], av[j * 4 + i]);
}

TEST(FrameworkKernelCount, ChainOfTwentyElementwiseIsOneKernel) {
  Tensor x = filled({16}, 0);
  Tensor y = x;
  for (int k = 0; k < 20; ++k) y = (k % 2) ? y * 1.01 : y + 0.5;
  EXPECT_EQ(kernels_for(y), 1u);
}

// A full sum of 2M floats has one output, so the workers sharing a kernel's outputs would leave all but one idle:
// it becomes 8 partial sums the workers share, then their sum (on a GPU, partial sums per compute unit). A CPU
// device of one worker keeps one kernel.
TEST(FrameworkKernelCount, LargeFullSumIsSplitForTheWorkers) {
  Tensor x = filled({1 << 21}, 0);
  Tensor s = x.sum();
  const bool one_worker = open_device(x.device()).info().interface == "cpu" && knobs::cpu_threads() == 1;
  EXPECT_EQ(kernels_for(s), one_worker ? 1u : 2u);
  double want = 0;
  for (float v : x.data<float>()) want += v;
  EXPECT_NEAR(s.item(), want, 1e-5 * std::abs(want));
}

}  // namespace
}  // namespace hcq

namespace hcq {
namespace {

// docs/framework.md follows this expression through every stage (run it with HCQ_DEBUG=5).
TEST(FrameworkWalkthrough, ReshapeMulSum) {
  Tensor x(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor y(std::vector<float>{1, -1, 2, -2, 3, -3}, {6});
  Tensor s = (x.reshape({6}) * y).sum();
  EXPECT_EQ(kernels_for(s), 1u);
  EXPECT_EQ(s.item(), 1 - 2 + 6 - 8 + 15 - 18);
}

}  // namespace
}  // namespace hcq

namespace hcq {
namespace {

// contiguous() of a tensor that is contiguous already moves bytes only: a device copy, not a kernel.
TEST(FrameworkKernelCount, ContiguousOfAContiguousBufferIsACopy) {
  Tensor a = filled({3, 4}, 0);
  Tensor c = a.contiguous();
  const FrameworkCounters before = framework_counters();
  c.realize();
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.kernels - before.kernels, 0u);
  EXPECT_EQ(after.copies - before.copies, 1u);
  EXPECT_EQ(c.data<float>(), a.data<float>());
}

}  // namespace
}  // namespace hcq

namespace hcq {
namespace {

// A reduce two kernels need is computed once, into a buffer both read.
// Our departure from tinygrad's counts: an elementwise value of many ops (16 or more per element) read through an
// EXPAND is computed once into a buffer, not once per use (a convolution's input gradient of a batch norm's backward
// was 25 times the work otherwise); a cheap one stays fused.
TEST(FrameworkKernelCount, AnExpensiveValueReadThroughAnExpandIsRealized) {
  const Tensor x = filled({4, 6}, 0), w = filled({1, 5, 6}, 3);
  auto chain = [](Tensor y, int links) {
    for (int k = 0; k < links; ++k) y = (y * 0.5f + 0.25f).sin();  // 3 ALU ops a link
    return y;
  };
  auto use = [&](const Tensor& y) { return (y.reshape({4, 1, 6}).expand({4, 5, 6}) * w).sum(2); };
  EXPECT_EQ(kernels_for(use(chain(x, 6))), 2u);  // 18 ops
  EXPECT_EQ(kernels_for(use(chain(x, 2))), 1u);  // 6 ops
  const std::vector<float> got = use(chain(x, 6)).data<float>();
  const std::vector<float> xv = x.data<float>(), wv = w.data<float>();
  for (size_t i = 0; i < 4; ++i)
    for (size_t o = 0; o < 5; ++o) {
      double want = 0;
      for (size_t j = 0; j < 6; ++j) {
        double y = xv[i * 6 + j];
        for (int k = 0; k < 6; ++k) y = std::sin(y * 0.5 + 0.25);
        want += y * wv[o * 6 + j];
      }
      EXPECT_NEAR(got[i * 5 + o], want, 1e-5) << i << "," << o;
    }
}

TEST(FrameworkKernelCount, AReduceTwoKernelsUseIsRealizedOnce) {
  Tensor x = filled({4, 6}, 0);
  Tensor s = x.sum(1);
  Tensor a = s * 2, b = s.exp();
  const uint64_t before = framework_counters().kernels;
  Tensor::realize({a, b});
  EXPECT_EQ(framework_counters().kernels - before, 3u);  // s, a, b
}

// Two uses of a reduce in one kernel at the same index fuse (computed once in that kernel); at different indices
// (a flip) the consumers disagree, and the reduce is realized instead of computed twice.
// An elementwise value with two or more transcendentals or divisions (a softmax's gradient) that two kernels use,
// one reading it through an EXPAND (a product's operand), is computed once into a buffer: 3 kernels (the value, the
// product, the column sum) instead of 2 that each recompute it, the product once per column. A cheap value (a ReLU)
// stays fused, as does an expensive one only a single kernel uses.
TEST(FrameworkKernelCount, AnExpensiveValueTwoKernelsUseIsRealizedOnce) {
  const Tensor x = filled({8, 5}, 0), d = filled({8, 5}, 1).abs() + 1.0f, w = filled({5, 6}, 2);
  const Tensor g = (x.exp() / d) / (d + 1.0f);  // exp and two divisions
  const Tensor prod = g.matmul(w), col = g.sum(0);
  const uint64_t before = framework_counters().kernels;
  Tensor::realize({prod, col});
  EXPECT_EQ(framework_counters().kernels - before, 3u);
  const std::vector<float> xv = x.data<float>(), dv = d.data<float>(), wv = w.data<float>();
  const std::vector<float> pv = prod.data<float>(), cv = col.data<float>();
  for (size_t i = 0; i < 8; ++i)
    for (size_t j = 0; j < 6; ++j) {
      double want = 0;
      for (size_t k = 0; k < 5; ++k)
        want += std::exp(double(xv[i * 5 + k])) / dv[i * 5 + k] / (dv[i * 5 + k] + 1.0) * wv[k * 6 + j];
      EXPECT_NEAR(pv[i * 6 + j], want, 1e-4 * (1 + std::abs(want))) << i << ", " << j;
    }
  for (size_t k = 0; k < 5; ++k) {
    double want = 0;
    for (size_t i = 0; i < 8; ++i) want += std::exp(double(xv[i * 5 + k])) / dv[i * 5 + k] / (dv[i * 5 + k] + 1.0);
    EXPECT_NEAR(cv[k], want, 1e-4 * (1 + std::abs(want))) << k;
  }
  // A ReLU is cheap: fused into both.
  const Tensor r = x.relu();
  const uint64_t before_cheap = framework_counters().kernels;
  Tensor::realize({r.matmul(w), r.sum(0)});
  EXPECT_EQ(framework_counters().kernels - before_cheap, 2u);
  // One user only: fused.
  EXPECT_EQ(kernels_for(g.matmul(filled({5, 6}, 3))), 1u);
}

TEST(FrameworkKernelCount, AgreeingUsesFuseDisagreeingUsesRealize) {
  Tensor x = filled({5, 6}, 0);
  Tensor s = x.sum(1);
  EXPECT_EQ(kernels_for(s * s + s.exp()), 1u);
  Tensor t = x.max(1);
  Tensor flipped = t + t.flip(0);
  EXPECT_EQ(kernels_for(flipped), 2u);
  const std::vector<float> xv = x.data<float>(), got = flipped.data<float>();
  for (size_t i = 0; i < 5; ++i) {
    float m1 = -INFINITY, m2 = -INFINITY;
    for (size_t j = 0; j < 6; ++j) {
      m1 = std::max(m1, xv[i * 6 + j]);
      m2 = std::max(m2, xv[(4 - i) * 6 + j]);
    }
    EXPECT_EQ(got[i], m1 + m2) << i;
  }
}

}  // namespace
}  // namespace hcq

namespace hcq {
namespace {

// Partial realisation: s = x.sum(2) is read at (i, j) and (i, 4 - j). Its users agree on axis 0 and disagree on
// axis 1, so one kernel computes, for each i, the row s[i, :] into a local array and reads both elements from it.
TEST(FrameworkKernelCount, DisagreeingAxesAreRealizedLocallyInOneKernel) {
  Tensor x = filled({3, 5, 7}, 0);
  Tensor s = x.sum(2);
  Tensor out = s * s.flip(1);
  EXPECT_EQ(kernels_for(out), 1u);
  const std::vector<float> xv = x.data<float>(), got = out.data<float>();
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 5; ++j) {
      double a = 0, b = 0;
      for (size_t k = 0; k < 7; ++k) {
        a += xv[(i * 5 + j) * 7 + k];
        b += xv[(i * 5 + (4 - j)) * 7 + k];
      }
      EXPECT_NEAR(got[i * 5 + j], a * b, 1e-3) << i << ", " << j;
    }
}

}  // namespace
}  // namespace hcq
