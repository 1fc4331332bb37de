// The code generator's optimisations change the generated loops, never the values: each case runs optimised and
// under HCQ_NOOPT=1 and compares both with a double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "hcq/tensor.hpp"

namespace hcq {
namespace {

std::vector<float> values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = scale * (static_cast<float>((k * 7919) % 23) - 11.0f) / 11.0f;
  return v;
}

class FrameworkCodegen : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) ::setenv("HCQ_NOOPT", "1", 1);
  }
  void TearDown() override { ::unsetenv("HCQ_NOOPT"); }
};

// N a multiple of 16: the output's last axis is upcast (a row of a is reused across 16 lanes of b).
TEST_P(FrameworkCodegen, MatmulWithUpcastOutputAxis) {
  const int64_t M = 33, K = 29, N = 48;
  const std::vector<float> av = values(M * K, 1.0f), bv = values(K * N, 0.5f), cv = values(N, 2.0f);
  Tensor a(av, {M, K}), b(bv, {K, N}), c(cv, {N});
  const std::vector<float> got = (a.matmul(b) + c).data<float>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = cv[static_cast<size_t>(j)];
      for (int64_t k = 0; k < K; ++k)
        want += double(av[static_cast<size_t>(i * K + k)]) * bv[static_cast<size_t>(k * N + j)];
      ASSERT_NEAR(got[static_cast<size_t>(i * N + j)], want, 1e-4) << i << ", " << j;
    }
}

// A reduce whose lanes are not reused (a row sum) and a large elementwise kernel split over workgroups.
TEST_P(FrameworkCodegen, RowSumAndLargeElementwise) {
  const int64_t R = 64, C = 1031;
  const std::vector<float> xv = values(R * C, 1.0f);
  Tensor x(xv, {R, C});
  const std::vector<float> sums = x.sum(1).data<float>();
  for (int64_t i = 0; i < R; ++i) {
    double want = 0;
    for (int64_t j = 0; j < C; ++j) want += xv[static_cast<size_t>(i * C + j)];
    ASSERT_NEAR(sums[static_cast<size_t>(i)], want, 1e-3) << i;
  }
  const std::vector<float> e = (x * 3 + 1).data<float>();
  for (size_t k = 0; k < e.size(); ++k) ASSERT_EQ(e[k], xv[k] * 3 + 1) << k;
}

// Integer matmul with an upcast axis: exact.
TEST_P(FrameworkCodegen, IntegerMatmulIsExact) {
  const int64_t M = 5, K = 7, N = 32;
  std::vector<int32_t> av(M * K), bv(K * N);
  for (size_t k = 0; k < av.size(); ++k) av[k] = static_cast<int32_t>(k % 9) - 4;
  for (size_t k = 0; k < bv.size(); ++k) bv[k] = static_cast<int32_t>(k % 5) - 2;
  const std::vector<int32_t> got = Tensor(av, {M, K}).matmul(Tensor(bv, {K, N})).data<int32_t>();
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t want = 0;
      for (int64_t k = 0; k < K; ++k)
        want += int64_t{av[static_cast<size_t>(i * K + k)]} * bv[static_cast<size_t>(k * N + j)];
      ASSERT_EQ(got[static_cast<size_t>(i * N + j)], want) << i << ", " << j;
    }
}

INSTANTIATE_TEST_SUITE_P(OptAndNoOpt, FrameworkCodegen, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "NoOpt" : "Opt"; });

}  // namespace
}  // namespace hcq
