// A Scalar on either side of an op: its kind decides the promotion (an integer scalar keeps an integer tensor's
// dtype, a float scalar makes it float32, a half tensor stays half), and its value is used as written (2.5 is not
// truncated to compare with an int tensor). Each row names the result dtype written out by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

double floor_div(double a, double b) { return std::floor(a / b); }  // exact for the small integers used here

struct ScalarCase {
  const char* name;
  DType input;
  Domain domain;
  Tensor (*apply)(const Tensor&);
  double (*reference)(double);
  DType result;
  Accuracy accuracy = Accuracy::rounded;
};

const std::vector<ScalarCase>& scalar_cases() {
  constexpr DType B = DType::bool_, I8 = DType::int8, U8 = DType::uint8, I32 = DType::int32, U32 = DType::uint32,
                  I64 = DType::int64, F16 = DType::float16, BF16 = DType::bfloat16, F32 = DType::float32;
  using enum Accuracy;
  static const std::vector<ScalarCase> cases = {
      // tensor op scalar
      {"int8_plus_int", I8, {-50, 50}, [](const Tensor& x) { return x + 3; }, [](double v) { return v + 3; }, I8},
      {"uint8_minus_int_wraps", U8, {0, 10}, [](const Tensor& x) { return x - 3; }, [](double v) { return v - 3; }, U8},
      {"int32_times_int",
       I32,
       {-1000, 1000},
       [](const Tensor& x) { return x * 7; },
       [](double v) { return v * 7; },
       I32},
      {"uint32_plus_int_wraps",
       U32,
       {0, 4294967295.0},
       [](const Tensor& x) { return x + 5; },
       [](double v) { return v + 5; },
       U32},
      {"int64_minus_int",
       I64,
       {-1e12, 1e12},
       [](const Tensor& x) { return x - 1; },
       [](double v) { return v - 1; },
       I64},
      {"int32_plus_float",
       I32,
       {-1000, 1000},
       [](const Tensor& x) { return x + 2.5; },
       [](double v) { return v + 2.5; },
       F32},
      {"uint8_times_float",
       U8,
       {0, 250},
       [](const Tensor& x) { return x * 0.5; },
       [](double v) { return v * 0.5; },
       F32},
      {"int32_div_int",
       I32,
       {-1000, 1000},
       [](const Tensor& x) { return x / 2; },
       [](double v) { return v / 2; },
       F32,
       approximate},
      {"float16_plus_int", F16, {-10, 10}, [](const Tensor& x) { return x + 3; }, [](double v) { return v + 3; }, F16},
      {"float16_times_float",
       F16,
       {-10, 10},
       [](const Tensor& x) { return x * 2.5; },
       [](double v) { return v * 2.5; },
       F16},
      {"bfloat16_minus_float",
       BF16,
       {-10, 10},
       [](const Tensor& x) { return x - 0.25; },
       [](double v) { return v - 0.25; },
       BF16},
      {"float32_plus_bool",
       F32,
       {-10, 10},
       [](const Tensor& x) { return x + true; },
       [](double v) { return v + 1; },
       F32},
      {"int32_plus_bool",
       I32,
       {-1000, 1000},
       [](const Tensor& x) { return x + true; },
       [](double v) { return v + 1; },
       I32},
      {"bool_plus_int", B, {0, 1}, [](const Tensor& x) { return x + 3; }, [](double v) { return v + 3; }, I32},
      {"bool_times_float", B, {0, 1}, [](const Tensor& x) { return x * 2.5; }, [](double v) { return v * 2.5; }, F32},
      // scalar op tensor
      {"int_minus_int8", I8, {-50, 50}, [](const Tensor& x) { return 10 - x; }, [](double v) { return 10 - v; }, I8},
      {"float_div_int32",
       I32,
       {-100, 100, true, 1},
       [](const Tensor& x) { return 1.5 / x; },
       [](double v) { return 1.5 / v; },
       F32,
       approximate},
      {"int_minus_uint8_wraps",
       U8,
       {0, 250},
       [](const Tensor& x) { return 100 - x; },
       [](double v) { return 100 - v; },
       U8},
      {"float_times_uint8", U8, {0, 250}, [](const Tensor& x) { return 2.0 * x; }, [](double v) { return 2 * v; }, F32},
      {"int_plus_float16", F16, {-10, 10}, [](const Tensor& x) { return 3 + x; }, [](double v) { return 3 + v; }, F16},
      // the named ops with a scalar
      {"int32_idiv_int",
       I32,
       {-1000, 1000},
       [](const Tensor& x) { return x.idiv(3); },
       [](double v) { return floor_div(v, 3); },
       I32},
      {"int32_mod_negative_int",
       I32,
       {-1000, 1000},
       [](const Tensor& x) { return x.mod(-3); },
       [](double v) { return v - floor_div(v, -3) * -3; },
       I32},
      {"int32_pow_int",
       I32,
       {-5, 5},
       [](const Tensor& x) { return x.pow(3); },
       [](double v) { return v * v * v; },
       I32},
      {"int32_pow_float",
       I32,
       {0, 50},
       [](const Tensor& x) { return x.pow(0.5); },
       [](double v) { return std::sqrt(v); },
       F32,
       approximate},
      {"float32_pow_int",
       F32,
       {-4, 4},
       [](const Tensor& x) { return x.pow(2); },
       [](double v) { return v * v; },
       F32,
       approximate},
      {"int8_maximum_int",
       I8,
       {-50, 50},
       [](const Tensor& x) { return x.maximum(0); },
       [](double v) { return std::max(v, 0.0); },
       I8},
      {"int32_minimum_float",
       I32,
       {-5, 5},
       [](const Tensor& x) { return x.minimum(2.5); },
       [](double v) { return std::min(v, 2.5); },
       F32},
      {"float16_maximum_float",
       F16,
       {-2, 2},
       [](const Tensor& x) { return x.maximum(0.5); },
       [](double v) { return std::max(v, 0.5); },
       F16},
      // comparisons: bool, and the scalar's value as written
      {"int32_lt_float",
       I32,
       {-5, 5},
       [](const Tensor& x) { return x < 2.5; },
       [](double v) { return double(v < 2.5); },
       B},
      {"uint8_ge_int",
       U8,
       {0, 250},
       [](const Tensor& x) { return x >= 100; },
       [](double v) { return double(v >= 100); },
       B},
      {"float16_eq_float",
       F16,
       {-3, 3, true},
       [](const Tensor& x) { return x.eq(1.0); },
       [](double v) { return double(v == 1); },
       B},
      {"int32_ne_int",
       I32,
       {-3, 3},
       [](const Tensor& x) { return x.ne(2); },
       [](double v) { return double(v != 2); },
       B},
      {"int8_gt_negative_float",
       I8,
       {-3, 3},
       [](const Tensor& x) { return x > -0.5; },
       [](double v) { return double(v > -0.5); },
       B},
      {"int32_le_float",
       I32,
       {-3, 3},
       [](const Tensor& x) { return x <= 0.5; },
       [](double v) { return double(v <= 0.5); },
       B},
  };
  return cases;
}

// Every row, in one test: rows with one result dtype are computed by one kernel (expect_all).
TEST(TensorOpsScalar, EveryRowPromotesByKindAndMatchesReference) {
  std::vector<Check> checks;
  uint64_t seed = 7;
  for (const ScalarCase& c : scalar_cases()) {
    const ref::Array x = random_array({7, 13}, c.input, c.domain, ++seed);
    ref::Array want = ref::map(x, c.reference);
    if (!is_float_type(c.result)) want = ref::map(want, [&](double v) { return stored(c.result, v); });
    checks.push_back({c.name, c.apply(to_tensor(x, c.input)), c.result, want, tolerance(c.result, c.accuracy)});
  }
  expect_all(checks);
}

TEST(TensorOpsScalarWhere, ScalarBranchesPromoteByKind) {
  const ref::Array cond = random_array({5, 7}, DType::bool_, 71);
  const Tensor c = to_tensor(cond, DType::bool_);
  auto pick = [&](double a, const ref::Array& b) {
    return ref::zip3(cond, ref::Array({}, {a}), b, [](double k, double p, double q) { return k != 0 ? p : q; });
  };
  const ref::Array i8 = random_array({7}, DType::int8, 73), h = random_array({7}, DType::float16, 79);
  const ref::Array i32 = random_array({5, 1}, DType::int32, {-100, 100}, 83);

  EXPECT_TRUE(matches(
      c.where(to_tensor(i8, DType::int8), 5), DType::int8,
      ref::zip3(cond, i8, ref::Array({}, {5}), [](double k, double p, double q) { return k != 0 ? p : q; }), kExact));
  EXPECT_TRUE(matches(c.where(2.5, to_tensor(i32, DType::int32)), DType::float32, pick(2.5, i32), kExact));
  EXPECT_TRUE(matches(c.where(0.5, to_tensor(h, DType::float16)), DType::float16, pick(0.5, h), kExact));
  EXPECT_TRUE(
      matches(c.where(1, 0), DType::int32, ref::map(cond, [](double k) { return k != 0 ? 1.0 : 0.0; }), kExact));
  EXPECT_TRUE(matches(c.where(1.5, -0.5), DType::float32, ref::map(cond, [](double k) { return k != 0 ? 1.5 : -0.5; }),
                      kExact));
}

TEST(TensorOpsScalarCreation, ScalarTensorsTakeTheirKindsDtype) {
  EXPECT_EQ(Tensor::scalar(true).dtype(), DType::bool_);
  EXPECT_EQ(Tensor::scalar(3).dtype(), DType::int32);
  EXPECT_EQ(Tensor::scalar(3.5).dtype(), DType::float32);
  EXPECT_EQ(Tensor::scalar(3.5f).dtype(), DType::float32);
  // A 0-d tensor is a tensor: it promotes as one, unlike a Scalar.
  const Tensor i8(std::vector<int8_t>{1, 2}, {2});
  EXPECT_EQ((i8 + Tensor::scalar(3)).dtype(), DType::int32);
  EXPECT_EQ((i8 + 3).dtype(), DType::int8);
  EXPECT_EQ((i8 + Tensor::scalar(3)).data<int32_t>(), (std::vector<int32_t>{4, 5}));
}

}  // namespace
}  // namespace hcq::optest
