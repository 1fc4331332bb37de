// Every differentiable op's gradient against numerical differences: for a case op(x1, ..., xn), the loss is
// sum(op(x) * w) with fixed random weights w, backward() gives dL/dxi in float32, and the expected value is the
// central difference (L(x + h) - L(x - h)) / 2h of the same loss computed by the double-precision reference
// (framework_ops/reference.hpp), which shares no code with the framework. Inputs are drawn away from the points
// where an op is not differentiable (0 for abs and relu, ties for max); those points have tests of their own in
// backward_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

#include "framework_grad/layer_reference.hpp"
#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/nn.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

using Arrays = std::vector<ref::Array>;
using Tensors = std::vector<Tensor>;

struct GradCase {
  std::string name;
  std::vector<ref::Dims> shapes;
  std::function<Tensor(const Tensors&)> op;
  std::function<ref::Array(const Arrays&)> reference;
  Domain domain = {-2, 2};
};

double weighted_loss(const ref::Array& out, const ref::Array& w) {
  double l = 0;
  for (size_t k = 0; k < out.values.size(); ++k) l += out.values[k] * w.values[k];
  return l;
}

// The numerical gradient of sum(reference(x) * w) with respect to input `which`.
ref::Array numerical_gradient(const GradCase& c, Arrays x, size_t which, const ref::Array& w) {
  ref::Array g = ref::Array::filled(x[which].shape, 0.0);
  for (size_t k = 0; k < x[which].values.size(); ++k) {
    const double v = x[which].values[k], h = 1e-6 * std::max(1.0, std::abs(v));
    x[which].values[k] = v + h;
    const double up = weighted_loss(c.reference(x), w);
    x[which].values[k] = v - h;
    const double down = weighted_loss(c.reference(x), w);
    x[which].values[k] = v;
    g.values[k] = (up - down) / (2 * h);
  }
  return g;
}

// Runs every case: all backward() calls first, then one realize of every gradient (their kernels compile in
// parallel), then the comparisons. float32 forward and backward against a double reference: a relative 1e-3
// leaves room for a few roundings through exp and log, and is far below what a wrong rule gives.
void check_gradients(const std::vector<GradCase>& cases) {
  struct Pending {
    const GradCase* c;
    Arrays x;
    ref::Array w;
    Tensors inputs;
  };
  std::vector<Pending> pending;
  Tensors grads;
  uint64_t seed = 1;
  for (const GradCase& c : cases) {
    Pending p{&c, {}, {}, {}};
    for (const ref::Dims& shape : c.shapes) {
      p.x.push_back(random_array(shape, DType::float32, c.domain, seed++));
      p.inputs.push_back(to_tensor(p.x.back(), DType::float32).requires_grad_());
    }
    const Tensor out = c.op(p.inputs);
    const ref::Array want_out = c.reference(p.x);
    EXPECT_EQ(ref::format(out.shape()), ref::format(want_out.shape)) << c.name;
    p.w = random_array(want_out.shape, DType::float32, Domain{-1, 1}, seed++);
    out.mul(to_tensor(p.w, DType::float32)).sum().backward();
    for (const Tensor& in : p.inputs) {
      EXPECT_TRUE(in.grad().defined()) << c.name;
      grads.push_back(in.grad().defined() ? in.grad() : Tensor::zeros(in.shape()));
    }
    pending.push_back(std::move(p));
  }
  Tensor::realize(grads);
  size_t g = 0;
  for (const Pending& p : pending) {
    for (size_t k = 0; k < p.inputs.size(); ++k, ++g) {
      const ref::Array want = numerical_gradient(*p.c, p.x, k, p.w);
      EXPECT_TRUE(matches(to_array(grads[g]), want, Tolerance{1e-3, 1e-4}))
          << p.c->name << ": the gradient of input " << k;
    }
  }
}

ref::Array unary_ref(const Arrays& x, double (*f)(double)) { return ref::map(x[0], f); }

double sigmoid(double v) { return 1 / (1 + std::exp(-v)); }
double gelu(double v) {
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
}

TEST(Autograd, UnaryOps) {
  const ref::Dims s = {3, 5};
  const Domain positive = {0.5, 3}, away_from_zero = {-2, 2, false, 0.2};
  check_gradients({
      {"neg",
       {s},
       [](const Tensors& t) { return t[0].neg(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return -v; }); }},
      {"exp",
       {s},
       [](const Tensors& t) { return t[0].exp(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::exp(v); }); }},
      {"exp2",
       {s},
       [](const Tensors& t) { return t[0].exp2(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::exp2(v); }); }},
      {"log",
       {s},
       [](const Tensors& t) { return t[0].log(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::log(v); }); },
       positive},
      {"log2",
       {s},
       [](const Tensors& t) { return t[0].log2(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::log2(v); }); },
       positive},
      {"sqrt",
       {s},
       [](const Tensors& t) { return t[0].sqrt(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::sqrt(v); }); },
       positive},
      {"rsqrt",
       {s},
       [](const Tensors& t) { return t[0].rsqrt(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return 1 / std::sqrt(v); }); },
       positive},
      {"sin",
       {s},
       [](const Tensors& t) { return t[0].sin(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::sin(v); }); }},
      {"cos",
       {s},
       [](const Tensors& t) { return t[0].cos(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::cos(v); }); }},
      {"abs",
       {s},
       [](const Tensors& t) { return t[0].abs(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::abs(v); }); },
       away_from_zero},
      {"reciprocal",
       {s},
       [](const Tensors& t) { return t[0].reciprocal(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return 1 / v; }); },
       away_from_zero},
      {"relu",
       {s},
       [](const Tensors& t) { return t[0].relu(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return v > 0 ? v : 0; }); },
       away_from_zero},
      {"sigmoid",
       {s},
       [](const Tensors& t) { return t[0].sigmoid(); },
       [](const Arrays& x) { return unary_ref(x, sigmoid); }},
      {"tanh",
       {s},
       [](const Tensors& t) { return t[0].tanh(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::tanh(v); }); }},
      {"gelu", {s}, [](const Tensors& t) { return t[0].gelu(); }, [](const Arrays& x) { return unary_ref(x, gelu); }},
      {"silu",
       {s},
       [](const Tensors& t) { return t[0].silu(); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return v * sigmoid(v); }); }},
      // Bounds the inputs keep clear of (the draw is [-2, 2) in steps far coarser than h).
      {"clip",
       {s},
       [](const Tensors& t) { return t[0].clip(-0.75, 0.75); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return std::clamp(v, -0.75, 0.75); }); }},
      {"sign (zero gradient)",
       {s},
       [](const Tensors& t) { return t[0].sign().add(t[0]); },
       [](const Arrays& x) { return unary_ref(x, [](double v) { return (v > 0) - (v < 0) + v; }); },
       away_from_zero},
  });
}

TEST(Autograd, BinaryOpsWithBroadcasting) {
  // (3, 1, 4) with (5, 1): both operands are broadcast, so each gradient is a sum over what was expanded.
  const ref::Dims a = {3, 1, 4}, b = {5, 1};
  const Domain positive = {0.5, 2};
  auto zip = [](double (*f)(double, double)) { return [f](const Arrays& x) { return ref::zip(x[0], x[1], f); }; };
  check_gradients({
      {"add", {a, b}, [](const Tensors& t) { return t[0] + t[1]; }, zip([](double p, double q) { return p + q; })},
      {"sub", {a, b}, [](const Tensors& t) { return t[0] - t[1]; }, zip([](double p, double q) { return p - q; })},
      {"mul", {a, b}, [](const Tensors& t) { return t[0] * t[1]; }, zip([](double p, double q) { return p * q; })},
      {"div",
       {a, b},
       [](const Tensors& t) { return t[0] / t[1]; },
       zip([](double p, double q) { return p / q; }),
       positive},
      {"pow",
       {a, b},
       [](const Tensors& t) { return t[0].pow(t[1]); },
       zip([](double p, double q) { return std::pow(p, q); }),
       positive},
      {"maximum", {a, b}, [](const Tensors& t) { return t[0].maximum(t[1]); }, zip([](double p, double q) {
         return std::max(p, q);
       })},
      {"minimum", {a, b}, [](const Tensors& t) { return t[0].minimum(t[1]); }, zip([](double p, double q) {
         return std::min(p, q);
       })},
      {"where", {a, b}, [](const Tensors& t) { return t[0].gt(0.25).where(t[0], t[1]); }, zip([](double p, double q) {
         return p > 0.25 ? p : q;
       })},
      {"pow by a scalar",
       {a},
       [](const Tensors& t) { return t[0].pow(3); },
       [](const Arrays& x) { return ref::map(x[0], [](double v) { return v * v * v; }); }},
      {"scalar minus",
       {a},
       [](const Tensors& t) { return 2.0 - t[0] / 3.0; },
       [](const Arrays& x) { return ref::map(x[0], [](double v) { return 2.0 - v / 3.0; }); }},
  });
}

TEST(Autograd, Reductions) {
  const ref::Dims s = {4, 6};
  check_gradients({
      {"sum over all",
       {s},
       [](const Tensors& t) { return t[0].sum(); },
       [](const Arrays& x) { return ref::sum(x[0], {}, false); }},
      {"sum over an axis",
       {s},
       [](const Tensors& t) { return t[0].sum(0); },
       [](const Arrays& x) { return ref::sum(x[0], {0}, false); }},
      {"max",
       {s},
       [](const Tensors& t) { return t[0].max(1); },
       [](const Arrays& x) { return ref::max(x[0], {1}, false); }},
      {"min over all",
       {s},
       [](const Tensors& t) { return t[0].min(); },
       [](const Arrays& x) { return ref::min(x[0], {}, false); }},
      {"mean",
       {s},
       [](const Tensors& t) { return t[0].mean(1, true); },
       [](const Arrays& x) { return ref::mean(x[0], {1}, true); }},
      {"prod",
       {s},
       [](const Tensors& t) { return t[0].prod(1); },
       [](const Arrays& x) { return ref::prod(x[0], {1}, false); },
       Domain{0.5, 1.5}},
      {"var",
       {s},
       [](const Tensors& t) { return t[0].var(0); },
       [](const Arrays& x) { return ref::var(x[0], {0}, false, 1); }},
      {"std",
       {s},
       [](const Tensors& t) { return t[0].std(1); },
       [](const Arrays& x) { return ref::std_dev(x[0], {1}, false, 1); }},
      {"softmax",
       {s},
       [](const Tensors& t) { return t[0].softmax(1); },
       [](const Arrays& x) { return ref::softmax(x[0], 1); }},
      {"log_softmax",
       {s},
       [](const Tensors& t) { return t[0].log_softmax(0); },
       [](const Arrays& x) { return ref::log_softmax(x[0], 0); }},
      {"logsumexp",
       {s},
       [](const Tensors& t) { return t[0].logsumexp(1); },
       [](const Arrays& x) { return ref::logsumexp(x[0], 1, false); }},
      {"cumsum",
       {s},
       [](const Tensors& t) { return t[0].cumsum(1); },
       [](const Arrays& x) { return ref::cumsum(x[0], 1); }},
  });
}

TEST(Autograd, Movement) {
  const ref::Dims s = {2, 3, 4};
  check_gradients({
      {"reshape",
       {s},
       [](const Tensors& t) { return t[0].reshape({6, 4}); },
       [](const Arrays& x) { return ref::reshape(x[0], {6, 4}); }},
      {"permute",
       {s},
       [](const Tensors& t) { return t[0].permute({2, 0, 1}); },
       [](const Arrays& x) { return ref::permute(x[0], {2, 0, 1}); }},
      {"expand",
       {{2, 1, 4}},
       [](const Tensors& t) { return t[0].expand({2, 5, 4}); },
       [](const Arrays& x) { return ref::expand(x[0], {2, 5, 4}); }},
      {"pad",
       {s},
       [](const Tensors& t) { return t[0].pad({{1, 0}, {0, 2}, {1, 1}}, 3.0); },
       [](const Arrays& x) { return ref::pad(x[0], {{1, 0}, {0, 2}, {1, 1}}, 3.0); }},
      {"shrink",
       {s},
       [](const Tensors& t) { return t[0].shrink({{0, 2}, {1, 3}, {1, 4}}); },
       [](const Arrays& x) { return ref::shrink(x[0], {{0, 2}, {1, 3}, {1, 4}}); }},
      {"slice with a step",
       {s},
       [](const Tensors& t) { return t[0].slice(2, 0, 4, 2); },
       [](const Arrays& x) { return ref::slice(x[0], 2, 0, 4, 2); }},
      {"flip",
       {s},
       [](const Tensors& t) { return t[0].flip({0, 2}); },
       [](const Arrays& x) { return ref::flip(x[0], {0, 2}); }},
      {"squeeze and unsqueeze",
       {{3, 1, 4}},
       [](const Tensors& t) { return t[0].squeeze(1).unsqueeze(0); },
       [](const Arrays& x) { return ref::unsqueeze(ref::squeeze(x[0], 1), 0); }},
      {"flatten",
       {s},
       [](const Tensors& t) { return t[0].flatten(1); },
       [](const Arrays& x) { return ref::flatten(x[0], 1, -1); }},
      {"repeat",
       {{2, 3}},
       [](const Tensors& t) { return t[0].repeat({2, 1, 2}); },
       [](const Arrays& x) { return ref::repeat(x[0], {2, 1, 2}); }},
      {"cat",
       {{2, 3}, {4, 3}},
       [](const Tensors& t) { return t[0].cat({t[1]}, 0); },
       [](const Arrays& x) { return ref::cat({x[0], x[1]}, 0); }},
      {"stack",
       {{2, 3}, {2, 3}},
       [](const Tensors& t) { return Tensor::stack({t[0], t[1]}, 1); },
       [](const Arrays& x) { return ref::stack({x[0], x[1]}, 1); }},
      {"contiguous",
       {s},
       [](const Tensors& t) { return t[0].permute({1, 0, 2}).contiguous().exp(); },
       [](const Arrays& x) { return ref::map(ref::permute(x[0], {1, 0, 2}), [](double v) { return std::exp(v); }); }},
  });
}

TEST(Autograd, Matmul) {
  check_gradients({
      {"matrix by matrix",
       {{3, 4}, {4, 5}},
       [](const Tensors& t) { return t[0].matmul(t[1]); },
       [](const Arrays& x) { return ref::matmul(x[0], x[1]); }},
      {"batched, broadcast batch",
       {{2, 3, 4}, {4, 2}},
       [](const Tensors& t) { return t[0].matmul(t[1]); },
       [](const Arrays& x) { return ref::matmul(x[0], x[1]); }},
      {"vector by matrix",
       {{4}, {4, 3}},
       [](const Tensors& t) { return t[0].matmul(t[1]); },
       [](const Arrays& x) { return ref::matmul(x[0], x[1]); }},
  });
}

// A linear layer with a softmax cross-entropy on it: several ops in one graph, each input reaching the loss
// along more than one path (x through the matmul and the max of the shift), so gradients accumulate.
TEST(Autograd, ComposedLayers) {
  check_gradients({
      {"linear, relu, log_softmax",
       {{4, 3}, {3, 5}, {5}},
       [](const Tensors& t) { return t[0].matmul(t[1]).add(t[2]).relu().log_softmax(1); },
       [](const Arrays& x) {
         const ref::Array h = ref::zip(ref::matmul(x[0], x[1]), x[2], [](double p, double q) { return p + q; });
         return ref::log_softmax(ref::map(h, [](double v) { return v > 0 ? v : 0; }), 1);
       }},
      {"x * x through two paths",
       {{5}},
       [](const Tensors& t) { return t[0] * t[0].exp() + t[0]; },
       [](const Arrays& x) { return ref::map(x[0], [](double v) { return v * std::exp(v) + v; }); }},
  });
}

// The layers built from movement ops and reductions: their gradients flow back through the sliding windows.
TEST(Autograd, Layers) {
  using laytest::Window;
  check_gradients({
      {"conv2d, stride 2, padding 1, groups 2",
       {{1, 4, 5, 6}, {4, 2, 3, 2}, {4}},
       [](const Tensors& t) { return nn::conv2d(t[0], t[1], t[2], {2, 1}, {1, 1}, {1, 1}, 2); },
       [](const Arrays& x) { return laytest::conv2d(x[0], x[1], &x[2], Window{3, 2, 2, 1, 1, 1}, 2); }},
      {"conv2d, dilation 2",
       {{2, 1, 6, 6}, {2, 1, 2, 2}},
       [](const Tensors& t) { return nn::conv2d(t[0], t[1], {}, {1, 1}, {0, 0}, {2, 2}); },
       [](const Arrays& x) { return laytest::conv2d(x[0], x[1], nullptr, Window{2, 2, 1, 1, 0, 0, 2, 2}, 1); }},
      // Rows and columns no window reaches (the stride leaves 1 and 1 over), with strides, padding and dilation
      // all at once; the weight is computed (not a buffer), so its gradient goes on through the square.
      {"conv2d, stride 3 x 2, padding 0 x 1, dilation 1 x 2, a computed weight",
       {{2, 3, 7, 8}, {4, 3, 2, 3}},
       [](const Tensors& t) { return nn::conv2d(t[0], t[1] * t[1], {}, {3, 2}, {0, 1}, {1, 2}); },
       [](const Arrays& x) {
         const ref::Array w2 = ref::map(x[1], [](double v) { return v * v; });
         return laytest::conv2d(x[0], w2, nullptr, Window{2, 3, 3, 2, 0, 1, 1, 2}, 1);
       }},
      {"max_pool2d",
       {{1, 2, 4, 6}},
       [](const Tensors& t) { return nn::max_pool2d(t[0], {2, 3}); },
       [](const Arrays& x) { return laytest::pool2d(x[0], Window{2, 3, 2, 3}, true); }},
      {"avg_pool2d, padding 1",
       {{1, 2, 4, 4}},
       [](const Tensors& t) { return nn::avg_pool2d(t[0], {3, 3}, {2, 2}, {1, 1}); },
       [](const Arrays& x) { return laytest::pool2d(x[0], Window{3, 3, 2, 2, 1, 1}, false); }},
  });
}

}  // namespace
}  // namespace hcq::optest
