// The layers' forward passes against double loops (layer_reference.hpp; BatchNorm and LayerNorm written out
// here): conv2d over strides, padding, dilation and groups, the pools, batch and layer normalisation with their
// statistics, embeddings and dropout; and each layer's misuse messages.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/message_of.hpp"
#include "framework_grad/layer_reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/error.hpp"
#include "hcq/nn.hpp"

namespace hcq::optest {
namespace {

using laytest::Window;

using test::message_of;

const Tolerance kSums{2e-5, 2e-5};  // float32 sums of a few dozen products

TEST(NnLayers, Conv2dOverStridesPaddingDilationAndGroups) {
  struct Case {
    ref::Dims x, w;
    Window win;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {{2, 3, 7, 6}, {4, 3, 3, 3}, {3, 3}, 1},
      {{1, 4, 9, 8}, {6, 2, 3, 2}, {3, 2, 2, 1, 1, 0, 1, 2}, 2},  // stride (2, 1), padding (1, 0), dilation (1, 2)
      {{2, 2, 5, 5}, {2, 1, 1, 1}, {1, 1, 3, 3}, 2},              // stride beyond the kernel: the padded path
      {{1, 1, 28, 28}, {2, 1, 5, 5}, {5, 5}, 1},                  // the CNN's first layer's shape
  };
  std::vector<Check> checks;
  uint64_t seed = 10;
  for (const Case& c : cases) {
    const ref::Array x = random_array(c.x, DType::float32, seed++), w = random_array(c.w, DType::float32, seed++);
    const ref::Array b = random_array({c.w[0]}, DType::float32, seed++);
    const Tensor got =
        nn::conv2d(to_tensor(x, DType::float32), to_tensor(w, DType::float32), to_tensor(b, DType::float32),
                   {c.win.sh, c.win.sw}, {c.win.ph, c.win.pw}, {c.win.dh, c.win.dw}, c.groups);
    checks.push_back(
        {"conv2d " + ref::format(c.x), got, DType::float32, laytest::conv2d(x, w, &b, c.win, c.groups), kSums});
  }
  expect_all(checks);
}

TEST(NnLayers, MaxAndAveragePools) {
  const ref::Array x = random_array({2, 3, 7, 8}, DType::float32, 3);
  const Tensor t = to_tensor(x, DType::float32);
  expect_all({
      {"max 2x2", nn::max_pool2d(t, {2, 2}), DType::float32, laytest::pool2d(x, {2, 2, 2, 2}, true), kExact},
      {"max 3x3 stride 2 pad 1", nn::max_pool2d(t, {3, 3}, {2, 2}, {1, 1}), DType::float32,
       laytest::pool2d(x, {3, 3, 2, 2, 1, 1}, true), kExact},
      {"avg 2x3 stride 1", nn::avg_pool2d(t, {2, 3}, {1, 1}), DType::float32, laytest::pool2d(x, {2, 3, 1, 1}, false),
       kSums},
      {"avg 3x3 pad 1", nn::avg_pool2d(t, {3, 3}, {3, 3}, {1, 1}), DType::float32,
       laytest::pool2d(x, {3, 3, 3, 3, 1, 1}, false), kSums},
  });
}

TEST(NnLayers, BatchNormTrainingAndEvaluation) {
  const ref::Array x = random_array({4, 3, 2, 5}, DType::float32, 21);
  nn::BatchNorm2d bn(3);
  bn.weight.assign(Tensor(std::vector<float>{1, 2, -1}, {3})).realize();
  bn.bias.assign(Tensor(std::vector<float>{0, 0.5f, 1}, {3})).realize();
  const Tensor y = bn(to_tensor(x, DType::float32));
  Tensor::realize({y, bn.running_mean, bn.running_var});
  // Per channel: mean and biased variance over (N, H, W) normalise; the running statistics move 10 % toward the
  // mean and the unbiased variance.
  ref::Array want = ref::Array::filled(x.shape, 0.0);
  std::vector<double> running_mean(3), running_var(3);
  const double gamma[] = {1, 2, -1}, beta[] = {0, 0.5, 1};
  for (int64_t c = 0; c < 3; ++c) {
    double sum = 0, sq = 0, n = 0;
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 5; ++j) sum += x.at({b, c, i, j}), n += 1;
    const double mean = sum / n;
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 5; ++j) sq += (x.at({b, c, i, j}) - mean) * (x.at({b, c, i, j}) - mean);
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 5; ++j)
          want.at({b, c, i, j}) = (x.at({b, c, i, j}) - mean) / std::sqrt(sq / n + 1e-5) * gamma[c] + beta[c];
    running_mean[static_cast<size_t>(c)] = 0.1 * mean;
    running_var[static_cast<size_t>(c)] = 0.9 + 0.1 * sq / (n - 1);
  }
  EXPECT_TRUE(matches(to_array(y), want, Tolerance{1e-5, 1e-5}));
  EXPECT_TRUE(matches(to_array(bn.running_mean), ref::Array({3}, running_mean), Tolerance{1e-6, 1e-7}));
  EXPECT_TRUE(matches(to_array(bn.running_var), ref::Array({3}, running_var), Tolerance{1e-6, 1e-7}));

  bn.training = false;  // now the running statistics normalise
  const ref::Array x2 = random_array({1, 3, 1, 2}, DType::float32, 22);
  ref::Array want2 = x2;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t j = 0; j < 2; ++j)
      want2.at({0, c, 0, j}) = (x2.at({0, c, 0, j}) - running_mean[static_cast<size_t>(c)]) /
                                   std::sqrt(running_var[static_cast<size_t>(c)] + 1e-5) * gamma[c] +
                               beta[c];
  EXPECT_TRUE(matches(to_array(bn(to_tensor(x2, DType::float32))), want2, Tolerance{1e-5, 1e-5}));
  EXPECT_EQ(message_of<ShapeError>([&] { bn(Tensor::zeros({2, 4, 1, 1})); }),
            "BatchNorm2d: the input must be (N, 3, H, W), it has 4 dimensions and 4 channels");
}

TEST(NnLayers, LayerNormEmbeddingAndDropout) {
  const ref::Array x = random_array({3, 4}, DType::float32, 31);
  nn::LayerNorm ln({4});
  ref::Array want = x;
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < 4; ++c) mean += x.at({r, c}) / 4;
    for (int64_t c = 0; c < 4; ++c) var += (x.at({r, c}) - mean) * (x.at({r, c}) - mean) / 4;
    for (int64_t c = 0; c < 4; ++c) want.at({r, c}) = (x.at({r, c}) - mean) / std::sqrt(var + 1e-5);
  }
  EXPECT_TRUE(matches(to_array(ln(to_tensor(x, DType::float32))), want, Tolerance{1e-5, 1e-5}));

  nn::Embedding emb(5, 3);
  const std::vector<float> table = emb.weight.data<float>();
  const std::vector<float> rows = emb(Tensor(std::vector<int32_t>{4, 0, 4}, {3})).data<float>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(rows[static_cast<size_t>(r * 3 + c)], table[static_cast<size_t>((r == 1 ? 0 : 4) * 3 + c)]);
  EXPECT_EQ(message_of<DTypeError>([&] { emb(Tensor::zeros({2})); }),
            "Embedding: the indices must be integers, they are float32");

  const Tensor ones = Tensor::ones({10000});
  const std::vector<float> kept = nn::dropout(ones, 0.25).data<float>();
  size_t zeros = 0;
  for (float v : kept) {
    if (v == 0) ++zeros;
    else EXPECT_FLOAT_EQ(v, 1 / 0.75f);
  }
  EXPECT_NEAR(static_cast<double>(zeros) / 10000, 0.25, 0.02);  // 4 standard deviations
  EXPECT_EQ(nn::dropout(ones, 0.25, false).node(), ones.node());
  EXPECT_EQ(message_of<InvalidArgument>([&] { nn::dropout(ones, 1.0); }), "dropout: p must be in [0, 1), got 1");
}

TEST(NnLayers, Misuse) {
  const Tensor x = Tensor::zeros({1, 4, 5, 5});
  EXPECT_EQ(message_of<ShapeError>([&] { nn::conv2d(x, Tensor::zeros({2, 3, 3, 3})); }),
            "conv2d: 4 input channels, a weight of 3 per group and 1 groups do not match (2 output channels must "
            "divide into the groups too)");
  EXPECT_EQ(message_of<ShapeError>([&] { nn::conv2d(x, Tensor::zeros({2, 4, 7, 1})); }),
            "conv2d: a (7, 1) window with dilation (1, 1) does not fit the (padded) input's 5 x 5");
  EXPECT_EQ(message_of<InvalidArgument>([] { nn::Conv2d(3, 4, {3, 3}, {1, 1}, {0, 0}, {1, 1}, 2); }),
            "Conv2d: 3 -> 4 channels in 2 groups: the channel counts must be positive multiples of the groups");
  EXPECT_EQ(message_of<InvalidArgument>([&] { nn::max_pool2d(x, {0, 2}); }),
            "max_pool2d: kernel (0, 2), stride (0, 2) and dilation (1, 1) must be positive");
}

}  // namespace
}  // namespace hcq::optest
