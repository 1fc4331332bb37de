// Symbolic shapes (issue 20, deliverable 3): a dimension whose size is a bound Variable (Tensor::narrow), one
// schedule and one TinyJit capture for every value. Expected values are loops on the host over the present
// elements; the storage past the variable's value holds large values, so a mask left out shows. Runs on the default
// device (the simulated GPUs in scripts/test.sh's GPU runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/message_of.hpp"
#include "framework_jit/jit_test_util.hpp"
#include "hcq/error.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::values;

constexpr int64_t kRows = 8, kCols = 5;

// x (8, 5): rows below `present` from values(), the others 100 + the element's index (never the answer).
std::vector<float> rows_then_large(int64_t present, uint32_t seed) {
  std::vector<float> v = values(kRows * kCols, seed);
  for (int64_t i = present * kCols; i < kRows * kCols; ++i) v[static_cast<size_t>(i)] = 100.0f + static_cast<float>(i);
  return v;
}

// out[r][j] = the sum over c < used of a[r * a_row + c] * b[c * cols + j], in double: the product of a's first `used`
// columns and b's first `used` rows.
std::vector<double> host_product(const std::vector<float>& a, int64_t rows, int64_t a_row, const std::vector<float>& b,
                                 int64_t cols, int64_t used) {
  std::vector<double> out;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t c = 0; c < used; ++c)
        s += static_cast<double>(a[static_cast<size_t>(r * a_row + c)]) * b[static_cast<size_t>(c * cols + j)];
      out.push_back(s);
    }
  return out;
}

void expect_near_all(const std::vector<float>& got, const std::vector<double>& want, double tol,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

TEST(FrameworkSymbolicShape, ElementwiseReadsThePresentRows) {
  const Variable n("n", 1, kRows);
  for (int64_t k : {1, 3, 8}) {
    const std::vector<float> xv = values(kRows * kCols, 1);
    const Tensor x(xv, {kRows, kCols});
    const Tensor y = x.narrow(0, n.bind(k)) * 2.0 + 1.0;
    EXPECT_EQ(y.shape(), (Shape{kRows, kCols}));
    EXPECT_EQ(y.bound_shape(), (Shape{k, kCols}));
    EXPECT_EQ(y.bound_numel(), k * kCols);
    std::vector<double> want;
    for (int64_t i = 0; i < k * kCols; ++i) want.push_back(2.0 * xv[static_cast<size_t>(i)] + 1.0);
    expect_near_all(y.data<float>(), want, 1e-6, cat("k ", k));
  }
}

TEST(FrameworkSymbolicShape, ReductionsOverTheSymbolicAxisSkipWhatIsNotThere) {
  const Variable n("n", 1, kRows);
  for (int64_t k : {1, 4, 7}) {
    const std::vector<float> xv = rows_then_large(k, 2);
    const Tensor xn = Tensor(xv, {kRows, kCols}).narrow(0, n.bind(k));
    std::vector<double> sum(kCols, 0), mx(kCols, -1e30), mn(kCols, 1e30), prod(kCols, 1);
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < kCols; ++j) {
        const double v = xv[static_cast<size_t>(i * kCols + j)];
        sum[j] += v;
        mx[j] = std::max(mx[j], v - 3.0);  // shifted below 0: a 0 taken for a missing row would win
        mn[j] = std::min(mn[j], v + 3.0);  // above 0
        prod[j] *= v;
      }
    std::vector<double> mean(kCols), var(kCols, 0), argmax(kCols, 0);
    for (int64_t j = 0; j < kCols; ++j) {
      mean[j] = sum[j] / static_cast<double>(k);
      for (int64_t i = 0; i < k; ++i) {
        const double d = xv[static_cast<size_t>(i * kCols + j)] - mean[j];
        var[j] += d * d / static_cast<double>(std::max<int64_t>(k - 1, 0));
      }
      for (int64_t i = k - 1; i >= 0; --i)
        if (xv[static_cast<size_t>(i * kCols + j)] - 3.0 == mx[j]) argmax[j] = static_cast<double>(i);
    }
    const std::string at = cat("k ", k);
    expect_near_all(xn.sum(0).data<float>(), sum, 1e-5, "sum " + at);
    expect_near_all((xn - 3.0).max(0).data<float>(), mx, 1e-6, "max " + at);
    expect_near_all((xn + 3.0).min(0).data<float>(), mn, 1e-6, "min " + at);
    expect_near_all(xn.prod(0).data<float>(), prod, 1e-5, "prod " + at);
    expect_near_all(xn.mean(0).data<float>(), mean, 1e-5, "mean " + at);
    if (k > 1) expect_near_all(xn.var(0).data<float>(), var, 1e-4, "var " + at);
    const std::vector<double> am = (xn - 3.0).argmax(0).tolist();
    EXPECT_EQ(am, argmax) << "argmax " << at;
    // Over the other axis the symbolic one stays: k sums of a row each.
    const Tensor rows = xn.sum(1);
    EXPECT_EQ(rows.bound_shape(), (Shape{k}));
    std::vector<double> row_sums(static_cast<size_t>(k), 0);
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < kCols; ++j) row_sums[static_cast<size_t>(i)] += xv[static_cast<size_t>(i * kCols + j)];
    expect_near_all(rows.data<float>(), row_sums, 1e-5, "row sums " + at);
    // softmax over the symbolic axis: the present rows' column sums are 1.
    const std::vector<float> sm = xn.softmax(0).data<float>();
    for (int64_t j = 0; j < kCols; ++j) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += sm[static_cast<size_t>(i * kCols + j)];
      EXPECT_NEAR(s, 1.0, 1e-5) << "softmax column " << j << " " << at;
    }
  }
}

TEST(FrameworkSymbolicShape, MatmulWithASymbolicBatchOrInnerDimension) {
  const Variable n("n", 1, kRows), m("m", 1, kRows);
  const std::vector<float> wv = values(kCols * 4, 3);
  const Tensor w(wv, {kCols, 4});
  for (int64_t k : {2, 5}) {
    const std::vector<float> xv = rows_then_large(k, 4);
    const Tensor out = Tensor(xv, {kRows, kCols}).narrow(0, n.bind(k)).matmul(w);
    EXPECT_EQ(out.bound_shape(), (Shape{k, 4}));
    expect_near_all(out.data<float>(), host_product(xv, k, kCols, wv, 4, kCols), 1e-4, cat("batch k ", k));

    // (3, m) @ (m, 2): the product sums over the first m only.
    std::vector<float> av = values(3 * kRows, 5), bv = values(kRows * 2, 6);
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = k; c < kRows; ++c) av[static_cast<size_t>(r * kRows + c)] = 1000.0f;
    const Tensor a = Tensor(av, {3, kRows}).narrow(1, m.bind(k)), b = Tensor(bv, {kRows, 2}).narrow(0, m.bind(k));
    const Tensor inner = a.matmul(b);
    EXPECT_EQ(inner.bound_shape(), (Shape{3, 2}));
    expect_near_all(inner.data<float>(), host_product(av, 3, kRows, bv, 2, k), 1e-4, cat("inner k ", k));
  }
}

// A realized tensor keeps its symbolic dimension: exp() of the rows past the value would be exp(0) = 1 in its
// storage, and a sum over it must still take the present rows only.
TEST(FrameworkSymbolicShape, RealizedTensorsKeepTheirSymbolicDimension) {
  const Variable n("n", 1, kRows);
  const std::vector<float> xv = values(kRows * kCols, 7);
  Tensor h = Tensor(xv, {kRows, kCols}).narrow(0, n.bind(3)).exp();
  h.realize();
  EXPECT_EQ(h.bound_shape(), (Shape{3, kCols}));
  std::vector<double> want(kCols, 0);
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < kCols; ++j)
      want[j] += std::exp(static_cast<double>(xv[static_cast<size_t>(i * kCols + j)]));
  expect_near_all(h.sum(0).data<float>(), want, 1e-4, "sum of a realized narrowed tensor");
}

// The value is not part of the schedule: another one hits the schedule cache and compiles nothing.
TEST(FrameworkSymbolicShape, NewValuesReuseTheScheduleAndKernels) {
  const Variable n("n", 1, kRows);
  const Tensor x(values(kRows * kCols, 8), {kRows, kCols});
  const Tensor w(values(kCols * 3, 9), {kCols, 3});
  auto step = [&](int64_t k) { return x.narrow(0, n.bind(k)).matmul(w).relu().mean(0).data<float>(); };
  (void)step(1);
  const FrameworkCounters before = framework_counters();
  for (int64_t k = 2; k <= kRows; ++k) EXPECT_EQ(step(k).size(), 3u) << k;
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.schedule_misses, before.schedule_misses);
  EXPECT_EQ(after.compiles, before.compiles);
}

TEST(FrameworkSymbolicShape, GradientsFlowToThePresentRowsOnly) {
  const Variable n("n", 1, kRows);
  const std::vector<float> xv = rows_then_large(3, 10), wv = values(kCols * 2, 11);
  Tensor w = Tensor(wv, {kCols, 2}).requires_grad_();
  Tensor(xv, {kRows, kCols}).narrow(0, n.bind(3)).matmul(w).sum().backward();
  std::vector<double> want(kCols * 2, 0);  // d/dw[c][j] of the sum = the column sum of x's present rows
  for (int64_t c = 0; c < kCols; ++c)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 2; ++j) want[static_cast<size_t>(c * 2 + j)] += xv[static_cast<size_t>(i * kCols + c)];
  expect_near_all(w.grad().data<float>(), want, 1e-4, "w's gradient");
}

TEST(FrameworkSymbolicShape, ErrorsNameTheDimensionAndTheWayOut) {
  const Variable n("n", 1, kRows), m("m", 1, kRows), big("big", 1, 9);
  const Tensor x(values(kRows * kCols, 12), {kRows, kCols});
  const Tensor xn = x.narrow(0, n.bind(3));
  EXPECT_EQ(test::message_of<ShapeError>([&] { (void)xn.reshape({kRows * kCols}); }),
            "reshape: cannot reshape (n=3 (1..8), 5) to (40,): it would merge or split a symbolic dimension (keep "
            "each one a dimension of its own, with the same number of elements before it)");
  EXPECT_EQ(test::message_of<ShapeError>([&] { (void)(xn + x.narrow(0, m.bind(3))); }),
            "add: dimension 0 is n=3 (1..8) in (n=3 (1..8), 5) but m=3 (1..8) in (m=3 (1..8), 5) (narrow both with "
            "the same bound variable)");
  EXPECT_EQ(test::message_of<ShapeError>([&] { (void)(xn + x); }),
            "add: dimension 0 is n=3 (1..8) in (n=3 (1..8), 5) but 8 in (8, 5) (narrow both with the same bound "
            "variable)");
  EXPECT_EQ(test::message_of<ShapeError>([&] { (void)xn.pad({{0, 1}, {0, 0}}); }),
            "pad: dimension 0 of (n=3 (1..8), 5) is symbolic (n=3 (1..8)); pad only its concrete dimensions");
  EXPECT_EQ(test::message_of<ShapeError>([&] { (void)xn.narrow(0, n.bind(2)); }),
            "narrow: dimension 0 of (n=3 (1..8), 5) is symbolic already");
  EXPECT_EQ(test::message_of<ShapeError>([&] { (void)x.narrow(0, big.bind(2)); }),
            "narrow: big=2 (1..9) can exceed dimension 0 of (8, 5), which is 8");
  EXPECT_EQ(test::message_of<InvalidArgument>([&] { (void)x.narrow(1, Tensor::scalar(3, dtypes::int32)); }),
            "narrow: the size must be a bound Variable (Variable::bind), not a CONST ()");
  Tensor target = Tensor::zeros({kRows, kCols}).realize();
  EXPECT_EQ(test::message_of<ShapeError>([&] { target.assign(xn); }),
            "assign: (n=3 (1..8), 5) into (8, 5): a tensor with a symbolic dimension is not assigned (yet); compute "
            "it and read it, or return it from the TinyJit");
  // Broadcasting along a symbolic dimension from size 1, and a new leading one, are fine; so is a size-1 dimension
  // beside a symbolic one in the same operand.
  const Tensor b = xn + Tensor(values(kCols, 13), {1, kCols});
  EXPECT_EQ(b.bound_shape(), (Shape{3, kCols}));
  const Variable c("c", 1, kCols);
  const Tensor both = xn.narrow(1, c.bind(4));                                    // (n, c)
  const Tensor row = Tensor(values(kCols, 14), {1, kCols}).narrow(1, c.bind(4));  // (1, c)
  EXPECT_EQ((both + row).bound_shape(), (Shape{3, 4}));
}

// A batch size bound per call: one capture, replays for every value, each equal to the eager call bit for bit.
TEST(FrameworkJitSymbolicShape, ABatchSizeReplaysWithoutRecapture) {
  const Variable n("batch", 1, kRows);
  const Tensor w = Tensor(values(kCols * 4, 14), {kCols, 4}).realize();
  auto f = [&](const std::vector<Tensor>& in) {
    const Tensor h = in[0].narrow(0, in[1]).matmul(w).relu();
    return std::vector<Tensor>{h, h.mean(0), h.sum(1)};
  };
  TinyJit jit(f);
  const std::vector<int64_t> ks{3, 1, 8, 5, 2, 7, 4};
  FrameworkCounters after_capture{};
  for (size_t c = 0; c < ks.size(); ++c) {
    const int64_t k = ks[c];
    const Tensor x = Tensor(rows_then_large(k, static_cast<uint32_t>(20 + c)), {kRows, kCols}).realize();
    const std::vector<Tensor> got = jit({x, n.bind(k)});
    if (c == 1) after_capture = framework_counters();
    const std::vector<Tensor> eager = f({x, n.bind(k)});
    ASSERT_EQ(got.size(), 3u);
    EXPECT_EQ(got[0].bound_shape(), (Shape{k, 4})) << "call " << c;
    EXPECT_EQ(got[2].bound_shape(), (Shape{k})) << "call " << c;
    for (size_t o = 0; o < got.size(); ++o) {
      const std::vector<float> g = got[o].data<float>(), e = eager[o].data<float>();
      EXPECT_EQ(g, e) << "call " << c << " output " << o;
    }
    // The mean against the host: the present rows' relu'd products, averaged over k.
    const std::vector<double> product = host_product(x.data<float>(), k, kCols, w.data<float>(), 4, kCols);
    const std::vector<float> mean = got[1].data<float>();
    for (int64_t j = 0; j < 4; ++j) {
      double s = 0;
      for (int64_t i = 0; i < k; ++i) s += std::max(product[static_cast<size_t>(i * 4 + j)], 0.0);
      EXPECT_NEAR(mean[static_cast<size_t>(j)], s / static_cast<double>(k), 1e-4) << "call " << c << " column " << j;
    }
  }
  // Calls 2+ replay: no schedule miss and no compile beyond the capture's (the eager calls above hit the cache).
  const FrameworkCounters end = framework_counters();
  EXPECT_EQ(end.compiles, after_capture.compiles);
  EXPECT_EQ(jit.info().calls, ks.size());
}

// A sequence length: the mean over the symbolic axis of a (batch, seq, dim) input, jitted.
TEST(FrameworkJitSymbolicShape, ASequenceLengthReducesOverItsPresentSteps) {
  const Variable len("len", 1, 6);
  auto f = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].narrow(1, in[1]).mean(1), in[0].narrow(1, in[1]).max(1)};
  };
  TinyJit jit(f);
  for (int64_t k : {6, 2, 4, 1, 5}) {
    std::vector<float> xv = values(2 * 6 * 3, static_cast<uint32_t>(30 + k));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = k; s < 6; ++s)
        for (int64_t d = 0; d < 3; ++d) xv[static_cast<size_t>((b * 6 + s) * 3 + d)] = 50.0f;
    const Tensor x = Tensor(xv, {2, 6, 3}).realize();
    const std::vector<Tensor> got = jit({x, len.bind(k)});
    std::vector<double> mean, mx;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t d = 0; d < 3; ++d) {
        double s = 0, m = -1e30;
        for (int64_t t = 0; t < k; ++t) {
          const double v = xv[static_cast<size_t>((b * 6 + t) * 3 + d)];
          s += v;
          m = std::max(m, v);
        }
        mean.push_back(s / static_cast<double>(k));
        mx.push_back(m);
      }
    expect_near_all(got[0].data<float>(), mean, 1e-5, cat("mean, len ", k));
    expect_near_all(got[1].data<float>(), mx, 0, cat("max, len ", k));
  }
  EXPECT_EQ(jit.info().graphs, 1u);
}

TEST(FrameworkJitSymbolicShape, ANarrowedInputIsAJitErrorThatSaysWhatToPass) {
  const Variable n("n", 1, kRows);
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0}; });
  Tensor xn = Tensor(values(kRows * kCols, 40), {kRows, kCols}).narrow(0, n.bind(2));
  xn.realize();
  EXPECT_EQ(jittest::jit_error([&] { (void)jit({xn}); }),
            "TinyJit: input 0 (n=2 (1..8), 5) has a symbolic dimension: the replay binds inputs by their buffers and "
            "would keep the first call's size. Pass the whole tensor and the bound variable as inputs, and narrow "
            "inside the jitted function");
}

}  // namespace
}  // namespace hcq
