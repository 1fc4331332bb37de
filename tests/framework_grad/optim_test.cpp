// The optimisers' steps against updates computed here: by hand for SGD's variants, by a plain double loop of
// PyTorch's documented Adam and AdamW for several steps; a step is one realize; the learning rate changes without
// a compile; and the misuses' messages.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/message_of.hpp"
#include "framework_grad/grad_test_util.hpp"
#include "hcq/error.hpp"
#include "hcq/optim.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using gradtest::param;

// loss = sum(p * c): the gradient is c, whatever p is.
void backward_with_gradient(const Tensor& p, std::vector<float> c) {
  const int64_t n = static_cast<int64_t>(c.size());
  (p * Tensor(c, {n})).sum().backward();
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], tol * std::max(1.0, std::abs(want[k]))) << k;
}

using test::message_of;

TEST(Optim, SgdStepsByHand) {
  Tensor p = param({1, 2});
  optim::SGD sgd({p}, 0.1);
  backward_with_gradient(p, {3, 4});
  sgd.step();
  expect_near(p.data<float>(), {0.7, 1.6});  // p - 0.1 g

  Tensor q = param({1, 2});
  optim::SGD momentum({q}, 0.1, 0.9);
  for (int step = 0; step < 2; ++step) {
    momentum.zero_grad();
    backward_with_gradient(q, {3, 4});
    momentum.step();
  }
  expect_near(q.data<float>(), {0.13, 0.84});  // b1 = g, b2 = 1.9 g: p - 0.1 g - 0.19 g

  Tensor r = param({1, 2});
  optim::SGD nesterov({r}, 0.1, 0.9, 0, true);
  backward_with_gradient(r, {3, 4});
  nesterov.step();
  expect_near(r.data<float>(), {0.43, 1.24});  // g + 0.9 b = 1.9 g

  Tensor s = param({1, 2});
  optim::SGD decay({s}, 0.1, 0, 0.5);
  backward_with_gradient(s, {3, 4});
  decay.step();
  expect_near(s.data<float>(), {0.65, 1.5});  // g + 0.5 p = (3.5, 5)
}

// PyTorch's Adam and AdamW, as documented, in doubles, for the given gradient sequence.
std::vector<double> adam_reference(std::vector<double> p, const std::vector<std::vector<double>>& grads, double lr,
                                   double b1, double b2, double eps, double wd, bool decoupled) {
  std::vector<double> m(p.size(), 0), v(p.size(), 0);
  for (size_t t = 1; t <= grads.size(); ++t) {
    for (size_t k = 0; k < p.size(); ++k) {
      double g = grads[t - 1][k];
      if (decoupled) p[k] *= 1 - lr * wd;
      else g += wd * p[k];
      m[k] = b1 * m[k] + (1 - b1) * g;
      v[k] = b2 * v[k] + (1 - b2) * g * g;
      const double m_hat = m[k] / (1 - std::pow(b1, t)), v_hat = v[k] / (1 - std::pow(b2, t));
      p[k] -= lr * m_hat / (std::sqrt(v_hat) + eps);
    }
  }
  return p;
}

TEST(Optim, AdamAndAdamWFollowTheirDefinitionsOverSteps) {
  const std::vector<std::vector<double>> grads = {{3, -4, 0.5}, {1, 2, -0.25}, {-2, 0.5, 1}, {0.1, -0.1, 4}};
  struct Case {
    const char* name;
    double wd;
    bool decoupled;
  };
  for (const Case& c : {Case{"Adam", 0, false}, Case{"Adam with L2", 0.1, false}, Case{"AdamW", 0.1, true}}) {
    Tensor p = param({1, 2, -1});
    std::unique_ptr<optim::Optimizer> opt;
    if (c.decoupled) opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, 0.01, 0.9, 0.999, 1e-8, c.wd);
    else opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, 0.01, 0.9, 0.999, 1e-8, c.wd);
    for (const std::vector<double>& g : grads) {
      opt->zero_grad();
      backward_with_gradient(p, {static_cast<float>(g[0]), static_cast<float>(g[1]), static_cast<float>(g[2])});
      opt->step();
    }
    SCOPED_TRACE(c.name);
    expect_near(p.data<float>(), adam_reference({1, 2, -1}, grads, 0.01, 0.9, 0.999, 1e-8, c.wd, c.decoupled), 1e-5);
  }
}

TEST(Optim, AStepIsOneRealizeAndTheLearningRateIsNotCompiledIn) {
  Tensor a = param({1, 2}), b = param({3, 4, 5});
  optim::Adam adam({a, b}, 0.01);
  auto step = [&] {
    adam.zero_grad();
    (a.sum() + (b * b).sum()).backward();
    const FrameworkCounters before = framework_counters();
    adam.step();
    const FrameworkCounters after = framework_counters();
    return after.schedule_misses + after.schedule_hits - before.schedule_misses - before.schedule_hits;
  };
  EXPECT_EQ(step(), 1u);
  EXPECT_EQ(step(), 1u);
  adam.set_lr(0.5);
  step();
  const uint64_t compiles = framework_counters().compiles;
  const std::vector<float> before = a.data<float>();
  adam.set_lr(0.25);  // a schedule of rates: each new rate costs no compile
  EXPECT_EQ(adam.lr(), 0.25);
  step();
  EXPECT_EQ(framework_counters().compiles, compiles);
  // At Adam's steady state the step is about lr per element: the new rate took effect.
  EXPECT_NEAR(before[0] - a.data<float>()[0], 0.25, 0.05);
}

TEST(Optim, ParametersWithoutAGradientAreLeftAlone) {
  Tensor used = param({1}), unused = param({7, 8});
  optim::SGD sgd({used, unused}, 1.0);
  backward_with_gradient(used, {2});
  sgd.step();
  expect_near(used.data<float>(), {-1});
  expect_near(unused.data<float>(), {7, 8});
}

TEST(Optim, Misuse) {
  EXPECT_EQ(message_of<InvalidArgument>([] { optim::Adam({}); }), "Adam: no parameters to optimise");
  EXPECT_EQ(message_of<InvalidArgument>([] { optim::SGD({param({1}), Tensor(std::vector<float>{1}, {1})}, 0.1); }),
            "SGD: parameter 1 does not require a gradient (call requires_grad_())");
  EXPECT_EQ(message_of<InvalidArgument>([] { optim::SGD({param({1})}, 0.1, 0, 0, true); }),
            "SGD: Nesterov momentum needs a momentum other than 0");
  EXPECT_EQ(message_of<InvalidArgument>(
                [] { optim::AdamW({param({1}), Tensor(std::vector<float>{1}, {1}, "CPU:1").requires_grad_()}); }),
            "AdamW: parameter 1 is on CPU:1, parameter 0 on CPU:0 (one optimiser per device)");
}

}  // namespace
}  // namespace hcq
