// Movement ops (views: reshape, permute, expand, pad, shrink, flip, slice, squeeze/unsqueeze/flatten, repeat, cat,
// stack) and chains of them against the reference, on distinct values so a wrong index shows; every dtype through one
// chain; and the shape errors with their type and the shapes in their message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType I32 = DType::int32, F32 = DType::float32;

// 0, 1, 2, ...: every element distinct.
ref::Array iota(const ref::Dims& shape) {
  ref::Array a = ref::Array::filled(shape, 0.0);
  for (size_t i = 0; i < a.values.size(); ++i) a.values[i] = static_cast<double>(i);
  return a;
}

struct MovementCase {
  const char* name;
  ref::Dims base;
  Tensor (*tensor)(const Tensor&);
  ref::Array (*reference)(const ref::Array&);
};

// clang-format off
const std::vector<MovementCase>& movement_cases() {
  using A = ref::Array;
  using T = Tensor;
  static const std::vector<MovementCase> cases = {
      // reshape
      {"reshape", {2, 3, 4}, [](const T& t) { return t.reshape({4, 6}); }, [](const A& a) { return ref::reshape(a, {4, 6}); }},
      {"reshape_infer_last", {2, 3, 4}, [](const T& t) { return t.reshape({6, -1}); }, [](const A& a) { return ref::reshape(a, {6, 4}); }},
      {"reshape_infer_middle", {2, 3, 4}, [](const T& t) { return t.reshape({2, -1, 2}); }, [](const A& a) { return ref::reshape(a, {2, 6, 2}); }},
      {"reshape_flat", {2, 3, 4}, [](const T& t) { return t.reshape({-1}); }, [](const A& a) { return ref::reshape(a, {24}); }},
      {"reshape_to_0d", {1, 1}, [](const T& t) { return t.reshape({}); }, [](const A& a) { return ref::reshape(a, {}); }},
      {"reshape_of_permuted", {3, 4, 5}, [](const T& t) { return t.permute({2, 0, 1}).reshape({10, 6}); },
       [](const A& a) { return ref::reshape(ref::permute(a, {2, 0, 1}), {10, 6}); }},
      {"reshape_of_sliced", {6, 7}, [](const T& t) { return t.slice(1, 1, 7, 2).reshape({9, 2}); },
       [](const A& a) { return ref::reshape(ref::slice(a, 1, 1, 7, 2), {9, 2}); }},
      // permute, transpose
      {"permute_3d", {2, 3, 4}, [](const T& t) { return t.permute({2, 0, 1}); }, [](const A& a) { return ref::permute(a, {2, 0, 1}); }},
      {"permute_4d", {2, 3, 1, 5}, [](const T& t) { return t.permute({3, 1, 0, 2}); }, [](const A& a) { return ref::permute(a, {3, 1, 0, 2}); }},
      {"transpose_default", {7, 13}, [](const T& t) { return t.transpose(); }, [](const A& a) { return ref::permute(a, {1, 0}); }},
      {"transpose_outer", {2, 3, 4}, [](const T& t) { return t.transpose(0, 2); }, [](const A& a) { return ref::permute(a, {2, 1, 0}); }},
      // expand
      {"expand", {3, 1}, [](const T& t) { return t.expand({3, 4}); }, [](const A& a) { return ref::expand(a, {3, 4}); }},
      {"expand_keep", {3, 1}, [](const T& t) { return t.expand({-1, 4}); }, [](const A& a) { return ref::expand(a, {3, 4}); }},
      {"expand_new_leading", {3, 1}, [](const T& t) { return t.expand({2, 3, 5}); }, [](const A& a) { return ref::expand(a, {2, 3, 5}); }},
      {"expand_0d", {}, [](const T& t) { return t.expand({2, 3}); }, [](const A& a) { return ref::expand(a, {2, 3}); }},
      // pad
      {"pad_zero", {3, 4}, [](const T& t) { return t.pad({{1, 2}, {0, 3}}); }, [](const A& a) { return ref::pad(a, {{1, 2}, {0, 3}}, 0); }},
      {"pad_value", {2, 3, 2}, [](const T& t) { return t.pad({{0, 1}, {2, 0}, {1, 1}}, -7); },
       [](const A& a) { return ref::pad(a, {{0, 1}, {2, 0}, {1, 1}}, -7); }},
      // shrink
      {"shrink", {5, 6}, [](const T& t) { return t.shrink({{1, 4}, {2, 6}}); }, [](const A& a) { return ref::shrink(a, {{1, 4}, {2, 6}}); }},
      {"shrink_to_empty", {5, 6}, [](const T& t) { return t.shrink({{2, 2}, {0, 6}}); }, [](const A& a) { return ref::shrink(a, {{2, 2}, {0, 6}}); }},
      // flip
      {"flip_one", {3, 4}, [](const T& t) { return t.flip(1); }, [](const A& a) { return ref::flip(a, {1}); }},
      {"flip_many", {2, 3, 4}, [](const T& t) { return t.flip({0, -1}); }, [](const A& a) { return ref::flip(a, {0, 2}); }},
      // slice (Python semantics)
      {"slice_step1", {9, 4}, [](const T& t) { return t.slice(0, 2, 7); }, [](const A& a) { return ref::slice(a, 0, 2, 7, 1); }},
      {"slice_step3_remainder", {4, 11}, [](const T& t) { return t.slice(1, 1, 11, 3); }, [](const A& a) { return ref::slice(a, 1, 1, 11, 3); }},
      {"slice_negative_indices", {4, 11}, [](const T& t) { return t.slice(-1, -8, -2); }, [](const A& a) { return ref::slice(a, 1, 3, 9, 1); }},
      {"slice_clamped", {4, 11}, [](const T& t) { return t.slice(1, -100, 100, 4); }, [](const A& a) { return ref::slice(a, 1, 0, 11, 4); }},
      {"slice_reverse_all", {4, 11}, [](const T& t) { return t.slice(1, -1, -100, -1); }, [](const A& a) { return ref::flip(a, {1}); }},
      {"slice_negative_step2", {9, 4}, [](const T& t) { return t.slice(0, 7, 1, -2); }, [](const A& a) { return ref::slice(a, 0, 7, 1, -2); }},
      {"slice_empty", {9, 4}, [](const T& t) { return t.slice(0, 5, 2); }, [](const A& a) { return ref::slice(a, 0, 5, 2, 1); }},
      // squeeze, unsqueeze, flatten
      {"squeeze_all", {1, 3, 1, 4, 1}, [](const T& t) { return t.squeeze(); }, [](const A& a) { return ref::squeeze(a); }},
      {"squeeze_axis", {3, 1, 4}, [](const T& t) { return t.squeeze(1); }, [](const A& a) { return ref::squeeze(a, 1); }},
      {"squeeze_negative_axis", {3, 4, 1}, [](const T& t) { return t.squeeze(-1); }, [](const A& a) { return ref::squeeze(a, 2); }},
      {"unsqueeze_front", {3, 4}, [](const T& t) { return t.unsqueeze(0); }, [](const A& a) { return ref::unsqueeze(a, 0); }},
      {"unsqueeze_middle", {3, 4}, [](const T& t) { return t.unsqueeze(1); }, [](const A& a) { return ref::unsqueeze(a, 1); }},
      {"unsqueeze_end", {3, 4}, [](const T& t) { return t.unsqueeze(-1); }, [](const A& a) { return ref::unsqueeze(a, 2); }},
      {"flatten_all", {2, 3, 4}, [](const T& t) { return t.flatten(); }, [](const A& a) { return ref::flatten(a, 0, 2); }},
      {"flatten_inner", {2, 3, 4, 5}, [](const T& t) { return t.flatten(1, 2); }, [](const A& a) { return ref::flatten(a, 1, 2); }},
      {"flatten_of_transposed", {3, 4}, [](const T& t) { return t.transpose().flatten(); },
       [](const A& a) { return ref::flatten(ref::permute(a, {1, 0}), 0, 1); }},
      // repeat
      {"repeat", {2, 3}, [](const T& t) { return t.repeat({2, 3}); }, [](const A& a) { return ref::repeat(a, {2, 3}); }},
      {"repeat_new_leading", {2, 3}, [](const T& t) { return t.repeat({3, 1, 2}); }, [](const A& a) { return ref::repeat(a, {3, 1, 2}); }},
      // chains of views
      {"chain_permute_reshape_pad_flip_shrink", {3, 4, 5},
       [](const T& t) { return t.permute({2, 0, 1}).reshape({5, 12}).pad({{1, 1}, {2, 0}}).flip({0, 1}).shrink({{1, 6}, {3, 13}}); },
       [](const A& a) {
         return ref::shrink(ref::flip(ref::pad(ref::reshape(ref::permute(a, {2, 0, 1}), {5, 12}), {{1, 1}, {2, 0}}, 0), {0, 1}), {{1, 6}, {3, 13}});
       }},
      {"chain_expand_permute_slice", {3, 1, 4},
       [](const T& t) { return t.expand({3, 5, 4}).permute({1, 2, 0}).slice(0, 4, -100, -2).reshape({-1, 3}); },
       [](const A& a) { return ref::reshape(ref::slice(ref::permute(ref::expand(a, {3, 5, 4}), {1, 2, 0}), 0, 4, -100, -2), {12, 3}); }},
      {"chain_pad_reshape_transpose", {4, 6},
       [](const T& t) { return t.pad({{0, 0}, {1, 1}}, 9).reshape({8, 4}).transpose().flip(0); },
       [](const A& a) { return ref::flip(ref::permute(ref::reshape(ref::pad(a, {{0, 0}, {1, 1}}, 9), {8, 4}), {1, 0}), {0}); }},
      {"chain_shrink_of_padded_cancels", {5, 5},
       [](const T& t) { return t.pad({{2, 2}, {2, 2}}, 3).shrink({{1, 8}, {2, 7}}); },
       [](const A& a) { return ref::shrink(ref::pad(a, {{2, 2}, {2, 2}}, 3), {{1, 8}, {2, 7}}); }},
  };
  return cases;
}
// clang-format on

class TensorMovement : public ::testing::TestWithParam<MovementCase> {};

TEST_P(TensorMovement, MatchesReference) {
  const MovementCase& c = GetParam();
  const ref::Array x = iota(c.base);
  const ref::Array want = c.reference(x);
  const Tensor y = c.tensor(to_tensor(x, I32));
  EXPECT_EQ(y.shape(), want.shape);
  EXPECT_TRUE(matches(y, I32, want, kExact));
}

INSTANTIATE_TEST_SUITE_P(TensorMovement, TensorMovement, ::testing::ValuesIn(movement_cases()),
                         [](const ::testing::TestParamInfo<MovementCase>& info) { return info.param.name; });

// One chain through every dtype: the index arithmetic must not depend on the element size.
class TensorMovementDtype : public ::testing::TestWithParam<DType> {};

TEST_P(TensorMovementDtype, ChainOfViews) {
  const DType t = GetParam();
  const ref::Array x = random_array({4, 6}, t, 223 + static_cast<uint64_t>(t));
  const Tensor y = to_tensor(x, t).transpose().pad({{1, 0}, {0, 2}}).flip(1).slice(0, 0, 7, 2).reshape({-1});
  const ref::Array want = ref::reshape(
      ref::slice(ref::flip(ref::pad(ref::permute(x, {1, 0}), {{1, 0}, {0, 2}}, 0), {1}), 0, 0, 7, 2), {-1});
  EXPECT_TRUE(matches(y, t, want, kExact));
}

INSTANTIATE_TEST_SUITE_P(TensorMovement, TensorMovementDtype, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

// ---- cat and stack

TEST(TensorMovementJoin, CatAlongEachAxis) {
  const ref::Array a = iota({2, 3}), b = ref::map(iota({4, 3}), [](double v) { return 100 + v; });
  const ref::Array c = ref::map(iota({1, 3}), [](double v) { return 200 + v; });
  const Tensor ta = to_tensor(a, I32), tb = to_tensor(b, I32), tc = to_tensor(c, I32);
  EXPECT_TRUE(matches(ta.cat({tb, tc}), I32, ref::cat({a, b, c}, 0), kExact));
  const ref::Array d = ref::map(iota({2, 5}), [](double v) { return -v; });
  EXPECT_TRUE(matches(ta.cat({to_tensor(d, I32)}, 1), I32, ref::cat({a, d}, 1), kExact));
  EXPECT_TRUE(matches(ta.cat({to_tensor(d, I32), ta}, -1), I32, ref::cat({a, d, a}, 1), kExact));
  EXPECT_TRUE(matches(ta.cat({}), I32, a, kExact));
  // Views joined: a transposed and a flipped part.
  const ref::Array e = iota({3, 2});
  EXPECT_TRUE(matches(to_tensor(e, I32).transpose().cat({ta.flip(1)}, 0), I32,
                      ref::cat({ref::permute(e, {1, 0}), ref::flip(a, {1})}, 0), kExact));
}

TEST(TensorMovementJoin, StackAlongEachAxis) {
  const ref::Array a = iota({2, 3}), b = ref::map(a, [](double v) { return 50 + v; }),
                   c = ref::map(a, [](double v) { return -v; });
  const std::vector<Tensor> parts = {to_tensor(a, F32), to_tensor(b, F32), to_tensor(c, F32)};
  for (int axis : {0, 1, 2, -1}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    EXPECT_TRUE(matches(Tensor::stack(parts, axis), F32, ref::stack({a, b, c}, axis), kExact));
  }
}

// ---- errors: the type, and both shapes in the message

TEST(TensorMovementErrors, ImpossibleReshape) {
  const Tensor x = Tensor::zeros({2, 3});
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)x.reshape({4}); }, {"(2, 3)", "(4,)"}));
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)x.reshape({4, -1}); }, {"(2, 3)"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.reshape({-1, -1}); }, {"reshape", "(-1, -1)"}));
}

TEST(TensorMovementErrors, BinaryShapeMismatch) {
  const Tensor x = Tensor::zeros({2, 3}), y = Tensor::zeros({4});
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)(x + y); }, {"(2, 3)", "(4,)"}));
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)x.lt(y); }, {"(2, 3)", "(4,)"}));
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)x.maximum(y); }, {"(2, 3)", "(4,)"}));
  const Tensor cond = Tensor::zeros({5}, DType::bool_);
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)cond.where(x, 1.0); }, {"(5,)", "(2, 3)"}));
}

TEST(TensorMovementErrors, ExpandAndCatMismatch) {
  const Tensor x = Tensor::zeros({3, 2});
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)x.expand({3, 4}); }, {"(3, 2)", "(3, 4)"}));
  EXPECT_TRUE(throws_containing<ShapeError>([&] { (void)x.cat({Tensor::zeros({3, 3})}); }, {"(3, 2)", "(3, 3)"}));
  EXPECT_TRUE(
      throws_containing<ShapeError>([&] { (void)Tensor::stack({x, Tensor::zeros({2, 3})}); }, {"(3, 2)", "(2, 3)"}));
}

TEST(TensorMovementErrors, BadAxesAndArguments) {
  const Tensor x = Tensor::zeros({2, 3});
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.sum(2); }, {"2"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.sum(-3); }, {"-3"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.permute({0}); }, {"permute"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.permute({0, 0}); }, {"permute"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.flip(5); }, {"5"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.slice(1, 0, 3, 0); }, {"step"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.unsqueeze(4); }, {"4"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.shrink({{0, 3}, {0, 3}}); }, {"(2, 3)"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.pad({{1, 1}}); }, {"pad"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.argmax(2); }, {"2"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)x.repeat({2}); }, {"repeat"}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([] { (void)Tensor().add(Tensor::zeros({1})); }, {}));
  EXPECT_TRUE(throws_containing<InvalidArgument>([] { (void)Tensor().sum(); }, {}));
}

}  // namespace
}  // namespace hcq::optest
