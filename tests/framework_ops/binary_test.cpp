// Every binary and ternary elementwise op in every dtype it takes, with numpy broadcasting ((3, 1, 13) with (7, 1)),
// against the double-precision reference: arithmetic, floor division and modulo (Python's signs, x // 0 == 0),
// pow, maximum/minimum, comparisons (bool), where, the logical ops, and hand-computed cases at the edges.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

const ref::Dims kLhsShape = {3, 1, 13}, kRhsShape = {7, 1}, kOutShape = {3, 7, 13};

// Python's floor division and modulo on integers, with the header's x // 0 == 0 and x % 0 == 0.
double floor_div(double a, double b) {
  if (b == 0) return 0;
  const int64_t x = static_cast<int64_t>(a), y = static_cast<int64_t>(b);
  int64_t q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) --q;
  return static_cast<double>(q);
}

double floor_mod(double a, double b) {
  if (b == 0) return 0;
  return a - floor_div(a, b) * b;
}

// Operand ranges that keep every result inside the dtype (signed overflow is not what these tests are about;
// unsigned results wrap, and the reference wraps them too).
Domain additive(DType t) {
  switch (t) {
    case DType::int8: return {-60, 60};
    case DType::int32: return {-1e9, 1e9};
    default: return default_domain(t);
  }
}

Domain multiplicative(DType t) {
  switch (t) {
    case DType::int8: return {-11, 11};
    case DType::uint8: return {0, 15};
    case DType::int32: return {-40000, 40000};
    case DType::uint32: return {0, 60000};
    case DType::int64: return {-9e7, 9e7};  // products stay below 2^53, exact in the reference
    default: return {-10, 10};
  }
}

Domain divisor(DType t) {
  if (is_float_type(t)) return {-10, 10, false, 0.5};
  return {is_unsigned_type(t) ? 1. : -100, 100, true, 1};
}

// Divisors of floor division and modulo: small, both signs, and 0 (one in 15).
Domain floor_divisor(DType t) { return is_unsigned_type(t) ? Domain{0, 9} : Domain{-7, 7}; }

Domain pow_base(DType t) {
  switch (t) {
    case DType::int8: return {-3, 3};
    case DType::uint8: return {0, 5};
    case DType::int32: return {-6, 6};
    case DType::uint32: return {0, 9};
    case DType::int64: return {-10, 10};
    default: return {0.1, 4};
  }
}

Domain pow_exponent(DType t) {
  switch (t) {
    case DType::int8: return {0, 4};
    case DType::uint8: return {0, 3};
    case DType::int32: return {0, 6};
    case DType::uint32:
    case DType::int64: return {0, 9};
    default: return {-2.5, 2.5};
  }
}

struct BinaryOp {
  const char* name;
  Tensor (*apply)(const Tensor&, const Tensor&);
  double (*reference)(double, double);
  Domain (*lhs)(DType);
  Domain (*rhs)(DType);
  Accuracy accuracy;
  bool float_for_ints;  // true division
  std::vector<DType> dtypes;
};

const std::vector<BinaryOp>& binary_ops() {
  using enum Accuracy;
  static const std::vector<BinaryOp> ops = {
      {"add", [](const Tensor& a, const Tensor& b) { return a + b; }, [](double a, double b) { return a + b; },
       additive, additive, rounded, false, kNumericDtypes},
      {"sub", [](const Tensor& a, const Tensor& b) { return a - b; }, [](double a, double b) { return a - b; },
       additive, additive, rounded, false, kNumericDtypes},
      {"mul", [](const Tensor& a, const Tensor& b) { return a * b; }, [](double a, double b) { return a * b; },
       multiplicative, multiplicative, rounded, false, kNumericDtypes},
      {"div", [](const Tensor& a, const Tensor& b) { return a / b; }, [](double a, double b) { return a / b; },
       default_domain, divisor, approximate, true, kNumericDtypes},
      {"idiv", [](const Tensor& a, const Tensor& b) { return a.idiv(b); }, floor_div, default_domain, floor_divisor,
       rounded, false, kIntDtypes},
      {"mod", [](const Tensor& a, const Tensor& b) { return a.mod(b); }, floor_mod, default_domain, floor_divisor,
       rounded, false, kIntDtypes},
      {"pow", [](const Tensor& a, const Tensor& b) { return a.pow(b); },
       [](double a, double b) { return std::pow(a, b); }, pow_base, pow_exponent, approximate, false, kNumericDtypes},
      {"maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); },
       [](double a, double b) { return std::max(a, b); }, default_domain, default_domain, rounded, false,
       kNumericDtypes},
      {"minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); },
       [](double a, double b) { return std::min(a, b); }, default_domain, default_domain, rounded, false,
       kNumericDtypes},
  };
  return ops;
}

// Every op that takes the dtype, each on its own operands drawn from its domains.
class TensorOpsBinary : public ::testing::TestWithParam<DType> {};

TEST_P(TensorOpsBinary, EveryOpMatchesReferenceWithBroadcasting) {
  const DType t = GetParam();
  std::vector<Check> checks;
  uint64_t seed = 1000 + 100 * static_cast<uint64_t>(t);
  for (const BinaryOp& op : binary_ops()) {
    if (std::find(op.dtypes.begin(), op.dtypes.end(), t) == op.dtypes.end()) continue;
    const ref::Array a = random_array(kLhsShape, t, op.lhs(t), ++seed);
    const ref::Array b = random_array(kRhsShape, t, op.rhs(t), ++seed);
    const DType out = op.float_for_ints && !is_float_type(t) ? DType::float32 : t;
    ref::Array want = ref::zip(a, b, op.reference);
    if (!is_float_type(out)) want = ref::map(want, [out](double v) { return stored(out, v); });
    const Tensor y = op.apply(to_tensor(a, t), to_tensor(b, t));
    EXPECT_EQ(y.shape(), kOutShape) << op.name;
    checks.push_back({op.name, y, out, want, tolerance(out, op.accuracy)});
  }
  expect_all(checks);
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsBinary, ::testing::ValuesIn(kNumericDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

// All six comparisons of one dtype, in one kernel; small integers so that equal pairs are frequent.
class TensorOpsCompare : public ::testing::TestWithParam<DType> {};

TEST_P(TensorOpsCompare, AllSixGiveBool) {
  const DType t = GetParam();
  const Domain small = t == DType::bool_ ? Domain{0, 1} : Domain{is_unsigned_type(t) ? 0. : -4, 4, true};
  const ref::Array a = random_array(kLhsShape, t, small, 31 + static_cast<uint64_t>(t));
  const ref::Array b = random_array(kRhsShape, t, small, 37 + static_cast<uint64_t>(t));
  const Tensor x = to_tensor(a, t), y = to_tensor(b, t);
  const std::vector<Tensor> results = {x.lt(y), x.le(y), x.gt(y), x.ge(y), x.eq(y), x.ne(y)};
  const std::vector<ref::Array> want = {
      ref::zip(a, b, [](double p, double q) { return double(p < q); }),
      ref::zip(a, b, [](double p, double q) { return double(p <= q); }),
      ref::zip(a, b, [](double p, double q) { return double(p > q); }),
      ref::zip(a, b, [](double p, double q) { return double(p >= q); }),
      ref::zip(a, b, [](double p, double q) { return double(p == q); }),
      ref::zip(a, b, [](double p, double q) { return double(p != q); }),
  };
  const char* names[] = {"lt", "le", "gt", "ge", "eq", "ne"};
  std::vector<Check> checks;
  for (size_t i = 0; i < results.size(); ++i) checks.push_back({names[i], results[i], DType::bool_, want[i], kExact});
  expect_all(checks);
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsCompare, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

// where(cond, a, b) in every dtype of a and b; cond broadcasts against both.
class TensorOpsWhere : public ::testing::TestWithParam<DType> {};

TEST_P(TensorOpsWhere, SelectsPerElement) {
  const DType t = GetParam();
  const ref::Array cond = random_array(kLhsShape, DType::bool_, 41);
  const ref::Array a = random_array(kRhsShape, t, 43 + static_cast<uint64_t>(t));
  const ref::Array b = random_array({13}, t, 47 + static_cast<uint64_t>(t));
  const Tensor y = to_tensor(cond, DType::bool_).where(to_tensor(a, t), to_tensor(b, t));
  const ref::Array want = ref::zip3(cond, a, b, [](double c, double p, double q) { return c != 0 ? p : q; });
  EXPECT_TRUE(matches(y, t, want, kExact));
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsWhere, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

TEST(TensorOpsWhereCast, NonBoolConditionIsNonzero) {
  const ref::Array cond = random_array({7, 13}, DType::float32, {-2, 2, true}, 51);  // zeros one in five
  const ref::Array a = random_array({7, 13}, DType::float32, 53), b = random_array({7, 13}, DType::float32, 57);
  const Tensor y = to_tensor(cond, DType::float32).where(to_tensor(a, DType::float32), to_tensor(b, DType::float32));
  EXPECT_TRUE(matches(y, DType::float32,
                      ref::zip3(cond, a, b, [](double c, double p, double q) { return c != 0 ? p : q; }), kExact));
}

TEST(TensorOpsLogical, AndOrNotOnBool) {
  const ref::Array a = random_array(kLhsShape, DType::bool_, 61), b = random_array(kRhsShape, DType::bool_, 67);
  const Tensor x = to_tensor(a, DType::bool_), y = to_tensor(b, DType::bool_);
  EXPECT_TRUE(matches(x.logical_and(y), DType::bool_,
                      ref::zip(a, b, [](double p, double q) { return double(p != 0 && q != 0); }), kExact));
  EXPECT_TRUE(matches(x.logical_or(y), DType::bool_,
                      ref::zip(a, b, [](double p, double q) { return double(p != 0 || q != 0); }), kExact));
  EXPECT_TRUE(matches(x.logical_or(y).logical_not(), DType::bool_,
                      ref::zip(a, b, [](double p, double q) { return double(p == 0 && q == 0); }), kExact));
}

// Python: -7 // 2 == -4, -7 % 2 == 1, 7 // -2 == -4, 7 % -2 == -1; and the header's x // 0 == 0, x % 0 == 0.
TEST(TensorOpsFloorDivision, FollowsPythonSigns) {
  const std::vector<int32_t> a = {-7, 7, -7, 7, 0, 5, -5, 7, -7, 1000000007, -1000000007};
  const std::vector<int32_t> b = {2, -2, -2, 2, 3, 0, 0, 7, 7, 10, 10};
  const std::vector<int32_t> q = {-4, -4, 3, 3, 0, 0, 0, 1, -1, 100000000, -100000001};
  const std::vector<int32_t> r = {1, -1, -1, 1, 0, 0, 0, 0, 0, 7, 3};
  const Tensor x(a, {11}), y(b, {11});
  EXPECT_EQ(x.idiv(y).data<int32_t>(), q);
  EXPECT_EQ(x.mod(y).data<int32_t>(), r);
  EXPECT_EQ(x.idiv(0).data<int32_t>(), std::vector<int32_t>(11, 0));
  EXPECT_EQ(x.mod(0).data<int32_t>(), std::vector<int32_t>(11, 0));
  EXPECT_EQ(x.idiv(-3).data<int32_t>(), (std::vector<int32_t>{2, -3, 2, -3, 0, -2, 1, -3, 2, -333333336, 333333335}));
  EXPECT_EQ(x.mod(-3).data<int32_t>(), (std::vector<int32_t>{-1, -2, -1, -2, 0, -1, -2, -2, -1, -1, -2}));
}

TEST(TensorOpsFloorDivision, Int8AndInt64AndUnsigned) {
  const Tensor i8(std::vector<int8_t>{-128, 127, -1, -100}, {4}), d8(std::vector<int8_t>{3, -3, 100, 7}, {4});
  EXPECT_EQ(i8.idiv(d8).data<int8_t>(), (std::vector<int8_t>{-43, -43, -1, -15}));
  EXPECT_EQ(i8.mod(d8).data<int8_t>(), (std::vector<int8_t>{1, -2, 99, 5}));
  const int64_t big = int64_t{1} << 40;
  const Tensor i64(std::vector<int64_t>{big + 5, -big - 5}, {2}), d64(std::vector<int64_t>{-big, big}, {2});
  EXPECT_EQ(i64.idiv(d64).data<int64_t>(), (std::vector<int64_t>{-2, -2}));
  EXPECT_EQ(i64.mod(d64).data<int64_t>(), (std::vector<int64_t>{5 - big, big - 5}));
  const Tensor u8(std::vector<uint8_t>{255, 200, 7, 9}, {4}), e8(std::vector<uint8_t>{2, 7, 0, 10}, {4});
  EXPECT_EQ(u8.idiv(e8).data<uint8_t>(), (std::vector<uint8_t>{127, 28, 0, 0}));
  EXPECT_EQ(u8.mod(e8).data<uint8_t>(), (std::vector<uint8_t>{1, 4, 0, 9}));
  const Tensor u32(std::vector<uint32_t>{4000000000u, 7}, {2}), e32(std::vector<uint32_t>{3, 4000000000u}, {2});
  EXPECT_EQ(u32.idiv(e32).data<uint32_t>(), (std::vector<uint32_t>{1333333333u, 0}));
  EXPECT_EQ(u32.mod(e32).data<uint32_t>(), (std::vector<uint32_t>{1, 7}));
}

// Comparisons of values that differ only beyond 2^24 (float32) and 2^32: they must be compared as integers.
TEST(TensorOpsCompareWide, Int64AndUint32ValuesAreNotRoundedThroughFloat) {
  const int64_t base = int64_t{1} << 40;
  const Tensor a(std::vector<int64_t>{base, base + 1, base + 2}, {3});
  const Tensor b(std::vector<int64_t>{base + 1, base + 1, base + 1}, {3});
  EXPECT_EQ(to_array(a < b).values, (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(to_array(a.eq(b)).values, (std::vector<double>{0, 1, 0}));
  const Tensor u(std::vector<uint32_t>{4294967295u, 16777217u, 2147483648u}, {3});
  const Tensor v(std::vector<uint32_t>{4294967294u, 16777216u, 2147483647u}, {3});
  EXPECT_EQ(to_array(u > v).values, (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(to_array(u.ne(v)).values, (std::vector<double>{1, 1, 1}));
  EXPECT_EQ((u - v).data<uint32_t>(), (std::vector<uint32_t>{1, 1, 1}));
  EXPECT_EQ((v - u).data<uint32_t>(), (std::vector<uint32_t>{4294967295u, 4294967295u, 4294967295u}));
}

// pow at the points a exp2/log2 implementation gets wrong: negative bases with integer exponents, 0^0, 0^y, x^0.
TEST(TensorOpsPow, NegativeBasesAndZeros) {
  const Tensor base(std::vector<float>{-2.0f, -2.0f, -3.0f, 0.0f, 0.0f, 5.0f, -1.5f}, {7});
  const Tensor exponent(std::vector<float>{2.0f, 3.0f, 0.0f, 0.0f, 2.5f, 0.0f, 2.0f}, {7});
  const std::vector<float> got = base.pow(exponent).data<float>();
  const std::vector<float> want = {4.0f, -8.0f, 1.0f, 1.0f, 0.0f, 1.0f, 2.25f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
  const Tensor ints(std::vector<int32_t>{-3, -2, 0, 7, 2}, {5});
  EXPECT_EQ(ints.pow(3).data<int32_t>(), (std::vector<int32_t>{-27, -8, 0, 343, 8}));
  EXPECT_EQ(ints.pow(0).data<int32_t>(), (std::vector<int32_t>{1, 1, 1, 1, 1}));
  const Tensor halves(std::vector<float>{-1.5f, 2.0f}, {2});
  const std::vector<float> squares = halves.pow(2).data<float>();
  EXPECT_NEAR(squares[0], 2.25f, 1e-6);
  EXPECT_NEAR(squares[1], 4.0f, 1e-6);
}

}  // namespace
}  // namespace hcq::optest
