// Reductions against the double-precision reference: any set of axes (all, one, several, negative, unordered),
// keepdim both ways, the accumulate dtypes the header states (asserted exactly), mean of integers as float32,
// var/std with a correction, argmax/argmin's first index, any/all, softmax, log_softmax, logsumexp and cumsum, on
// non-contiguous inputs and on 0-size, 1-element and >64K-element shapes.
// Float inputs that are summed are small integers (or halves of them): their sums are exact in float32 whatever
// order the kernel adds in, so a wrong or missing element shows instead of hiding in a tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType B = DType::bool_, I8 = DType::int8, U8 = DType::uint8, I32 = DType::int32, U32 = DType::uint32,
                I64 = DType::int64, F16 = DType::float16, BF16 = DType::bfloat16, F32 = DType::float32;

const ref::Dims kShape = {3, 5, 7};

std::string axes_name(const std::vector<int>& axes) {
  if (axes.empty()) return "all";
  std::string s;
  for (int a : axes) {
    if (!s.empty()) s += '_';
    if (a < 0) s += 'm';  // gtest names take no '-'
    s += std::to_string(a < 0 ? -a : a);
  }
  return s;
}

// ---- axis sets and keepdim, on sum (float32) and max (int32)

struct AxesCase {
  std::vector<int> axes;
  bool keepdim;
};

class TensorReduceAxes : public ::testing::TestWithParam<AxesCase> {};

TEST_P(TensorReduceAxes, SumAndMaxMatchReference) {
  const AxesCase& c = GetParam();
  const ref::Array x = random_array(kShape, F32, {-8, 8, true}, 101);
  const ref::Array n = random_array(kShape, I32, 103);
  const Tensor s = to_tensor(x, F32).sum(c.axes, c.keepdim), m = to_tensor(n, I32).max(c.axes, c.keepdim);
  Tensor::realize({s, m});
  EXPECT_TRUE(matches(s, F32, ref::sum(x, c.axes, c.keepdim), kExact));
  EXPECT_TRUE(matches(m, I32, ref::max(n, c.axes, c.keepdim), kExact));
}

std::vector<AxesCase> axes_cases() {
  const std::vector<std::vector<int>> sets = {{},     {0},    {1},       {2},      {-1},  {0, 2},
                                              {1, 2}, {0, 1}, {0, 1, 2}, {-3, -1}, {2, 0}};
  std::vector<AxesCase> cases;
  for (const auto& axes : sets)
    for (bool keepdim : {false, true}) cases.push_back({axes, keepdim});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(TensorReduce, TensorReduceAxes, ::testing::ValuesIn(axes_cases()),
                         [](const ::testing::TestParamInfo<AxesCase>& info) {
                           return axes_name(info.param.axes) + (info.param.keepdim ? "_keepdim" : "");
                         });

// ---- every dtype: sum, prod, max, min, mean and the dtypes they give

DType accumulate_dtype(DType t) {
  switch (t) {
    case B:
    case I8:
    case I32: return I32;
    case U8:
    case U32: return U32;
    default: return t;  // int64; halves accumulate in float32 but come back as the half type
  }
}

// Sums of 7 that fit the accumulate type (the reference does not wrap).
Domain sum_domain(DType t) {
  switch (t) {
    case I32: return {-2e8, 2e8};
    case U32: return {0, 6e8};
    default: return is_float_type(t) ? Domain{-8, 8, true} : default_domain(t);
  }
}

// Products of 7 factors that stay exact: the narrow types overflow their own range (so the accumulate type shows).
ref::Array prod_input(DType t, uint64_t seed) {
  switch (t) {
    case I8: return random_array({5, 7}, t, {-5, 5}, seed);
    case U8: return random_array({5, 7}, t, {0, 6}, seed);
    case I32: return random_array({5, 7}, t, {-8, 8}, seed);
    case U32: return random_array({5, 7}, t, {0, 20}, seed);
    case I64: return random_array({5, 7}, t, {-150, 150}, seed);  // beyond 2^32, below 2^53
    case B: return random_array({5, 7}, t, {0, 5}, seed);         // mostly true
    default: return ref::map(random_array({5, 7}, F32, {-4, 4, true}, seed), [](double v) { return v / 2; });
  }
}

class TensorReduceDtype : public ::testing::TestWithParam<DType> {};

TEST_P(TensorReduceDtype, SumProdMaxMinMean) {
  const DType t = GetParam();
  const DType acc = accumulate_dtype(t), mean_dtype = is_float_type(t) ? t : F32;
  const ref::Array x = random_array({5, 7}, t, sum_domain(t), 107 + static_cast<uint64_t>(t));
  const ref::Array p = prod_input(t, 109 + static_cast<uint64_t>(t));
  const Tensor tx = to_tensor(x, t);
  const Tensor sum = tx.sum(1), prod = to_tensor(p, t).prod(1), max = tx.max(1), min = tx.min(1), mean = tx.mean(1);
  // A half result is the exact float32 sum rounded once.
  EXPECT_TRUE(matches(sum, acc, ref::sum(x, {1}, false), tolerance(acc, Accuracy::rounded))) << "sum";
  EXPECT_TRUE(matches(prod, acc, ref::prod(p, {1}, false), tolerance(acc, Accuracy::rounded))) << "prod";
  EXPECT_TRUE(matches(max, t, ref::max(x, {1}, false), kExact)) << "max";
  EXPECT_TRUE(matches(min, t, ref::min(x, {1}, false), kExact)) << "min";
  EXPECT_TRUE(matches(mean, mean_dtype, ref::mean(x, {1}, false), tolerance(mean_dtype, Accuracy::approximate)))
      << "mean";
}

INSTANTIATE_TEST_SUITE_P(TensorReduce, TensorReduceDtype, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

// ---- var and std

struct VarCase {
  std::vector<int> axes;
  int correction;
};

class TensorReduceVar : public ::testing::TestWithParam<VarCase> {};

TEST_P(TensorReduceVar, VarAndStdWithCorrection) {
  const VarCase& c = GetParam();
  const ref::Array x = random_array(kShape, F32, {-10, 10}, 113);
  const Tensor t = to_tensor(x, F32);
  const Tensor v = t.var(c.axes, false, c.correction), s = t.std(c.axes, true, c.correction);
  const Tolerance tol = tolerance(F32, Accuracy::approximate);
  EXPECT_TRUE(matches(v, F32, ref::var(x, c.axes, false, c.correction), tol));
  EXPECT_TRUE(matches(s, F32, ref::std_dev(x, c.axes, true, c.correction), tol));
}

INSTANTIATE_TEST_SUITE_P(TensorReduce, TensorReduceVar,
                         ::testing::Values(VarCase{{1}, 0}, VarCase{{1}, 1}, VarCase{{1}, 2}, VarCase{{}, 1},
                                           VarCase{{0, 2}, 1}),
                         [](const ::testing::TestParamInfo<VarCase>& info) {
                           return axes_name(info.param.axes) + "_correction" + std::to_string(info.param.correction);
                         });

TEST(TensorReduceVarDtype, IntegersGiveFloat32AndHalvesStayHalf) {
  const ref::Array n = random_array({5, 7}, I32, {-100, 100}, 127);
  EXPECT_TRUE(
      matches(to_tensor(n, I32).var(1), F32, ref::var(n, {1}, false, 1), tolerance(F32, Accuracy::approximate)));
  const ref::Array h = random_array({5, 7}, F16, {-4, 4}, 131);
  EXPECT_TRUE(
      matches(to_tensor(h, F16).std(0), F16, ref::std_dev(h, {0}, false, 1), tolerance(F16, Accuracy::approximate)));
  // Large values with a small spread: a one-pass E[x^2] - E[x]^2 in float32 loses every digit here.
  const ref::Array offset =
      ref::map(random_array({64}, F32, {-1, 1}, 137), [](double v) { return stored(F32, 1000 + v); });
  EXPECT_TRUE(matches(to_tensor(offset, F32).var(), F32, ref::var(offset, {}, false, 1), {1e-3, 1e-4}));
}

// ---- argmax / argmin: the first index of the extreme, as int32

TEST(TensorReduceArg, EveryAxisKeepdimAndFlattened) {
  const ref::Array x = random_array(kShape, F32, {-3, 3, true}, 139);  // many ties
  const Tensor t = to_tensor(x, F32);
  for (int axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const bool keepdim = axis == -1;
    EXPECT_TRUE(matches(t.argmax(axis, keepdim), I32, ref::argmax(x, axis, keepdim), kExact));
    EXPECT_TRUE(matches(t.argmin(axis, keepdim), I32, ref::argmin(x, axis, keepdim), kExact));
  }
  const ref::Array flat = ref::reshape(x, {-1});
  EXPECT_TRUE(matches(t.argmax(), I32, ref::argmax(flat, 0, false), kExact));
  EXPECT_TRUE(matches(t.argmin(), I32, ref::argmin(flat, 0, false), kExact));
}

class TensorReduceArgDtype : public ::testing::TestWithParam<DType> {};

TEST_P(TensorReduceArgDtype, LastAxisAndFlattened) {
  const DType t = GetParam();
  const ref::Array x = random_array({5, 7}, t, {is_unsigned_type(t) ? 0. : -3, 3, true}, 149);
  const Tensor v = to_tensor(x, t);
  EXPECT_TRUE(matches(v.argmax(-1), I32, ref::argmax(x, -1, false), kExact));
  EXPECT_TRUE(matches(v.argmin(), I32, ref::argmin(ref::reshape(x, {-1}), 0, false), kExact));
}

INSTANTIATE_TEST_SUITE_P(TensorReduce, TensorReduceArgDtype, ::testing::Values(I8, U8, I32, I64, F16, BF16),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

TEST(TensorReduceArg, HandPickedTiesAndNegatives) {
  const Tensor x(std::vector<float>{-5, -1, -1, -7, 3, 3, -2, 3}, {2, 4});
  EXPECT_EQ(x.argmax(1).data<int32_t>(), (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(x.argmin(1).data<int32_t>(), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(x.argmax().data<int32_t>(), (std::vector<int32_t>{4}));
  EXPECT_EQ(x.argmax().shape(), Shape{});
  EXPECT_EQ(x.argmax(0, true).shape(), (Shape{1, 4}));
}

// ---- any / all: bool results, nonzero is true

ref::Array bools(const ref::Dims& shape, int one_in, uint64_t seed, bool rare_value) {
  // rare_value appears once in one_in draws, so both any() and all() see both answers.
  return ref::map(random_array(shape, I32, {0, double(one_in - 1)}, seed),
                  [rare_value](double v) { return (v == 0) == rare_value ? 1.0 : 0.0; });
}

TEST(TensorReduceAnyAll, BoolOverAxisSets) {
  const ref::Array sparse = bools(kShape, 8, 151, true), dense = bools(kShape, 8, 157, false);
  const Tensor s = to_tensor(sparse, B), d = to_tensor(dense, B);
  for (const std::vector<int>& axes : {std::vector<int>{}, {1}, {0, 2}}) {
    SCOPED_TRACE(axes_name(axes));
    EXPECT_TRUE(matches(s.any(axes), B, ref::any(sparse, axes, false), kExact));
    EXPECT_TRUE(matches(d.all(axes, true), B, ref::all(dense, axes, true), kExact));
  }
}

TEST(TensorReduceAnyAll, NumbersAreTrueWhenNonzero) {
  const ref::Array f = ref::map(bools({5, 7}, 6, 163, false), [](double v) { return v * -2.5; });
  const ref::Array n = ref::map(bools({5, 7}, 6, 167, true), [](double v) { return v * 1000; });
  EXPECT_TRUE(matches(to_tensor(f, F32).all({1}), B, ref::all(f, {1}, false), kExact));
  EXPECT_TRUE(matches(to_tensor(n, I32).any({1}), B, ref::any(n, {1}, false), kExact));
}

// ---- softmax family and cumsum

TEST(TensorReduceSoftmax, SoftmaxLogSoftmaxLogsumexp) {
  const ref::Array x = random_array(kShape, F32, {-20, 20}, 173);  // exp of 20 needs the max subtracted
  const Tensor t = to_tensor(x, F32);
  const Tolerance tol = tolerance(F32, Accuracy::approximate);
  EXPECT_TRUE(matches(t.softmax(), F32, ref::softmax(x, -1), tol));
  EXPECT_TRUE(matches(t.softmax(0), F32, ref::softmax(x, 0), tol));
  EXPECT_TRUE(matches(t.log_softmax(1), F32, ref::log_softmax(x, 1), tol));
  EXPECT_TRUE(matches(t.logsumexp(2), F32, ref::logsumexp(x, 2, false), tol));
  EXPECT_TRUE(matches(t.logsumexp(0, true), F32, ref::logsumexp(x, 0, true), tol));
  // Far beyond exp's float range: only a max-shifted logsumexp survives.
  const Tensor big(std::vector<float>{1000, 1000, -1000}, {3});
  EXPECT_NEAR(big.logsumexp(0).item(), 1000 + std::log(2.0), 1e-3);
  EXPECT_NEAR(big.softmax().tolist()[0], 0.5, 1e-6);
}

TEST(TensorReduceSoftmax, HalfStaysHalf) {
  const ref::Array x = random_array({5, 7}, F16, {-4, 4}, 179);
  EXPECT_TRUE(matches(to_tensor(x, F16).softmax(), F16, ref::softmax(x, -1), tolerance(F16, Accuracy::approximate)));
}

TEST(TensorReduceCumsum, AlongEachAxis) {
  const ref::Array x = random_array({7, 13}, F32, {-8, 8, true}, 181);
  EXPECT_TRUE(matches(to_tensor(x, F32).cumsum(0), F32, ref::cumsum(x, 0), kExact));
  EXPECT_TRUE(matches(to_tensor(x, F32).cumsum(1), F32, ref::cumsum(x, 1), kExact));
  const ref::Array n = random_array({3, 300}, I32, {-1000, 1000}, 191);  // longer than any small unrolled loop
  EXPECT_TRUE(matches(to_tensor(n, I32).cumsum(-1), I32, ref::cumsum(n, -1), kExact));
}

// ---- non-contiguous inputs

struct ViewCase {
  const char* name;
  ref::Dims base;
  Tensor (*tensor)(const Tensor&);
  ref::Array (*reference)(const ref::Array&);
};

const std::vector<ViewCase>& view_cases() {
  static const std::vector<ViewCase> cases = {
      {"permuted",
       {7, 5, 3},
       [](const Tensor& t) { return t.permute({2, 1, 0}); },
       [](const ref::Array& a) { return ref::permute(a, {2, 1, 0}); }},
      {"flipped",
       {3, 5, 7},
       [](const Tensor& t) { return t.flip({0, 2}); },
       [](const ref::Array& a) { return ref::flip(a, {0, 2}); }},
      {"sliced_with_step",
       {3, 11, 7},
       [](const Tensor& t) { return t.slice(1, 1, 11, 2); },
       [](const ref::Array& a) { return ref::slice(a, 1, 1, 11, 2); }},
      {"padded_with_value",
       {3, 3, 5},
       [](const Tensor& t) { return t.pad({{0, 0}, {1, 1}, {2, 0}}, 3.0); },
       [](const ref::Array& a) { return ref::pad(a, {{0, 0}, {1, 1}, {2, 0}}, 3.0); }},
      {"expanded",
       {3, 1, 7},
       [](const Tensor& t) { return t.expand({3, 5, 7}); },
       [](const ref::Array& a) { return ref::expand(a, {3, 5, 7}); }},
      {"shrunk",
       {5, 9, 8},
       [](const Tensor& t) { return t.shrink({{1, 4}, {2, 7}, {0, 7}}); },
       [](const ref::Array& a) { return ref::shrink(a, {{1, 4}, {2, 7}, {0, 7}}); }},
  };
  return cases;
}

class TensorReduceViews : public ::testing::TestWithParam<ViewCase> {};

TEST_P(TensorReduceViews, SumAndMaxOfAView) {
  const ViewCase& c = GetParam();
  const ref::Array x = random_array(c.base, F32, {-8, 8, true}, 193);
  const ref::Array view = c.reference(x);
  ASSERT_EQ(view.shape, kShape);
  const Tensor v = c.tensor(to_tensor(x, F32));
  EXPECT_TRUE(matches(v.sum(1), F32, ref::sum(view, {1}, false), kExact));
  EXPECT_TRUE(matches(v.max({0, 2}, true), F32, ref::max(view, {0, 2}, true), kExact));
}

INSTANTIATE_TEST_SUITE_P(TensorReduce, TensorReduceViews, ::testing::ValuesIn(view_cases()),
                         [](const ::testing::TestParamInfo<ViewCase>& info) { return info.param.name; });

// ---- shapes: over 64K elements, 0-size, 1 element, 0-d

TEST(TensorReduceShapes, OverSixtyFourThousandElements) {
  const ref::Array x = random_array({257, 263}, F32, {0, 15, true}, 197);  // sums below 2^24: exact
  const Tensor t = to_tensor(x, F32);
  EXPECT_TRUE(matches(t.sum(0), F32, ref::sum(x, {0}, false), kExact));
  EXPECT_TRUE(matches(t.sum(1), F32, ref::sum(x, {1}, false), kExact));
  EXPECT_TRUE(matches(t.sum(), F32, ref::sum(x, {}, false), kExact));
  const ref::Array n = random_array({257, 263}, I32, 199);
  EXPECT_TRUE(matches(to_tensor(n, I32).max(), I32, ref::max(n, {}, false), kExact));
  EXPECT_TRUE(matches(to_tensor(n, I32).argmin(), I32, ref::argmin(ref::reshape(n, {-1}), 0, false), kExact));
}

TEST(TensorReduceShapes, ZeroSizeAxesGiveTheIdentity) {
  const Tensor z = Tensor::zeros({3, 0, 5});
  EXPECT_TRUE(matches(z.sum(1), F32, ref::Array::filled({3, 5}, 0), kExact));
  EXPECT_TRUE(matches(z.prod(1), F32, ref::Array::filled({3, 5}, 1), kExact));
  EXPECT_TRUE(matches(z.sum(), F32, ref::Array::filled({}, 0), kExact));
  EXPECT_TRUE(matches(z.sum(2), F32, ref::Array::filled({3, 0}, 0), kExact));  // a 0-size result
  EXPECT_TRUE(matches(Tensor::zeros({0}, I32).sum(), I32, ref::Array::filled({}, 0), kExact));
}

TEST(TensorReduceShapes, OneElementAndZeroDim) {
  const Tensor one(std::vector<float>{4.5f}, {1});
  EXPECT_TRUE(matches(one.sum(), F32, ref::Array({}, {4.5}), kExact));
  EXPECT_TRUE(matches(one.max(0, true), F32, ref::Array({1}, {4.5}), kExact));
  EXPECT_EQ(one.var(0, false, 0).item(), 0.0);
  // A 0-d tensor has no axis to reduce: its sum is itself.
  const Tensor scalar = Tensor::scalar(2.5, F32);
  EXPECT_TRUE(matches(scalar.sum(), F32, ref::Array({}, {2.5}), kExact));
  EXPECT_TRUE(matches(scalar.max(), F32, ref::Array({}, {2.5}), kExact));
  // Reducing a size-1 axis changes no value.
  const ref::Array x = random_array({7, 1, 13}, F32, 211);
  EXPECT_TRUE(matches(to_tensor(x, F32).sum(1), F32, ref::squeeze(x, 1), kExact));
}

}  // namespace
}  // namespace hcq::optest
