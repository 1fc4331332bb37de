// Elementwise ops on what the op tables do not cover: non-contiguous inputs (permuted, sliced with a step, reversed,
// flipped, expanded, padded with zero and with a value, shrunk, chained) fed to a unary, a binary and an integer op;
// the shapes at the edges (0-d, 0-size, 1 element, odd primes, over 64K elements); numpy broadcasting of many shape
// pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType I32 = DType::int32, F32 = DType::float32;

const ref::Dims kViewShape = {7, 13};

struct ViewCase {
  const char* name;
  ref::Dims base;
  Tensor (*tensor)(const Tensor&);
  ref::Array (*reference)(const ref::Array&);
};

// clang-format off
const std::vector<ViewCase>& view_cases() {
  using A = ref::Array;
  using T = Tensor;
  static const std::vector<ViewCase> cases = {
      {"permuted", {13, 7}, [](const T& t) { return t.permute({1, 0}); }, [](const A& a) { return ref::permute(a, {1, 0}); }},
      {"sliced_step2", {7, 27}, [](const T& t) { return t.slice(1, 1, 27, 2); }, [](const A& a) { return ref::slice(a, 1, 1, 27, 2); }},
      {"sliced_reversed", {7, 13}, [](const T& t) { return t.slice(0, -1, -100, -1); }, [](const A& a) { return ref::flip(a, {0}); }},
      {"flipped", {7, 13}, [](const T& t) { return t.flip({0, 1}); }, [](const A& a) { return ref::flip(a, {0, 1}); }},
      {"expanded_column", {7, 1}, [](const T& t) { return t.expand({7, 13}); }, [](const A& a) { return ref::expand(a, {7, 13}); }},
      {"expanded_row", {13}, [](const T& t) { return t.expand({7, 13}); }, [](const A& a) { return ref::expand(a, {7, 13}); }},
      {"padded_zero", {5, 11}, [](const T& t) { return t.pad({{1, 1}, {0, 2}}); }, [](const A& a) { return ref::pad(a, {{1, 1}, {0, 2}}, 0); }},
      {"padded_value", {5, 11}, [](const T& t) { return t.pad({{2, 0}, {1, 1}}, 3); }, [](const A& a) { return ref::pad(a, {{2, 0}, {1, 1}}, 3); }},
      {"shrunk", {9, 15}, [](const T& t) { return t.shrink({{1, 8}, {2, 15}}); }, [](const A& a) { return ref::shrink(a, {{1, 8}, {2, 15}}); }},
      {"chain", {13, 3, 3},
       [](const T& t) { return t.reshape({13, 9}).transpose().flip(1).pad({{0, 0}, {0, 2}}, 1).slice(1, 0, 15, 1).shrink({{1, 8}, {1, 14}}); },
       [](const A& a) { return ref::shrink(ref::pad(ref::flip(ref::permute(ref::reshape(a, {13, 9}), {1, 0}), {1}), {{0, 0}, {0, 2}}, 1), {{1, 8}, {1, 14}}); }},
  };
  return cases;
}
// clang-format on

class TensorOpsViews : public ::testing::TestWithParam<ViewCase> {};

TEST_P(TensorOpsViews, UnaryBinaryAndIntegerOps) {
  const ViewCase& c = GetParam();
  const ref::Array f = random_array(c.base, F32, {-4, 4}, 317), n = random_array(c.base, I32, {-1000, 1000}, 331);
  const ref::Array fv = c.reference(f), nv = c.reference(n);
  ASSERT_EQ(fv.shape, kViewShape);
  const ref::Array other = random_array(kViewShape, F32, 337);
  const Tensor tf = c.tensor(to_tensor(f, F32)), tn = c.tensor(to_tensor(n, I32));
  // exp of a padded zero is 1: the pad belongs to the input, not to the result.
  EXPECT_TRUE(
      matches(tf.exp(), F32, ref::map(fv, [](double v) { return std::exp(v); }), tolerance(F32, Accuracy::approximate)))
      << "exp";
  EXPECT_TRUE(matches(tf + to_tensor(other, F32), F32, ref::zip(fv, other, [](double a, double b) { return a + b; }),
                      tolerance(F32, Accuracy::rounded)))
      << "add";
  // Both operands views, one of them reversed.
  EXPECT_TRUE(matches(tn * tn.flip(0) - 7, I32,
                      ref::zip(nv, ref::flip(nv, {0}), [](double a, double b) { return a * b - 7; }), kExact))
      << "mul";
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsViews, ::testing::ValuesIn(view_cases()),
                         [](const ::testing::TestParamInfo<ViewCase>& info) { return info.param.name; });

// ---- shapes at the edges

class TensorOpsShapes : public ::testing::TestWithParam<ref::Dims> {};

TEST_P(TensorOpsShapes, ArithmeticExpAndCompare) {
  const ref::Dims& shape = GetParam();
  const ref::Array a = random_array(shape, F32, {-8, 8, true}, 347), b = random_array(shape, F32, {-8, 8, true}, 349);
  const Tensor ta = to_tensor(a, F32), tb = to_tensor(b, F32);
  EXPECT_TRUE(matches(ta * tb - ta, F32, ref::zip(a, b, [](double x, double y) { return x * y - x; }), kExact));
  const ref::Array e = random_array(shape, F32, {-5, 5}, 353);
  EXPECT_TRUE(matches(to_tensor(e, F32).exp(), F32, ref::map(e, [](double x) { return std::exp(x); }),
                      tolerance(F32, Accuracy::approximate)));
  const ref::Array p = random_array(shape, I32, 359), q = random_array(shape, I32, 367);
  EXPECT_TRUE(matches(to_tensor(p, I32) < to_tensor(q, I32), DType::bool_,
                      ref::zip(p, q, [](double x, double y) { return double(x < y); }), kExact));
}

std::string shape_name(const ref::Dims& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (int64_t d : shape) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsShapes,
                         ::testing::Values(ref::Dims{}, ref::Dims{0}, ref::Dims{3, 0, 5}, ref::Dims{1},
                                           ref::Dims{7, 13}, ref::Dims{3, 5, 11}, ref::Dims{257, 263}),
                         [](const ::testing::TestParamInfo<ref::Dims>& info) { return shape_name(info.param); });

// ---- broadcasting

struct BroadcastCase {
  ref::Dims a, b;
};

class TensorOpsBroadcast : public ::testing::TestWithParam<BroadcastCase> {};

TEST_P(TensorOpsBroadcast, AddAndWhere) {
  const BroadcastCase& c = GetParam();
  const ref::Array a = random_array(c.a, F32, 373), b = random_array(c.b, F32, 379);
  const Tensor ta = to_tensor(a, F32), tb = to_tensor(b, F32);
  const ref::Array sum = ref::zip(a, b, [](double x, double y) { return x + y; });
  EXPECT_TRUE(matches(ta + tb, F32, sum, tolerance(F32, Accuracy::rounded)));
  EXPECT_TRUE(matches(tb + ta, F32, sum, tolerance(F32, Accuracy::rounded)));
  EXPECT_TRUE(
      matches((ta > 0).where(ta, tb), F32, ref::zip(a, b, [](double x, double y) { return x > 0 ? x : y; }), kExact));
}

INSTANTIATE_TEST_SUITE_P(TensorOps, TensorOpsBroadcast,
                         ::testing::Values(BroadcastCase{{}, {7, 13}}, BroadcastCase{{1}, {7, 13}},
                                           BroadcastCase{{13}, {7, 13}}, BroadcastCase{{7, 1}, {1, 13}},
                                           BroadcastCase{{3, 1, 11}, {5, 1}}, BroadcastCase{{1, 5, 1}, {3, 1, 11}},
                                           BroadcastCase{{0, 13}, {1, 13}}, BroadcastCase{{2, 1, 3, 1}, {4, 1, 5}}),
                         [](const ::testing::TestParamInfo<BroadcastCase>& info) {
                           return shape_name(info.param.a) + "_with_" + shape_name(info.param.b);
                         });

}  // namespace
}  // namespace hcq::optest
