// Every unary elementwise op in every dtype it takes, against the double-precision reference: result dtype (integers
// become float32 where the op needs a float), values within the dtype's tolerance, integer results exact (with the
// dtype's wrap-around for neg and abs of unsigned values).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

enum class Result { same, float_for_ints, boolean };

struct UnaryOp {
  const char* name;
  Tensor (*apply)(const Tensor&);
  double (*reference)(double);
  Domain domain;  // integer dtypes draw the integers in it
  Accuracy accuracy;
  Result result;
  std::vector<DType> dtypes;
};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<DType> floats_and(std::vector<DType> more) {
  std::vector<DType> out = kFloatDtypes;
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

const std::vector<UnaryOp>& unary_ops() {
  using enum Accuracy;
  static const std::vector<UnaryOp> ops = {
      {"neg",
       [](const Tensor& x) { return -x; },
       [](double x) { return -x; },
       {-10, 10},
       rounded,
       Result::same,
       floats_and(kIntDtypes)},
      {"abs",
       [](const Tensor& x) { return x.abs(); },
       [](double x) { return std::fabs(x); },
       {-10, 10},
       rounded,
       Result::same,
       floats_and(kIntDtypes)},
      {"sign",
       [](const Tensor& x) { return x.sign(); },
       [](double x) { return double((x > 0) - (x < 0)); },
       {-3, 3},
       rounded,
       Result::same,
       floats_and(kIntDtypes)},
      {"relu",
       [](const Tensor& x) { return x.relu(); },
       [](double x) { return x > 0 ? x : 0.0; },
       {-10, 10},
       rounded,
       Result::same,
       floats_and(kIntDtypes)},
      {"exp",
       [](const Tensor& x) { return x.exp(); },
       [](double x) { return std::exp(x); },
       {-5, 5},
       approximate,
       Result::float_for_ints,
       floats_and({DType::int32})},
      {"exp2",
       [](const Tensor& x) { return x.exp2(); },
       [](double x) { return std::exp2(x); },
       {-6, 6},
       approximate,
       Result::float_for_ints,
       kFloatDtypes},
      {"log",
       [](const Tensor& x) { return x.log(); },
       [](double x) { return std::log(x); },
       {0.05, 50},
       approximate,
       Result::float_for_ints,
       floats_and({DType::int32})},
      {"log2",
       [](const Tensor& x) { return x.log2(); },
       [](double x) { return std::log2(x); },
       {0.05, 50},
       approximate,
       Result::float_for_ints,
       kFloatDtypes},
      {"sqrt",
       [](const Tensor& x) { return x.sqrt(); },
       [](double x) { return std::sqrt(x); },
       {0, 50},
       approximate,
       Result::float_for_ints,
       floats_and({DType::uint8, DType::int32})},
      {"rsqrt",
       [](const Tensor& x) { return x.rsqrt(); },
       [](double x) { return 1 / std::sqrt(x); },
       {0.05, 50},
       approximate,
       Result::float_for_ints,
       kFloatDtypes},
      {"sin",
       [](const Tensor& x) { return x.sin(); },
       [](double x) { return std::sin(x); },
       {-6, 6},
       approximate,
       Result::float_for_ints,
       floats_and({DType::int32})},
      {"cos",
       [](const Tensor& x) { return x.cos(); },
       [](double x) { return std::cos(x); },
       {-6, 6},
       approximate,
       Result::float_for_ints,
       kFloatDtypes},
      {"reciprocal",
       [](const Tensor& x) { return x.reciprocal(); },
       [](double x) { return 1 / x; },
       {-10, 10, false, 0.1},
       approximate,
       Result::float_for_ints,
       floats_and({DType::int32})},
      {"sigmoid",
       [](const Tensor& x) { return x.sigmoid(); },
       sigmoid,
       {-6, 6},
       approximate,
       Result::float_for_ints,
       floats_and({DType::int32})},
      {"tanh",
       [](const Tensor& x) { return x.tanh(); },
       [](double x) { return std::tanh(x); },
       {-4, 4},
       approximate,
       Result::float_for_ints,
       kFloatDtypes},
      // The tanh approximation of GELU.
      {"gelu",
       [](const Tensor& x) { return x.gelu(); },
       [](double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))); },
       {-5, 5},
       approximate,
       Result::float_for_ints,
       kFloatDtypes},
      {"silu",
       [](const Tensor& x) { return x.silu(); },
       [](double x) { return x * sigmoid(x); },
       {-6, 6},
       approximate,
       Result::float_for_ints,
       kFloatDtypes},
      {"logical_not",
       [](const Tensor& x) { return x.logical_not(); },
       [](double x) { return double(x == 0); },
       {0, 1},
       rounded,
       Result::boolean,
       {DType::bool_}},
  };
  return ops;
}

DType result_dtype(Result r, DType input) {
  switch (r) {
    case Result::same: return input;
    case Result::float_for_ints: return is_float_type(input) ? input : DType::float32;
    case Result::boolean: return DType::bool_;
  }
  return input;
}

// Every op that takes the dtype, each on its own inputs drawn from its domain.
class TensorOpsUnary : public ::testing::TestWithParam<DType> {};

TEST_P(TensorOpsUnary, EveryOpMatchesReference) {
  const DType t = GetParam();
  std::vector<Check> checks;
  uint64_t seed = 1 + 100 * static_cast<uint64_t>(t);
  for (const UnaryOp& op : unary_ops()) {
    if (std::find(op.dtypes.begin(), op.dtypes.end(), t) == op.dtypes.end()) continue;
    const ref::Array x = random_array({7, 13}, t, op.domain, ++seed);
    const DType out = result_dtype(op.result, t);
    ref::Array want = ref::map(x, op.reference);
    if (!is_float_type(out)) want = ref::map(want, [out](double v) { return stored(out, v); });
    checks.push_back({op.name, op.apply(to_tensor(x, t)), out, want, tolerance(out, op.accuracy)});
  }
  ASSERT_FALSE(checks.empty());
  expect_all(checks);
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsUnary, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

// clip keeps the tensor's dtype when the bounds are of its kind.
class TensorOpsClip : public ::testing::TestWithParam<DType> {};

TEST_P(TensorOpsClip, MatchesReference) {
  const DType t = GetParam();
  const bool is_f = is_float_type(t);
  const double lo = is_f ? -2.5 : (is_unsigned_type(t) ? 10 : -20), hi = is_f ? 3.5 : 30;
  const ref::Array x = random_array({7, 13}, t, is_f ? Domain{-5, 5} : Domain{is_unsigned_type(t) ? 0. : -50, 50},
                                    static_cast<uint64_t>(t) + 100);
  const Tensor y =
      is_f ? to_tensor(x, t).clip(lo, hi) : to_tensor(x, t).clip(static_cast<int>(lo), static_cast<int>(hi));
  const ref::Array want = ref::map(x, [&](double v) { return std::min(std::max(v, lo), hi); });
  EXPECT_TRUE(matches(y, t, want, tolerance(t, Accuracy::rounded)));
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsClip, ::testing::ValuesIn(kNumericDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

// Hand-computed values at the points where approximations usually go wrong: 0, the ends of ranges, exact powers.
TEST(TensorOpsUnaryValues, SpecialPoints) {
  const Tensor x(std::vector<float>{0.0f, 1.0f, 4.0f, 0.25f}, {4});
  EXPECT_EQ(x.sqrt().data<float>(), (std::vector<float>{0.0f, 1.0f, 2.0f, 0.5f}));
  const std::vector<float> exp2 = x.exp2().data<float>(), log2 = x.log2().data<float>();
  EXPECT_FLOAT_EQ(exp2[0], 1.0f);
  EXPECT_FLOAT_EQ(exp2[2], 16.0f);
  EXPECT_EQ(log2[0], -INFINITY);
  EXPECT_FLOAT_EQ(log2[2], 2.0f);
  EXPECT_EQ(x.reciprocal().data<float>()[0], INFINITY);
  EXPECT_EQ(x.sign().data<float>(), (std::vector<float>{0.0f, 1.0f, 1.0f, 1.0f}));
  EXPECT_EQ((-x).relu().data<float>(), (std::vector<float>{0.0f, 0.0f, 0.0f, 0.0f}));
  const Tensor n(std::vector<float>{-1.0f}, {1});
  EXPECT_TRUE(std::isnan(n.sqrt().item()));
  EXPECT_TRUE(std::isnan(n.log().item()));
}

}  // namespace
}  // namespace hcq::optest
