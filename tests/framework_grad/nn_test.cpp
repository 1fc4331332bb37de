// Layers and losses against plain double loops: Linear's forward, its initialisation's bounds, the losses' values
// and cross entropy's gradient (softmax minus the one-hot, over the batch), then a small model trained to a loss.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/message_of.hpp"
#include "hcq/error.hpp"
#include "hcq/jit.hpp"
#include "hcq/nn.hpp"
#include "hcq/optim.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using test::message_of;

TEST(NnLinear, ForwardIsXTimesWeightTransposedPlusBias) {
  nn::Linear l(3, 2);
  l.weight.assign(Tensor(std::vector<float>{1, 2, 3, -1, 0, 4}, {2, 3})).realize();
  l.bias.assign(Tensor(std::vector<float>{0.5f, -2}, {2})).realize();
  const Tensor y = l(Tensor(std::vector<float>{1, 1, 1, 2, 0, -1}, {2, 3}));
  // (1,1,1): 1+2+3+0.5 = 6.5, -1+0+4-2 = 1; (2,0,-1): 2-3+0.5 = -0.5, -2-4-2 = -8
  EXPECT_EQ(y.data<float>(), (std::vector<float>{6.5f, 1, -0.5f, -8}));
  EXPECT_EQ(l.parameters().size(), 2u);
  EXPECT_EQ(l.named_parameters("fc1.")[1].first, "fc1.bias");
  EXPECT_TRUE(l.weight.requires_grad());
}

TEST(NnLinear, InitialisationIsUniformWithinOneOverRootFanIn) {
  Tensor::manual_seed(7);
  nn::Linear a(100, 50), b(100, 50);
  const std::vector<float> w = a.weight.data<float>(), w2 = b.weight.data<float>();
  double sum = 0, sq = 0;
  for (float v : w) {
    EXPECT_LE(std::abs(v), 0.1f);
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  const double n = static_cast<double>(w.size());
  EXPECT_NEAR(sum / n, 0.0, 0.005);       // 5000 draws: the mean's standard error is 0.0008
  EXPECT_NEAR(sq / n, 0.01 / 3, 0.0004);  // the variance of U(-0.1, 0.1)
  EXPECT_NE(w, w2);                       // two layers, two draws
  EXPECT_EQ(a.bias.shape(), (Shape{50}));
  EXPECT_EQ(message_of<InvalidArgument>([] { nn::Linear(0, 3); }), "Linear: the sizes must be positive, got 0 -> 3");
  EXPECT_EQ(message_of<ShapeError>([&] { a(Tensor::ones({2, 99})); }),
            "Linear: the input's last dimension must be 100 (in_features), the input is 99 wide");
}

TEST(NnLoss, CrossEntropyValueAndGradient) {
  const std::vector<float> logits = {1, 2, 0.5f, -1, 0, 3};  // (2, 3)
  const std::vector<int32_t> labels = {1, 2};
  Tensor x = Tensor(logits, {2, 3}).requires_grad_();
  const Tensor loss = nn::cross_entropy(x, Tensor(labels, {2}));
  // The double loop: -mean(log softmax(x)[label]); d/dx = (softmax(x) - onehot) / N.
  double want = 0;
  std::vector<double> grad(6);
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (int c = 0; c < 3; ++c) z += std::exp(logits[r * 3 + c]);
    want -= (logits[r * 3 + labels[r]] - std::log(z)) / 2;
    for (int c = 0; c < 3; ++c) grad[r * 3 + c] = (std::exp(logits[r * 3 + c]) / z - (c == labels[r])) / 2;
  }
  EXPECT_NEAR(loss.item(), want, 1e-6);
  loss.backward();
  const std::vector<float> got = x.grad().data<float>();
  for (size_t k = 0; k < 6; ++k) EXPECT_NEAR(got[k], grad[k], 1e-6) << k;

  // Probabilities: the same labels as one-hot rows give the same loss; uint8 indices too.
  const Tensor one_hot(std::vector<float>{0, 1, 0, 0, 0, 1}, {2, 3});
  EXPECT_NEAR(nn::cross_entropy(Tensor(logits, {2, 3}), one_hot).item(), want, 1e-6);
  EXPECT_NEAR(nn::cross_entropy(Tensor(logits, {2, 3}), Tensor(std::vector<uint8_t>{1, 2}, {2})).item(), want, 1e-6);
  EXPECT_EQ(
      message_of<ShapeError>([&] { nn::cross_entropy(Tensor(logits, {2, 3}), Tensor::zeros({3}, DType::int32)); }),
      "cross_entropy: (3,) class indices for logits (2, 3) (one index per row)");
  EXPECT_EQ(message_of<ShapeError>([&] { nn::cross_entropy(Tensor(logits, {2, 3}), Tensor::zeros({3, 2})); }),
            "cross_entropy: class probabilities (3, 2) for logits (2, 3) (the same shape, or integer class indices)");
}

TEST(NnLoss, MseAndBinaryCrossEntropy) {
  const Tensor p(std::vector<float>{0.25f, 0.5f, 1}, {3}), t(std::vector<float>{0, 1, 1}, {3});
  EXPECT_NEAR(nn::mse_loss(p, t).item(), (0.0625 + 0.25 + 0) / 3, 1e-7);
  // -(log 0.75 + log 0.5 + log 1) / 3, and p = 1 with t = 0 is clamped at 100 rather than inf.
  EXPECT_NEAR(nn::binary_cross_entropy(p, t).item(), -(std::log(0.75) + std::log(0.5)) / 3, 1e-6);
  EXPECT_NEAR(nn::binary_cross_entropy(Tensor(std::vector<float>{1}, {1}), Tensor(std::vector<float>{0}, {1})).item(),
              100, 1e-4);
}

// Two-layer network on a fixed toy problem (the sign of x0 * x1, XOR-like, not linearly separable): Adam brings the
// loss from ln 2 to below 0.1 in 300 steps with this seed.
TEST(NnTraining, ASmallNetworkLearnsXor) {
  Tensor::manual_seed(1);
  nn::Linear l1(2, 16), l2(16, 2);
  std::vector<float> xs;
  std::vector<int32_t> ys;
  for (int k = 0; k < 64; ++k) {
    const float a = static_cast<float>((k * 37) % 64) / 32 - 1, b = static_cast<float>((k * 11) % 64) / 32 - 1;
    xs.push_back(a + (a >= 0 ? 0.1f : -0.1f));
    xs.push_back(b + (b >= 0 ? 0.1f : -0.1f));
    ys.push_back((a >= 0) != (b >= 0));
  }
  const Tensor x(xs, {64, 2}), y(ys, {64});
  std::vector<Tensor> params = l1.parameters();
  for (const Tensor& p : l2.parameters()) params.push_back(p);
  optim::Adam opt(params, 0.05);
  double first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    opt.zero_grad();
    Tensor loss = nn::cross_entropy(l2(l1(x).relu()), y);
    loss.backward();
    opt.step({loss});
    last = loss.item();
    if (step == 0) first = last;
  }
  EXPECT_NEAR(first, std::log(2.0), 0.2);
  EXPECT_LT(last, 0.1);
}

// One training step under TinyJit replays what the eager step computes, bit for bit: two models from the same seed,
// one stepped eagerly and one through the JIT on the same batches, end with the same weights and losses. The loss
// is realized with the step (Optimizer::step's `with`), so it is the loss before the update in both.
TEST(NnTraining, AJittedStepEqualsTheEagerStep) {
  struct Model {
    nn::Linear l1, l2;
    optim::Adam opt;
    explicit Model(uint64_t seed)
        : l1((Tensor::manual_seed(seed), nn::Linear(8, 16))), l2(16, 4), opt(params(), 0.01) {}
    std::vector<Tensor> params() const {
      std::vector<Tensor> p = l1.parameters();
      for (const Tensor& t : l2.parameters()) p.push_back(t);
      return p;
    }
    Tensor step(const Tensor& x, const Tensor& y) {
      opt.zero_grad();
      Tensor loss = nn::cross_entropy(l2(l1(x).relu()), y);
      loss.backward();
      opt.step({loss});
      return loss;
    }
  };
  Model eager(3), jitted(3);
  TinyJit step([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{jitted.step(in[0], in[1])}; });
  for (int k = 0; k < 5; ++k) {
    std::vector<float> xs(32 * 8);
    std::vector<int32_t> ys(32);
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>((i * 7 + k * 13) % 17) / 8 - 1;
    for (size_t i = 0; i < ys.size(); ++i) ys[i] = static_cast<int32_t>((i + k) % 4);
    const Tensor x(xs, {32, 8}), y(ys, {32});
    const double want = eager.step(x, y).item();
    EXPECT_EQ(step({x, y})[0].item(), want) << "step " << k;
  }
  EXPECT_EQ(step.info().calls, 5u);
  EXPECT_EQ(jitted.l1.weight.data<float>(), eager.l1.weight.data<float>());
  EXPECT_EQ(jitted.l2.bias.data<float>(), eager.l2.bias.data<float>());
}

}  // namespace
}  // namespace hcq
