// The data-parallel gradient, from the pieces this part delivers: the batch sharded, the parameter replicated (one
// replica per device, each with requires_grad), a loss and backward() per device, then the replicas' gradients
// allreduced: every device ends with the full batch's gradient, checked against a double loop.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework_multi/devices.hpp"
#include "hcq/multi.hpp"
#include "hcq/tensor.hpp"

namespace hcq::multitest {
namespace {

class FrameworkMultiDataParallel : public ::testing::TestWithParam<int> {};

TEST_P(FrameworkMultiDataParallel, AllreducedReplicaGradientsEqualTheFullBatchGradient) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  const int B = 7, K = 3, N = 2;  // 7 rows: uneven shards
  std::vector<float> x(B * K), w(K * N);
  for (int i = 0; i < B * K; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 5) % 7 - 3) / 4;
  for (int i = 0; i < K * N; ++i) w[static_cast<size_t>(i)] = static_cast<float>((i * 3) % 5 - 2) / 2;
  // L = sum((X W)^2): dL/dW = 2 X^T (X W).
  std::vector<double> y(B * N, 0), want(K * N, 0);
  for (int i = 0; i < B; ++i)
    for (int j = 0; j < N; ++j)
      for (int k = 0; k < K; ++k) y[static_cast<size_t>(i * N + j)] += double(x[i * K + k]) * w[k * N + j];
  for (int k = 0; k < K; ++k)
    for (int j = 0; j < N; ++j)
      for (int i = 0; i < B; ++i) want[static_cast<size_t>(k * N + j)] += 2 * double(x[i * K + k]) * y[i * N + j];

  MultiTensor xs = Tensor(x, {B, K}).shard(devs, 0);
  std::vector<Tensor> replicas;
  for (const std::string& d : devs) replicas.push_back(Tensor(w, {K, N}, d).requires_grad_());
  std::vector<Tensor> grads;
  for (size_t k = 0; k < devs.size(); ++k) {
    const Tensor yk = xs.parts()[k].matmul(replicas[k]);
    (yk * yk).sum().backward();
    grads.push_back(replicas[k].grad());
  }
  const std::vector<Tensor> total = allreduce(grads);
  for (size_t k = 0; k < total.size(); ++k) {
    EXPECT_EQ(total[k].device(), replicas[k].device());
    const std::vector<float> got = total[k].data<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << devs[k] << " element " << i;
  }
}

// Autograd through a MultiTensor: one parameter on the first device, replicated (a copy to each device), the batch
// sharded, the loss a reduction over the split axis (partial sums allreduced). backward() from one device's copy
// of the loss flows back through the allreduce's and the replication's copies: the parameter gets the whole
// batch's gradient, with no allreduce written by hand.
TEST_P(FrameworkMultiDataParallel, GradientsFlowThroughShardedOps) {
  const std::vector<std::string> devs = devices(static_cast<size_t>(GetParam()));
  const int B = 7, K = 3;
  std::vector<float> x(B * K), w(K);
  for (int i = 0; i < B * K; ++i) x[static_cast<size_t>(i)] = static_cast<float>((i * 5) % 7 - 3) / 4;
  for (int i = 0; i < K; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i - 1) / 2;
  // L = sum_i (x_i . w)^2: dL/dw = 2 sum_i (x_i . w) x_i.
  std::vector<double> want(K, 0);
  for (int i = 0; i < B; ++i) {
    double y = 0;
    for (int k = 0; k < K; ++k) y += double(x[i * K + k]) * w[k];
    for (int k = 0; k < K; ++k) want[static_cast<size_t>(k)] += 2 * y * x[i * K + k];
  }
  Tensor param = Tensor(w, {K, 1}, devs[0]).requires_grad_();
  const MultiTensor xs = Tensor(x, {B, K}).shard(devs, 0);
  const MultiTensor y = xs.matmul(MultiTensor::replicate(param, devs));  // (B, 1), split by rows
  const MultiTensor loss = (y * y).sum();                                // replicated
  ASSERT_TRUE(loss.is_replicated());
  loss.parts()[0].backward();
  ASSERT_TRUE(param.grad().defined());
  const std::vector<float> got = param.grad().data<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], want[k], 1e-4 * (1 + std::fabs(want[k]))) << k;
}

INSTANTIATE_TEST_SUITE_P(Framework, FrameworkMultiDataParallel, ::testing::Values(2, 3),
                         [](const auto& info) { return std::to_string(info.param) + "Devices"; });

}  // namespace
}  // namespace hcq::multitest
