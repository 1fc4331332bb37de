// The code generator's optimisations change the generated loops, never the values: each case runs optimised and
// under HCQ_NOOPT=1 and compares both with a double-precision reference.
#include <gtest/gtest.h>

#include <algorithm>
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

// The CPU device's e^x and 2^x are inline polynomials (render_c.cpp, kCpuExp), not libm: within 2 ulp of the
// correctly rounded value over the whole float range (denormal results within 2 of the smallest denormal), inf past
// the largest float, 0 below the smallest denormal, NaN for NaN.
TEST_P(FrameworkCodegen, CpuExpWithinTwoUlp) {
  std::vector<float> x;
  for (int k = -2200; k <= 2200; ++k) x.push_back(static_cast<float>(k) * 0.0501f);  // -110.2 .. 110.2
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.72f, 88.73f, -87.3f, -103.9f, -104.0f, 127.9f, 128.0f, -149.0f,
                  -150.0f, -151.0f, 0.5f, -0.5f, 0.3465736f, -0.3465736f})
    x.push_back(v);
  x.push_back(HUGE_VALF);
  x.push_back(-HUGE_VALF);
  x.push_back(std::nanf(""));
  const std::vector<float> e = Tensor(x, {static_cast<int64_t>(x.size())}, "CPU").exp().data<float>();
  const std::vector<float> e2 = Tensor(x, {static_cast<int64_t>(x.size())}, "CPU").exp2().data<float>();
  auto check = [](float got, double want, float at, const char* what) {
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << what << "(" << at << ") = " << got;
      return;
    }
    const float rounded = static_cast<float>(want);
    if (std::isinf(rounded) || rounded == 0.0f) {
      EXPECT_EQ(got, rounded) << what << "(" << at << ")";
      return;
    }
    // An ulp at the correctly rounded value (the smallest denormal below the normal range).
    const float ulp = std::max(std::nextafter(std::abs(rounded), HUGE_VALF) - std::abs(rounded), 0x1p-149f);
    EXPECT_LE(std::abs(static_cast<double>(got) - want), 2.0 * ulp)
        << what << "(" << at << ") = " << got << ", want " << want;
  };
  for (size_t k = 0; k < x.size(); ++k) {
    check(e[k], std::exp(static_cast<double>(x[k])), x[k], "exp");
    check(e2[k], std::exp2(static_cast<double>(x[k])), x[k], "exp2");
  }
}

INSTANTIATE_TEST_SUITE_P(OptAndNoOpt, FrameworkCodegen, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "NoOpt" : "Opt"; });

}  // namespace
}  // namespace hcq
