// matmul against the reference's plain triple loop: odd sizes, a long K, batched, broadcast batch dimensions, 1-d
// operands as numpy treats them, a transposed (non-contiguous) operand; float32, float16 and int32 (K of 0: in
// zero_size_test.cpp).
// Inputs are small integers so every dtype's result is exact (float16 holds the integers these sums reach); one
// fractional float32 case checks the rounding tolerance.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType I32 = DType::int32, F16 = DType::float16, F32 = DType::float32;

struct MatmulCase {
  const char* name;
  ref::Dims a, b;
  DType dtype;
};

class TensorOpsMatmul : public ::testing::TestWithParam<MatmulCase> {};

TEST_P(TensorOpsMatmul, MatchesReference) {
  const MatmulCase& c = GetParam();
  const Domain small{-4, 4, true};
  const ref::Array a = random_array(c.a, c.dtype, small, 233), b = random_array(c.b, c.dtype, small, 239);
  const ref::Array want = ref::matmul(a, b);
  const Tensor y = to_tensor(a, c.dtype).matmul(to_tensor(b, c.dtype));
  EXPECT_EQ(y.shape(), want.shape);
  EXPECT_TRUE(matches(y, c.dtype, want, kExact));
}

std::vector<MatmulCase> matmul_cases() {
  std::vector<MatmulCase> cases = {
      {"one_by_one", {1, 1}, {1, 1}, F32},           {"long_k", {3, 67}, {67, 2}, F32},
      {"batched_both", {3, 7, 11}, {3, 11, 5}, F32}, {"vector_left", {11}, {11, 5}, F32},
      {"vector_right", {7, 11}, {11}, F32},          {"vector_vector", {11}, {11}, F32},
      {"vector_batched", {11}, {3, 11, 5}, F32},
  };
  for (DType t : {F32, F16, I32}) {
    cases.push_back({"odd", {7, 13}, {13, 5}, t});
    cases.push_back({"batched", {3, 7, 11}, {11, 5}, t});
    cases.push_back({"broadcast_batch", {2, 1, 7, 11}, {3, 11, 5}, t});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsMatmul, ::testing::ValuesIn(matmul_cases()),
                         [](const ::testing::TestParamInfo<MatmulCase>& info) {
                           return std::string(info.param.name) + "_" + name_of(info.param.dtype);
                         });

TEST(TensorOpsMatmulViews, TransposedAndSlicedOperands) {
  const ref::Array a = random_array({7, 13}, F32, {-4, 4, true}, 241),
                   w = random_array({5, 13}, F32, {-4, 4, true}, 251);
  const Tensor ta = to_tensor(a, F32), tw = to_tensor(w, F32);
  EXPECT_TRUE(matches(ta.matmul(tw.transpose()), F32, ref::matmul(a, ref::permute(w, {1, 0})), kExact));
  EXPECT_TRUE(matches(ta.transpose().dot(ta), F32, ref::matmul(ref::permute(a, {1, 0}), a), kExact));
  EXPECT_TRUE(matches(ta.slice(1, 0, 13, 2).matmul(tw.slice(1, 0, 13, 2).transpose()), F32,
                      ref::matmul(ref::slice(a, 1, 0, 13, 2), ref::permute(ref::slice(w, 1, 0, 13, 2), {1, 0})),
                      kExact));
}

TEST(TensorOpsMatmulValues, FractionalFloat32AndMixedDtypes) {
  const ref::Array a = random_array({7, 13}, F32, {-1, 1}, 257), b = random_array({13, 5}, F32, {-1, 1}, 263);
  EXPECT_TRUE(matches(to_tensor(a, F32).matmul(to_tensor(b, F32)), F32, ref::matmul(a, b),
                      tolerance(F32, Accuracy::approximate)));
  const ref::Array n = random_array({7, 13}, I32, {-4, 4}, 269);
  EXPECT_TRUE(matches(to_tensor(n, I32).matmul(to_tensor(b, F32)), F32, ref::matmul(n, b),
                      tolerance(F32, Accuracy::approximate)));
  // By hand: [[1, 2], [3, 4]] @ [[5, 6], [7, 8]].
  const Tensor x(std::vector<int32_t>{1, 2, 3, 4}, {2, 2}), y(std::vector<int32_t>{5, 6, 7, 8}, {2, 2});
  EXPECT_EQ(x.matmul(y).data<int32_t>(), (std::vector<int32_t>{19, 22, 43, 50}));
}

TEST(TensorOpsMatmulErrors, MismatchedShapes) {
  const Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({4, 5});
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)a.matmul(b); }, {"(2, 3)", "(4, 5)"}));
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)Tensor::zeros({2, 3, 4}).matmul(Tensor::zeros({5, 4, 2})); },
                                            {"(2, 3, 4)", "(5, 4, 2)"}));
  EXPECT_TRUE(
      throws_containing<ShapeError>([&] { (void)Tensor::zeros({3}).matmul(Tensor::zeros({4})); }, {"(3,)", "(4,)"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)Tensor::scalar(2.0).matmul(a); }, {"()"}));
}

}  // namespace
}  // namespace hcq::optest
