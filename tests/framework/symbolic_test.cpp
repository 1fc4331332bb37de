// Symbolic simplification of index arithmetic (framework/ir/symbolic.cpp): bounds, constant folding with C
// semantics, identities, canonical sums, div/mod by constants, and the reshapes and permutes they exist for. Expected
// nodes are written out by hand with make_node (which does not simplify); the randomized test checks every rewrite
// against a small interpreter written here.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <unordered_map>
#include <vector>

#include "framework/ir/node.hpp"
#include "framework/ir/rewrite.hpp"
#include "framework/ir/symbolic.hpp"
#include "hcq/error.hpp"

namespace hcq::fw {
namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();

Node range(int64_t id, int64_t extent) { return make_node(Op::RANGE, kIndex, {}, {id, extent, 0}); }
Node c(int64_t v) { return index_const(v); }
Node raw(Op op, const Node& a, const Node& b) { return make_node(op, kIndex, {a, b}); }
Node raw(Op op, const Node& a, int64_t b) { return raw(op, a, c(b)); }
Node typed_const(DType t, int64_t v) { return make_node(Op::CONST, t, {}, {v}); }
Node boolean(bool v) { return typed_const(DType::bool_, v); }
Node cmp(Op op, const Node& a, const Node& b) { return make_node(op, DType::bool_, {a, b}); }

::testing::AssertionResult same(const Node& got, const Node& want) {
  if (got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got:\n" << to_string(got) << "want:\n" << to_string(want);
}

::testing::AssertionResult bounds(const Node& n, int64_t lo, int64_t hi) {
  if (n->vmin == lo && n->vmax == hi) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "bounds [" << n->vmin << ", " << n->vmax << "], want [" << lo << ", " << hi
                                       << "] for\n"
                                       << to_string(n);
}

// ---- what the lowering of a reshape does with the indices of contiguous shapes

// The indices of `shape` at a flat offset: (flat / stride_k) % shape_k.
std::vector<Node> unflatten(const Node& flat, const std::vector<int64_t>& shape) {
  std::vector<Node> idx(shape.size());
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = idx_mod(idx_div(flat, stride), shape[k]);
    stride *= shape[k];
  }
  return idx;
}

// The flat offset of indices into a contiguous `shape`.
Node flatten(const std::vector<Node>& idx, const std::vector<int64_t>& shape) {
  Node acc = c(0);
  int64_t stride = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    acc = idx_add(acc, idx_mul(idx[k], stride));
    stride *= shape[k];
  }
  return acc;
}

// ---------------------------------------------------------------------------------------------------------------

TEST(SymbolicBounds, ConstantsAndRangesAreExact) {
  EXPECT_TRUE(bounds(c(-7), -7, -7));
  EXPECT_TRUE(bounds(range(0, 10), 0, 9));
  EXPECT_TRUE(bounds(boolean(true), 1, 1));
  EXPECT_TRUE(bounds(typed_const(DType::uint32, -1), 4294967295, 4294967295));  // stored as C would store it
}

TEST(SymbolicBounds, ArithmeticUsesTheCornersOfIntervals) {
  const Node r0 = range(0, 5), r1 = range(1, 3);  // [0,4], [0,2]
  EXPECT_TRUE(bounds(raw(Op::ADD, r0, r1), 0, 6));
  EXPECT_TRUE(bounds(raw(Op::SUB, r0, r1), -2, 4));
  EXPECT_TRUE(bounds(make_node(Op::NEG, kIndex, {r0}), -4, 0));
  EXPECT_TRUE(bounds(raw(Op::MUL, r0, -3), -12, 0));
  // (r0 - 2) * (r1 - 1): [-2,2] x [-1,1], corners -2, 2, 2, -2
  EXPECT_TRUE(bounds(raw(Op::MUL, raw(Op::SUB, r0, 2), raw(Op::SUB, r1, 1)), -2, 2));
  EXPECT_TRUE(bounds(raw(Op::MAX, r0, raw(Op::ADD, r1, 3)), 3, 5));
  EXPECT_TRUE(bounds(raw(Op::MIN, r0, raw(Op::ADD, r1, 3)), 0, 4));
  EXPECT_TRUE(bounds(raw(Op::SHL, r0, raw(Op::ADD, r1, 1)), 0, 32));  // 4 << 3
  EXPECT_TRUE(bounds(raw(Op::SHR, raw(Op::ADD, r0, 8), r1), 2, 12));  // 8 >> 2 .. 12 >> 0
  EXPECT_TRUE(bounds(raw(Op::SHL, r0, 62), kI64Min, kI64Max));        // 4 << 62 overflows
  EXPECT_TRUE(bounds(raw(Op::AND, raw(Op::ADD, r0, 8), r1), 0, 2));
  EXPECT_TRUE(bounds(raw(Op::OR, raw(Op::ADD, r0, 8), r1), 8, 15));
}

TEST(SymbolicBounds, DivisionAndRemainder) {
  const Node r0 = range(0, 10), r1 = range(1, 3);                    // [0,9], [0,2]
  EXPECT_TRUE(bounds(raw(Op::IDIV, raw(Op::ADD, r0, 3), 4), 0, 3));  // 3/4 .. 12/4
  EXPECT_TRUE(bounds(raw(Op::MOD, r0, 4), 0, 3));
  EXPECT_TRUE(bounds(raw(Op::MOD, r0, 16), 0, 9));                            // one quotient: the remainder is r0
  EXPECT_TRUE(bounds(raw(Op::MOD, raw(Op::ADD, r0, 12), 8), 0, 7));           // 12..21 spans quotients 1 and 2
  EXPECT_TRUE(bounds(raw(Op::MOD, raw(Op::ADD, range(2, 6), 16), 8), 0, 5));  // 16..21: quotient 2 only
  // Negative numerators: C truncates toward zero, the remainder takes the numerator's sign.
  EXPECT_TRUE(bounds(raw(Op::IDIV, raw(Op::SUB, r0, 5), 2), -2, 2));  // -5/2 = -2 .. 4/2 = 2
  EXPECT_TRUE(bounds(raw(Op::MOD, raw(Op::SUB, r0, 5), 4), -3, 3));
  // A divisor range of one sign: the four corners; one that holds 0: unknown.
  EXPECT_TRUE(bounds(raw(Op::IDIV, r0, raw(Op::ADD, r1, 1)), 0, 9));
  EXPECT_TRUE(bounds(raw(Op::IDIV, raw(Op::ADD, r0, 6), raw(Op::ADD, r1, 2)), 1, 7));  // 6/4 .. 15/2
  EXPECT_TRUE(bounds(raw(Op::IDIV, r0, raw(Op::SUB, r1, 1)), kI64Min, kI64Max));
}

TEST(SymbolicBounds, WhereComparisonsAndBools) {
  const Node r0 = range(0, 10), r1 = range(1, 3);
  const Node lt = cmp(Op::CMPLT, r0, c(5));
  EXPECT_TRUE(bounds(lt, 0, 1));
  EXPECT_TRUE(bounds(make_node(Op::WHERE, kIndex, {lt, r1, raw(Op::ADD, r1, 20)}), 0, 22));  // union of branches
  EXPECT_TRUE(bounds(make_node(Op::WHERE, kIndex, {boolean(false), r1, raw(Op::ADD, r1, 20)}), 20, 22));
  EXPECT_TRUE(bounds(cmp(Op::CMPLT, r0, c(10)), 1, 1));
  EXPECT_TRUE(bounds(cmp(Op::CMPLT, r0, c(0)), 0, 0));
  EXPECT_TRUE(bounds(cmp(Op::CMPEQ, r0, c(12)), 0, 0));  // disjoint
  EXPECT_TRUE(bounds(cmp(Op::CMPNE, r0, c(12)), 1, 1));
  EXPECT_TRUE(bounds(cmp(Op::CMPEQ, r0, c(3)), 0, 1));
  const Node unknown = cmp(Op::CMPLT, r0, c(3));
  EXPECT_TRUE(bounds(make_node(Op::AND, DType::bool_, {unknown, boolean(false)}), 0, 0));
  EXPECT_TRUE(bounds(make_node(Op::AND, DType::bool_, {unknown, boolean(true)}), 0, 1));
  EXPECT_TRUE(bounds(make_node(Op::OR, DType::bool_, {unknown, boolean(true)}), 1, 1));
  EXPECT_TRUE(bounds(make_node(Op::XOR, DType::bool_, {boolean(true), boolean(true)}), 0, 0));
}

TEST(SymbolicBounds, CastsKeepTheValuesTheTargetHolds) {
  const Node r0 = range(0, 300);
  EXPECT_TRUE(bounds(make_node(Op::CAST, DType::int32, {r0}), 0, 299));
  EXPECT_TRUE(bounds(make_node(Op::CAST, DType::uint8, {r0}), 0, 255));  // 256.. wrap: anything a uint8 holds
  EXPECT_TRUE(bounds(make_node(Op::CAST, DType::bool_, {raw(Op::ADD, r0, 1)}), 1, 1));
  EXPECT_TRUE(bounds(make_node(Op::CAST, DType::int32, {const_node(DType::float32, 2.5)}), kI32Min, kI32Max));
}

TEST(SymbolicBounds, OverflowGivesTheWholeRangeOfTheDtype) {
  const Node r0 = range(0, 10);
  EXPECT_TRUE(bounds(raw(Op::MUL, r0, kI64Max / 4), kI64Min, kI64Max));
  EXPECT_TRUE(bounds(raw(Op::ADD, raw(Op::ADD, r0, kI64Max - 5), 0), kI64Min, kI64Max));
  EXPECT_TRUE(bounds(make_node(Op::NEG, kIndex, {raw(Op::SUB, r0, kI64Max)}), kI64Max - 9, kI64Max));
  EXPECT_TRUE(bounds(make_node(Op::NEG, kIndex, {raw(Op::ADD, r0, kI64Min)}), kI64Min, kI64Max));  // -INT64_MIN
  // int32 arithmetic wraps at 32 bits: bounds past them could be anything an int32 holds.
  const Node i32 = make_node(Op::CAST, DType::int32, {r0});
  EXPECT_TRUE(
      bounds(make_node(Op::ADD, DType::int32, {i32, typed_const(DType::int32, kI32Max - 5)}), kI32Min, kI32Max));
  EXPECT_TRUE(
      bounds(make_node(Op::ADD, DType::int32, {i32, typed_const(DType::int32, kI32Max - 9)}), kI32Max - 9, kI32Max));
}

TEST(SymbolicBounds, FloatsHaveNone) {
  const Node x = const_node(DType::float32, 3), y = const_node(DType::float32, 4);
  EXPECT_TRUE(bounds(make_node(Op::ADD, DType::float32, {x, y}), 0, 0));
  // Both sources read 0,0, which means nothing: the comparison stays undecided.
  EXPECT_TRUE(bounds(cmp(Op::CMPLT, x, y), 0, 1));
  EXPECT_TRUE(same(simplify(cmp(Op::CMPLT, x, y)), cmp(Op::CMPLT, x, y)));
}

// ---------------------------------------------------------------------------------------------------------------

TEST(SymbolicFold, IndexArithmetic) {
  EXPECT_TRUE(same(simplify(raw(Op::ADD, c(2), c(3))), c(5)));
  EXPECT_TRUE(same(simplify(raw(Op::SUB, c(2), c(9))), c(-7)));
  EXPECT_TRUE(same(simplify(raw(Op::MUL, c(-4), c(6))), c(-24)));
  EXPECT_TRUE(same(simplify(make_node(Op::NEG, kIndex, {c(8)})), c(-8)));
  EXPECT_TRUE(same(simplify(raw(Op::MAX, c(-1), c(-5))), c(-1)));
  EXPECT_TRUE(same(simplify(raw(Op::MIN, c(-1), c(-5))), c(-5)));
  EXPECT_TRUE(same(simplify(raw(Op::SHL, c(3), c(4))), c(48)));
  EXPECT_TRUE(same(simplify(raw(Op::SHR, c(-16), c(2))), c(-4)));  // arithmetic shift
  EXPECT_TRUE(same(simplify(raw(Op::AND, c(12), c(10))), c(8)));
  EXPECT_TRUE(same(simplify(raw(Op::OR, c(12), c(10))), c(14)));
  EXPECT_TRUE(same(simplify(raw(Op::XOR, c(12), c(10))), c(6)));
  // A nested expression folds bottom-up: (2 + 3) * (10 / 3) = 15.
  EXPECT_TRUE(same(simplify(raw(Op::MUL, raw(Op::ADD, c(2), c(3)), raw(Op::IDIV, c(10), c(3)))), c(15)));
}

TEST(SymbolicFold, TensorLevelConstantsAreLeftAlone) {
  // They carry their device, which a kernel-level constant would lose.
  const Node a = const_node(DType::int64, 2, "CPU"), b = const_node(DType::int64, 3, "CPU");
  const Node sum = make_node(Op::ADD, DType::int64, {a, b});
  EXPECT_TRUE(same(simplify(sum), sum));
  const Node lt = cmp(Op::CMPLT, a, b);
  EXPECT_TRUE(same(simplify(lt), lt));
}

TEST(SymbolicFold, DivisionTruncatesTowardZero) {
  EXPECT_TRUE(same(simplify(raw(Op::IDIV, c(-7), c(2))), c(-3)));
  EXPECT_TRUE(same(simplify(raw(Op::MOD, c(-7), c(2))), c(-1)));
  EXPECT_TRUE(same(simplify(raw(Op::IDIV, c(7), c(-2))), c(-3)));
  EXPECT_TRUE(same(simplify(raw(Op::MOD, c(7), c(-2))), c(1)));
  EXPECT_TRUE(same(simplify(raw(Op::IDIV, c(-7), c(-2))), c(3)));
  EXPECT_TRUE(same(simplify(raw(Op::MOD, c(-7), c(-2))), c(-1)));
}

TEST(SymbolicFold, WhatCLeavesUndefinedIsNotFolded) {
  for (Op op : {Op::IDIV, Op::MOD}) {
    const Node by_zero = raw(op, c(5), c(0));
    EXPECT_TRUE(same(simplify(by_zero), by_zero));
  }
  const Node overflow = raw(Op::IDIV, c(kI64Min), c(-1));
  EXPECT_TRUE(same(simplify(overflow), overflow));
  const Node overflow32 =
      make_node(Op::IDIV, DType::int32, {typed_const(DType::int32, kI32Min), typed_const(DType::int32, -1)});
  EXPECT_TRUE(same(simplify(overflow32), overflow32));
  // A remainder by -1 is 0 whatever the numerator (its magnitude is below 1): the bounds decide it, INT_MIN included.
  EXPECT_TRUE(same(simplify(raw(Op::MOD, range(0, 9), c(-1))), c(0)));
  const Node wide_shift = raw(Op::SHL, c(1), c(64));
  EXPECT_TRUE(same(simplify(wide_shift), wide_shift));
}

TEST(SymbolicFold, Int32AndUint32WrapAround) {
  auto i32 = [](int64_t v) { return typed_const(DType::int32, v); };
  auto u32 = [](int64_t v) { return typed_const(DType::uint32, v); };
  auto op32 = [](Op op, DType t, const Node& a, const Node& b) { return simplify(make_node(op, t, {a, b})); };
  EXPECT_TRUE(same(op32(Op::ADD, DType::int32, i32(kI32Max), i32(1)), i32(kI32Min)));
  EXPECT_TRUE(same(op32(Op::MUL, DType::int32, i32(65536), i32(65536)), i32(0)));
  EXPECT_TRUE(same(op32(Op::MUL, DType::int32, i32(65536), i32(32769)), i32(-2147418112)));  // 2^31 + 2^16 wraps
  EXPECT_TRUE(same(op32(Op::SUB, DType::uint32, u32(0), u32(1)), u32(4294967295)));
  EXPECT_TRUE(same(op32(Op::ADD, DType::uint32, u32(4294967295), u32(2)), u32(1)));
  // uint32 compares and divides as unsigned: 0xffffffff is the largest, not -1.
  EXPECT_TRUE(same(op32(Op::CMPLT, DType::bool_, u32(4294967295), u32(1)), boolean(false)));
  EXPECT_TRUE(same(op32(Op::IDIV, DType::uint32, u32(4294967295), u32(16)), u32(268435455)));
  EXPECT_TRUE(same(simplify(make_node(Op::NEG, DType::int32, {i32(kI32Min)})), i32(kI32Min)));
  EXPECT_TRUE(same(op32(Op::SHL, DType::int32, i32(1), i32(31)), i32(kI32Min)));
  // int8 arithmetic is done in int by C, then stored back: -128 / -1 = 128 stores as -128.
  EXPECT_TRUE(same(op32(Op::IDIV, DType::int8, typed_const(DType::int8, -128), typed_const(DType::int8, -1)),
                   typed_const(DType::int8, -128)));
  EXPECT_TRUE(same(simplify(make_node(Op::CAST, DType::uint8, {c(300)})), typed_const(DType::uint8, 44)));
  EXPECT_TRUE(same(simplify(make_node(Op::CAST, DType::uint32, {c(-1)})), u32(4294967295)));
  EXPECT_TRUE(same(simplify(make_node(Op::CAST, DType::int32, {c(kI64Max)})), i32(-1)));
}

TEST(SymbolicFold, Bools) {
  const Node t = boolean(true), f = boolean(false);
  auto b2 = [](Op op, const Node& a, const Node& b) { return simplify(make_node(op, DType::bool_, {a, b})); };
  EXPECT_TRUE(same(b2(Op::AND, t, f), f));
  EXPECT_TRUE(same(b2(Op::AND, t, t), t));
  EXPECT_TRUE(same(b2(Op::OR, f, f), f));
  EXPECT_TRUE(same(b2(Op::OR, f, t), t));
  EXPECT_TRUE(same(b2(Op::XOR, t, t), f));
  EXPECT_TRUE(same(b2(Op::XOR, t, f), t));
  EXPECT_TRUE(same(b2(Op::CMPLT, c(-3), c(2)), t));
  EXPECT_TRUE(same(b2(Op::CMPLT, c(2), c(2)), f));
  EXPECT_TRUE(same(b2(Op::CMPEQ, c(2), c(2)), t));
  EXPECT_TRUE(same(b2(Op::CMPNE, c(2), c(2)), f));
  EXPECT_TRUE(same(b2(Op::CMPLT, f, t), t));
  EXPECT_TRUE(same(b2(Op::ADD, t, t), t));  // 2 stored in a bool is 1
  EXPECT_TRUE(same(simplify(make_node(Op::CAST, DType::bool_, {c(-5)})), t));
  const Node r0 = range(0, 4), r1 = range(1, 4);
  EXPECT_TRUE(same(simplify(make_node(Op::WHERE, kIndex, {t, r0, r1})), r0));
  EXPECT_TRUE(same(simplify(make_node(Op::WHERE, kIndex, {f, r0, r1})), r1));
  EXPECT_TRUE(same(simplify(make_node(Op::WHERE, kIndex, {b2(Op::CMPEQ, c(1), c(1)), c(7), r1})), c(7)));
}

// ---------------------------------------------------------------------------------------------------------------

TEST(SymbolicIdentities, ArithmeticWithNeutralAndAbsorbingValues) {
  const Node x = range(0, 7);
  EXPECT_TRUE(same(simplify(raw(Op::ADD, x, 0)), x));
  EXPECT_TRUE(same(simplify(raw(Op::ADD, c(0), x)), x));
  EXPECT_TRUE(same(simplify(raw(Op::SUB, x, 0)), x));
  EXPECT_TRUE(same(simplify(raw(Op::SUB, x, x)), c(0)));
  EXPECT_TRUE(same(simplify(raw(Op::MUL, x, 1)), x));
  EXPECT_TRUE(same(simplify(raw(Op::MUL, c(1), x)), x));
  EXPECT_TRUE(same(simplify(raw(Op::MUL, x, 0)), c(0)));
  EXPECT_TRUE(same(simplify(raw(Op::IDIV, x, 1)), x));
  EXPECT_TRUE(same(simplify(raw(Op::MOD, x, 1)), c(0)));
  // The same identities on int32 values, which are not read as canonical sums.
  const Node y = make_node(Op::LOAD, DType::int32, {make_node(Op::PARAM, DType::int32, {}, {0, 8}, 0, "CPU"), x});
  auto i32 = [](int64_t v) { return typed_const(DType::int32, v); };
  auto op32 = [](Op op, const Node& a, const Node& b) { return simplify(make_node(op, DType::int32, {a, b})); };
  EXPECT_TRUE(same(op32(Op::ADD, y, i32(0)), y));
  EXPECT_TRUE(same(op32(Op::SUB, y, y), i32(0)));
  EXPECT_TRUE(same(op32(Op::MUL, i32(0), y), i32(0)));
  EXPECT_TRUE(same(op32(Op::MUL, y, i32(1)), y));
  EXPECT_TRUE(same(op32(Op::IDIV, y, i32(1)), y));
  EXPECT_TRUE(same(op32(Op::MOD, y, i32(1)), i32(0)));
  EXPECT_TRUE(same(op32(Op::XOR, y, y), i32(0)));
  EXPECT_TRUE(same(op32(Op::OR, y, i32(0)), y));
  EXPECT_TRUE(same(op32(Op::AND, y, i32(0)), i32(0)));
}

TEST(SymbolicIdentities, BoolsAndWhere) {
  const Node x = cmp(Op::CMPLT, range(0, 7), c(3));
  auto b2 = [](Op op, const Node& a, const Node& b) { return simplify(make_node(op, DType::bool_, {a, b})); };
  EXPECT_TRUE(same(b2(Op::AND, x, boolean(true)), x));
  EXPECT_TRUE(same(b2(Op::AND, boolean(false), x), boolean(false)));
  EXPECT_TRUE(same(b2(Op::OR, x, boolean(true)), boolean(true)));
  EXPECT_TRUE(same(b2(Op::OR, boolean(false), x), x));
  EXPECT_TRUE(same(b2(Op::AND, x, x), x));
  const Node a = range(1, 5), b = range(2, 5);
  EXPECT_TRUE(same(simplify(make_node(Op::WHERE, kIndex, {x, a, a})), a));
  const Node undecided = make_node(Op::WHERE, kIndex, {x, a, b});
  EXPECT_TRUE(same(simplify(undecided), undecided));
  // A float WHERE whose condition is a constant picks its branch too.
  const Node fa = const_node(DType::float32, 1.5), fb = const_node(DType::float32, 2.5);
  EXPECT_TRUE(same(simplify(make_node(Op::WHERE, DType::float32, {boolean(true), fa, fb})), fa));
}

// ---------------------------------------------------------------------------------------------------------------

TEST(SymbolicSum, TermsInCanonicalOrder) {
  const Node r0 = range(0, 4), r1 = range(1, 4), r2 = range(2, 4);
  // Equal coefficients: by range id.
  EXPECT_TRUE(same(idx_add(r1, r0), raw(Op::ADD, r0, r1)));
  EXPECT_TRUE(same(idx_add(idx_add(r2, r0), r1), raw(Op::ADD, raw(Op::ADD, r0, r1), r2)));
  // Descending coefficients, the constant last.
  const Node want = raw(Op::ADD, raw(Op::ADD, raw(Op::MUL, r1, 4), r0), 3);
  EXPECT_TRUE(same(simplify(raw(Op::ADD, raw(Op::ADD, c(3), r0), raw(Op::MUL, c(4), r1))), want));
  EXPECT_TRUE(same(simplify(raw(Op::ADD, r0, raw(Op::ADD, raw(Op::MUL, r1, 4), c(3)))), want));
  // A canonical sum is its own simplification, inner ADDs included.
  EXPECT_TRUE(same(simplify(want), want));
  // Negative coefficients come after positive ones, as products by a negative constant.
  EXPECT_TRUE(same(simplify(raw(Op::SUB, r0, r1)), raw(Op::ADD, r0, raw(Op::MUL, r1, -1))));
  EXPECT_TRUE(same(simplify(make_node(Op::NEG, kIndex, {r0})), raw(Op::MUL, r0, -1)));
}

TEST(SymbolicSum, LikeTermsCombine) {
  const Node r0 = range(0, 4), r1 = range(1, 4);
  // (r0 + 5) + (r1*2 + r0) - 3 = r0*2 + r1*2 + 2
  const Node got = simplify(raw(Op::SUB, raw(Op::ADD, raw(Op::ADD, r0, 5), raw(Op::ADD, raw(Op::MUL, r1, 2), r0)), 3));
  EXPECT_TRUE(same(got, raw(Op::ADD, raw(Op::ADD, raw(Op::MUL, r0, 2), raw(Op::MUL, r1, 2)), 2)));
  // (r0*3 + r1) - r0*3 = r1
  EXPECT_TRUE(same(simplify(raw(Op::SUB, raw(Op::ADD, raw(Op::MUL, r0, 3), r1), raw(Op::MUL, r0, 3))), r1));
  // Products by constants distribute and multiply: ((r0 + 2) * 3) * 2 = r0*6 + 12
  EXPECT_TRUE(
      same(simplify(raw(Op::MUL, raw(Op::MUL, raw(Op::ADD, r0, 2), 3), 2)), raw(Op::ADD, raw(Op::MUL, r0, 6), 12)));
  EXPECT_TRUE(same(idx_mul(c(5), r1), raw(Op::MUL, r1, 5)));
  // A product of two ranges is one term whichever way it was written.
  EXPECT_TRUE(same(idx_add(idx_mul(r1, r0), idx_mul(r0, r1)), raw(Op::MUL, raw(Op::MUL, r0, r1), 2)));
}

// ---------------------------------------------------------------------------------------------------------------

TEST(SymbolicDivMod, ProductsByTheDivisor) {
  const Node r0 = range(0, 9);
  EXPECT_TRUE(same(idx_div(idx_mul(r0, 4), 4), r0));
  EXPECT_TRUE(same(idx_mod(idx_mul(r0, 4), 4), c(0)));
  EXPECT_TRUE(same(idx_div(idx_mul(r0, 6), 3), raw(Op::MUL, r0, 2)));
  // (r0*4) % 6 = ((r0*2) % 3) * 2: the common factor 2 cancels
  EXPECT_TRUE(same(idx_mod(idx_mul(r0, 4), 6), raw(Op::MUL, raw(Op::MOD, raw(Op::MUL, r0, 2), 3), 2)));
  EXPECT_TRUE(same(idx_div(idx_mul(r0, 4), 6), raw(Op::IDIV, raw(Op::MUL, r0, 2), 3)));
}

TEST(SymbolicDivMod, BelowTheDivisor) {
  const Node r0 = range(0, 8);
  EXPECT_TRUE(same(idx_div(r0, 8), c(0)));
  EXPECT_TRUE(same(idx_mod(r0, 8), r0));
  EXPECT_TRUE(same(idx_mod(r0, 100), r0));
  const Node r0_mod_5 = raw(Op::MOD, r0, 5);
  EXPECT_TRUE(same(idx_mod(r0, 5), r0_mod_5));
  EXPECT_TRUE(same(idx_div(r0, 5), raw(Op::IDIV, r0, 5)));
}

TEST(SymbolicDivMod, NestedDivisionsAndRemainders) {
  const Node r0 = range(0, 100);
  EXPECT_TRUE(same(idx_div(idx_div(r0, 2), 3), raw(Op::IDIV, r0, 6)));
  EXPECT_TRUE(same(idx_mod(idx_mod(r0, 12), 4), raw(Op::MOD, r0, 4)));
  EXPECT_TRUE(same(idx_div(idx_mod(r0, 12), 4), raw(Op::MOD, raw(Op::IDIV, r0, 4), 3)));
  // 12 is not a multiple of 5: nothing to do
  EXPECT_TRUE(same(idx_mod(idx_mod(r0, 12), 5), raw(Op::MOD, raw(Op::MOD, r0, 12), 5)));
}

TEST(SymbolicDivMod, SumsSplitAtTheDivisor) {
  const Node r0 = range(0, 10), r1 = range(1, 5);  // r1 in [0,4]
  // r0*8 + r1 + 3: the rest r1 + 3 <= 7 stays below 8
  const Node x = idx_add(idx_add(idx_mul(r0, 8), r1), c(3));
  EXPECT_TRUE(same(idx_div(x, 8), r0));
  EXPECT_TRUE(same(idx_mod(x, 8), raw(Op::ADD, r1, 3)));
  // r0*8 + r1 + 5: the rest r1 + 5 reaches 9
  const Node y = idx_add(idx_add(idx_mul(r0, 8), r1), c(5));
  EXPECT_TRUE(same(idx_div(y, 8), raw(Op::ADD, r0, raw(Op::IDIV, raw(Op::ADD, r1, 5), 8))));
  EXPECT_TRUE(same(idx_mod(y, 8), raw(Op::MOD, raw(Op::ADD, r1, 5), 8)));
  // The constant splits by floor: r0*8 + r1 + 19 = 8*(r0 + 2) + (r1 + 3)
  const Node z = idx_add(idx_add(idx_mul(r0, 8), r1), c(19));
  EXPECT_TRUE(same(idx_div(z, 8), raw(Op::ADD, r0, 2)));
  EXPECT_TRUE(same(idx_mod(z, 8), raw(Op::ADD, r1, 3)));
  // A factor of the divisor: r0*6 + r2 with r2 < 6 is 6*r0 + rest, so / 12 is r0 / 2
  const Node r2 = range(2, 6);
  const Node w = idx_add(idx_mul(r0, 6), r2);
  EXPECT_TRUE(same(idx_div(w, 12), raw(Op::IDIV, r0, 2)));
  EXPECT_TRUE(same(idx_mod(w, 12), raw(Op::ADD, raw(Op::MUL, raw(Op::MOD, r0, 2), 6), r2)));
}

// A sliding window's index: (19 * w + x) % 18 over w < 3, x < 16 is w + x (19 = 18 + 1, and w + x < 18), and the
// division is w; with x < 17 the rest may reach 18, so the mod stays (of the smaller sum).
TEST(SymbolicDivMod, CoefficientsAboveTheDivisorSplit) {
  const Node w = range(0, 3), x = range(1, 16);
  const Node i = idx_add(idx_mul(w, 19), x);
  EXPECT_TRUE(same(idx_mod(i, 18), raw(Op::ADD, w, x)));
  EXPECT_TRUE(same(idx_div(i, 18), w));
  const Node x17 = range(2, 17);
  const Node j = idx_add(idx_mul(w, 19), x17);
  EXPECT_TRUE(same(idx_mod(j, 18), raw(Op::MOD, raw(Op::ADD, w, x17), 18)));
}

TEST(SymbolicDivMod, MaybeNegativeNumeratorsAreLeftAlone) {
  const Node r0 = range(0, 10);
  const Node x = idx_add(r0, c(-3));  // [-3, 6]
  EXPECT_TRUE(same(idx_div(x, 2), raw(Op::IDIV, raw(Op::ADD, r0, -3), 2)));
  EXPECT_TRUE(same(idx_mod(x, 2), raw(Op::MOD, raw(Op::ADD, r0, -3), 2)));
  // (r0*4 - 3) / 4 would be r0 - 1 with floor division, but truncation makes it 0 at r0 = 0.
  const Node y = idx_add(idx_mul(r0, 4), c(-3));
  EXPECT_TRUE(same(idx_div(y, 4), raw(Op::IDIV, y, 4)));
  // 2*r0 - r1 + 2 is never negative, but its rest past the factor 2 of 4, -r1, can be: no split by 2 (at r0 = 1,
  // r1 = 1 the value is 3, 3 / 4 = 0, while (r0 + 1) / 2 would be 1).
  const Node r1 = range(1, 2);
  const Node z = idx_add(idx_add(idx_mul(r0, 2), idx_mul(r1, -1)), c(2));
  EXPECT_TRUE(same(z, raw(Op::ADD, raw(Op::ADD, raw(Op::MUL, r0, 2), raw(Op::MUL, r1, -1)), 2)));
  EXPECT_TRUE(same(idx_div(z, 4), raw(Op::IDIV, z, 4)));
  EXPECT_TRUE(same(idx_mod(z, 4), raw(Op::MOD, z, 4)));
  // Nested division is exact for any sign: (x / 2) / 3 = x / 6
  EXPECT_TRUE(same(idx_div(idx_div(x, 2), 3), raw(Op::IDIV, raw(Op::ADD, r0, -3), 6)));
}

TEST(SymbolicDivMod, QuotientTimesDivisorPlusRemainderIsTheNumerator) {
  const Node r0 = range(0, 50), r1 = range(1, 7);
  // With any common coefficient k: k*c*(x/c) + k*(x%c) = k*x, here k = 3, c = 4.
  const Node x = idx_add(idx_mul(r0, 5), r1);
  const Node got = idx_add(idx_mul(idx_div(x, 4), 12), idx_mul(idx_mod(x, 4), 3));
  EXPECT_TRUE(same(got, raw(Op::ADD, raw(Op::MUL, r0, 15), raw(Op::MUL, r1, 3))));
  // The pair among other terms: r1 + (r0/4)*4 + 7 + r0%4 = r0 + r1 + 7
  const Node sum = idx_add(idx_add(idx_add(r1, idx_mul(idx_div(r0, 4), 4)), c(7)), idx_mod(r0, 4));
  EXPECT_TRUE(same(sum, raw(Op::ADD, raw(Op::ADD, r0, r1), 7)));
  // Coefficients that do not match stay: (r0/4)*4 + (r0%4)*2
  const Node mismatched = idx_add(idx_mul(idx_div(r0, 4), 4), idx_mul(idx_mod(r0, 4), 2));
  EXPECT_TRUE(
      same(mismatched, raw(Op::ADD, raw(Op::MUL, raw(Op::IDIV, r0, 4), 4), raw(Op::MUL, raw(Op::MOD, r0, 4), 2))));
}

// ---------------------------------------------------------------------------------------------------------------
// Movement ops as index arithmetic: what a reshape or a permute of a contiguous buffer must come back to.

TEST(SymbolicReshape, TwoByThreeToSixIsTheFlatIndex) {
  const Node r0 = range(0, 6);
  // Output index r0 of the (6) view; the (2,3) buffer's indices (r0/3, r0%3); its offset (r0/3)*3 + r0%3.
  const Node offset = flatten(unflatten(r0, {2, 3}), {2, 3});
  EXPECT_EQ(offset.get(), r0.get()) << to_string(offset);
  EXPECT_TRUE(same(offset, r0));
}

TEST(SymbolicReshape, SixToTwoByThree) {
  const Node i = range(0, 2), j = range(1, 3);
  const Node flat = idx_add(idx_mul(i, 3), j);
  const Node want = raw(Op::ADD, raw(Op::MUL, i, 3), j);
  EXPECT_TRUE(same(flat, want));
  EXPECT_TRUE(same(idx_mod(idx_div(flat, 1), 6), want));
  EXPECT_TRUE(same(idx_div(flat, 3), i));
  EXPECT_TRUE(same(idx_mod(flat, 3), j));
}

TEST(SymbolicReshape, FourBySixThroughTwoByTwoBySix) {
  // A (4,6) buffer viewed as (2,2,6), viewed as (24): the offset at r is r.
  const Node r = range(0, 24);
  const Node flat_226 = flatten(unflatten(r, {2, 2, 6}), {2, 2, 6});
  EXPECT_TRUE(same(flat_226, r));
  EXPECT_TRUE(same(flatten(unflatten(flat_226, {4, 6}), {4, 6}), r));
  // Unsimplified at each step until the end, the same: the simplifier meets (r/12)*12 + ((r/6)%2)*6 + r%6.
  const Node steps =
      raw(Op::ADD,
          raw(Op::ADD, raw(Op::MUL, raw(Op::IDIV, r, 12), 12), raw(Op::MUL, raw(Op::MOD, raw(Op::IDIV, r, 6), 2), 6)),
          raw(Op::MOD, r, 6));
  EXPECT_TRUE(same(simplify(steps), r));
  // A (24) buffer viewed as (2,2,6), viewed as (4,6): the offset at (i, j) is i*6 + j.
  const Node i = range(1, 4), j = range(2, 6);
  const Node flat_46 = flatten({i, j}, {4, 6});
  const Node offset = flatten(unflatten(flat_46, {2, 2, 6}), {2, 2, 6});
  EXPECT_TRUE(same(offset, raw(Op::ADD, raw(Op::MUL, i, 6), j)));
  // And the (2,2,6) indices of (i, j) themselves: (i/2, i%2, j).
  const std::vector<Node> idx = unflatten(flat_46, {2, 2, 6});
  EXPECT_TRUE(same(idx[0], raw(Op::IDIV, i, 2)));
  EXPECT_TRUE(same(idx[1], raw(Op::MOD, i, 2)));
  EXPECT_TRUE(same(idx[2], j));
}

TEST(SymbolicReshape, FourDimensionsThroughSixByTwentyAndBack) {
  const std::vector<int64_t> shape4 = {2, 3, 4, 5}, shape2 = {6, 20};
  // A (2,3,4,5) buffer viewed as (6,20), then (120): offset r.
  const Node r = range(0, 120);
  const Node via_620 = flatten(unflatten(r, shape2), shape2);
  EXPECT_TRUE(same(via_620, r));
  EXPECT_TRUE(same(flatten(unflatten(via_620, shape4), shape4), r));
  // A (120) buffer viewed as (6,20), then (2,3,4,5): offset 60*i0 + 20*i1 + 5*i2 + i3.
  const Node i0 = range(0, 2), i1 = range(1, 3), i2 = range(2, 4), i3 = range(3, 5);
  const Node flat = flatten({i0, i1, i2, i3}, shape4);
  const Node want =
      raw(Op::ADD, raw(Op::ADD, raw(Op::ADD, raw(Op::MUL, i0, 60), raw(Op::MUL, i1, 20)), raw(Op::MUL, i2, 5)), i3);
  EXPECT_TRUE(same(flat, want));
  EXPECT_TRUE(same(flatten(unflatten(flat, shape2), shape2), want));
  // (6,20) indices of it: (3*i0 + i1, 5*i2 + i3), no division left.
  const std::vector<Node> idx = unflatten(flat, shape2);
  EXPECT_TRUE(same(idx[0], raw(Op::ADD, raw(Op::MUL, i0, 3), i1)));
  EXPECT_TRUE(same(idx[1], raw(Op::ADD, raw(Op::MUL, i2, 5), i3)));
}

TEST(SymbolicReshape, PermuteOfThreeByFiveIsStridedIndexing) {
  // A (3,5) contiguous buffer permuted to (5,3): output (i, j) reads element (j, i) at j*5 + i. Through a reshape to
  // (15) and back to (3,5) first, the index is still that sum of two terms, with no division or remainder left.
  const Node i = range(0, 5), j = range(1, 3);
  const Node offset = flatten(unflatten(flatten({j, i}, {3, 5}), {15}), {15});
  const Node via_reshape = flatten(unflatten(offset, {3, 5}), {3, 5});
  const Node want = raw(Op::ADD, raw(Op::MUL, j, 5), i);
  EXPECT_TRUE(same(offset, want));
  EXPECT_TRUE(same(via_reshape, want));
  for (const NodeData* n : toposort({via_reshape}))
    EXPECT_TRUE(n->op != Op::IDIV && n->op != Op::MOD) << to_string(via_reshape);
}

// ---------------------------------------------------------------------------------------------------------------

TEST(SymbolicCompare, DecidedByBounds) {
  const Node r0 = range(0, 5);
  EXPECT_TRUE(same(idx_lt(r0, 5), boolean(true)));
  EXPECT_TRUE(same(idx_lt(r0, 0), boolean(false)));
  EXPECT_TRUE(same(idx_lt(r0, 3), cmp(Op::CMPLT, r0, c(3))));
  EXPECT_TRUE(same(simplify(cmp(Op::CMPEQ, r0, c(7))), boolean(false)));
  EXPECT_TRUE(same(simplify(cmp(Op::CMPNE, r0, c(-1))), boolean(true)));
  EXPECT_TRUE(same(simplify(cmp(Op::CMPLT, idx_add(r0, c(10)), r0)), boolean(false)));
  EXPECT_TRUE(same(idx_ge(r0, 0), boolean(true)));
  EXPECT_TRUE(same(idx_ge(r0, 5), boolean(false)));
  EXPECT_TRUE(same(idx_ge(r0, 2), make_node(Op::XOR, DType::bool_, {cmp(Op::CMPLT, r0, c(2)), boolean(true)})));
  // A constant added to the left moves to the right: r0 + 2 < 5 is r0 < 3 (padding's validity tests).
  EXPECT_TRUE(same(idx_lt(idx_add(r0, c(2)), 5), cmp(Op::CMPLT, r0, c(3))));
  // Validity of a pad: both tests hold everywhere but at the edges.
  const Node valid = bool_and(idx_ge(r0, 1), idx_lt(r0, 4));
  EXPECT_TRUE(same(valid, make_node(Op::AND, DType::bool_,
                                    {make_node(Op::XOR, DType::bool_, {cmp(Op::CMPLT, r0, c(1)), boolean(true)}),
                                     cmp(Op::CMPLT, r0, c(4))})));
  EXPECT_TRUE(same(bool_and(idx_ge(r0, 0), idx_lt(r0, 5)), boolean(true)));
}

TEST(SymbolicRewrite, RulesThatUndoEachOtherThrow) {
  // x * 2 -> x + x and x + x -> x * 2: no fixed point.
  RuleSet rules;
  rules.on(Op::MUL, [](const Node& n) { return make_node(Op::ADD, kIndex, {n->src[0], n->src[0]}); });
  rules.on(Op::ADD, [](const Node& n) { return n->src[0] == n->src[1] ? raw(Op::MUL, n->src[0], 2) : nullptr; });
  const Node x = raw(Op::MUL, range(0, 4), 2);
  try {
    rewrite(x, rules);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "rewrite: no fixed point after 10000 rewrites of a MUL node (two rules undo each other)");
  }
  // The symbolic rules reach their fixed point on the same node.
  EXPECT_TRUE(same(simplify(x), x));
}

TEST(SymbolicBuilders, DivisorsMustBePositive) {
  const Node r0 = range(0, 4);
  try {
    idx_div(r0, 0);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "idx_div: the divisor must be positive, got 0");
  }
  try {
    idx_mod(r0, -3);
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "idx_mod: the divisor must be positive, got -3");
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The safety net: random index expressions, simplified, must keep their value at every point of their ranges, and
// every node's value must lie within its bounds.

using Values = std::unordered_map<const NodeData*, int64_t>;

// The value of every node of `root` at one point (range id -> value), with C semantics in int64.
Values evaluate(const Node& root, const std::vector<int64_t>& point) {
  Values v;
  for (const NodeData* n : toposort({root})) {
    auto at = [&](size_t k) { return v.at(n->src[k].get()); };
    int64_t out = 0;
    switch (n->op) {
      case Op::CONST: out = n->i[0]; break;
      case Op::RANGE: out = point.at(static_cast<size_t>(n->i[0])); break;
      case Op::ADD: out = at(0) + at(1); break;
      case Op::SUB: out = at(0) - at(1); break;
      case Op::MUL: out = at(0) * at(1); break;
      case Op::NEG: out = -at(0); break;
      case Op::IDIV: out = at(0) / at(1); break;
      case Op::MOD: out = at(0) % at(1); break;
      case Op::MAX: out = std::max(at(0), at(1)); break;
      case Op::MIN: out = std::min(at(0), at(1)); break;
      case Op::CMPLT: out = at(0) < at(1); break;
      case Op::CMPEQ: out = at(0) == at(1); break;
      case Op::CMPNE: out = at(0) != at(1); break;
      case Op::AND: out = at(0) & at(1); break;
      case Op::OR: out = at(0) | at(1); break;
      case Op::XOR: out = at(0) ^ at(1); break;
      case Op::WHERE: out = at(0) ? at(1) : at(2); break;
      default: ADD_FAILURE() << "the test interpreter has no " << op_name(n->op); break;
    }
    v[n] = out;
  }
  return v;
}

class RandomIndex {
 public:
  explicit RandomIndex(uint64_t seed) : rng_(seed) {}

  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

  // 2 or 3 ranges of small extents.
  std::vector<Node> ranges() {
    std::vector<Node> r;
    const int64_t n = pick(2, 3);
    for (int64_t k = 0; k < n; ++k) r.push_back(range(k, pick(1, 7)));
    return r;
  }

  // Built raw (make_node), so the rules meet every shape, mostly non-negative like real indices.
  Node expr(const std::vector<Node>& r, int depth) {
    if (depth == 0 || pick(0, 5) == 0) return affine(r);
    switch (pick(0, 10)) {
      case 0: return raw(Op::ADD, expr(r, depth - 1), expr(r, depth - 1));
      case 1: return raw(Op::MUL, expr(r, depth - 1), pick(-1, 6));
      case 2:
      case 3: return raw(Op::IDIV, expr(r, depth - 1), pick(1, 8));
      case 4:
      case 5: return raw(Op::MOD, expr(r, depth - 1), pick(1, 8));
      case 6: {  // a reshape's round trip: (x / c) * c + x % c
        const Node x = expr(r, depth - 1);
        const int64_t d = pick(1, 8);
        return raw(Op::ADD, raw(Op::MUL, raw(Op::IDIV, x, d), d), raw(Op::MOD, x, d));
      }
      case 7: {  // one index of an unflatten: (x / a) % b, or (x % (a * b)) / a
        const Node x = expr(r, depth - 1);
        const int64_t a = pick(1, 6), b = pick(1, 6);
        return pick(0, 1) ? raw(Op::MOD, raw(Op::IDIV, x, a), b) : raw(Op::IDIV, raw(Op::MOD, x, a * b), a);
      }
      case 8: return raw(Op::SUB, expr(r, depth - 1), expr(r, depth - 1));
      case 9: {
        const Node cond = cmp(Op::CMPLT, expr(r, depth - 1), c(pick(-2, 20)));
        return make_node(Op::WHERE, kIndex, {cond, expr(r, depth - 1), expr(r, depth - 1)});
      }
      default: return raw(pick(0, 1) ? Op::MAX : Op::MIN, expr(r, depth - 1), expr(r, depth - 1));
    }
  }

 private:
  Node affine(const std::vector<Node>& r) {
    Node acc = c(pick(0, 2) == 0 ? pick(-4, 30) : 0);
    for (const Node& x : r) {
      if (pick(0, 3) == 0) continue;
      const int64_t coef = pick(0, 3) == 0 ? pick(-3, -1) : pick(1, 12);
      acc = raw(Op::ADD, acc, raw(Op::MUL, x, coef));
    }
    return acc;
  }

  std::mt19937_64 rng_;
};

// The same expression rebuilt bottom-up through the idx_* builders, as the lowering builds indices.
Node rebuild_with_builders(const Node& n) {
  if (n->src.empty()) return n;
  std::vector<Node> src;
  for (const Node& s : n->src) src.push_back(rebuild_with_builders(s));
  const bool const_rhs = src.size() == 2 && src[1]->op == Op::CONST;
  const int64_t rhs = const_rhs ? src[1]->i[0] : 0;
  switch (n->op) {
    case Op::ADD: return idx_add(src[0], src[1]);
    case Op::MUL: return idx_mul(src[0], src[1]);
    case Op::IDIV:
      if (const_rhs && rhs > 0) return idx_div(src[0], rhs);
      break;
    case Op::MOD:
      if (const_rhs && rhs > 0) return idx_mod(src[0], rhs);
      break;
    case Op::CMPLT:
      if (const_rhs) return idx_lt(src[0], rhs);
      break;
    default: break;
  }
  return simplify(make_node(n->op, n->dtype, src));
}

::testing::AssertionResult keeps_values(const Node& original, const Node& simplified, const std::vector<Node>& r) {
  std::vector<int64_t> point(r.size(), 0);
  for (;;) {
    const Values before = evaluate(original, point), after = evaluate(simplified, point);
    std::string where = "at (";
    for (size_t k = 0; k < point.size(); ++k) where += (k ? ", " : "") + std::to_string(point[k]);
    where += ")";
    if (before.at(original.get()) != after.at(simplified.get()))
      return ::testing::AssertionFailure() << where << " the original is " << before.at(original.get())
                                           << ", the simplified " << after.at(simplified.get()) << "\noriginal:\n"
                                           << to_string(original) << "simplified:\n"
                                           << to_string(simplified);
    for (const Values* vals : {&before, &after})
      for (auto [n, value] : *vals)
        if (value < n->vmin || value > n->vmax)
          return ::testing::AssertionFailure()
                 << where << " a " << op_name(n->op) << " node is " << value << ", outside its bounds [" << n->vmin
                 << ", " << n->vmax << "]\noriginal:\n"
                 << to_string(original) << "simplified:\n"
                 << to_string(simplified);
    size_t k = 0;
    while (k < r.size() && ++point[k] == r[k]->i[1]) point[k++] = 0;
    if (k == r.size()) return ::testing::AssertionSuccess();
  }
}

TEST(SymbolicProperty, RandomIndexExpressionsKeepTheirValues) {
  RandomIndex gen(20240613);
  for (int trial = 0; trial < 1500; ++trial) {
    const std::vector<Node> r = gen.ranges();
    const Node original = gen.expr(r, static_cast<int>(gen.pick(1, 4)));
    const Node simplified = simplify(original);
    ASSERT_TRUE(keeps_values(original, simplified, r)) << "trial " << trial;
    ASSERT_TRUE(same(simplify(simplified), simplified)) << "trial " << trial << ": not a fixed point";
    const Node built = rebuild_with_builders(original);
    ASSERT_TRUE(keeps_values(original, built, r)) << "trial " << trial << " (builders)";
  }
}

// simplify skips a subgraph an earlier simplify returned (NodeData::simplified). Built bottom-up, one simplify per
// new node as the lowering builds indices, every result must be the one the same rules give walking everything (a
// copy of the rules that marks nothing and skips nothing), and each result is marked.
Node rebuild_one_node_at_a_time(const Node& n, const std::function<Node(const Node&)>& simplifier) {
  if (n->src.empty()) return simplifier(n);
  std::vector<Node> src;
  for (const Node& s : n->src) src.push_back(rebuild_one_node_at_a_time(s, simplifier));
  return simplifier(make_node(n->op, n->dtype, src));
}

TEST(SymbolicProperty, SkippingSimplifiedSubgraphsChangesNoResult) {
  RuleSet walk_all = symbolic_rules();
  walk_all.mark_fixed_points(false);
  RandomIndex gen(99);
  for (int trial = 0; trial < 1500; ++trial) {
    const std::vector<Node> r = gen.ranges();
    const Node original = gen.expr(r, static_cast<int>(gen.pick(1, 4)));
    const Node skipping = rebuild_one_node_at_a_time(original, [](const Node& n) { return simplify(n); });
    const Node walking = rebuild_one_node_at_a_time(original, [&](const Node& n) { return rewrite(n, walk_all); });
    ASSERT_TRUE(same(skipping, walking)) << "trial " << trial;
    EXPECT_TRUE(skipping->simplified.load()) << "trial " << trial;
  }
}

// The reshape round trips of random contiguous shapes come back to the flat index exactly.
TEST(SymbolicProperty, RandomReshapeRoundTripsAreTheFlatIndex) {
  RandomIndex gen(7);
  for (int trial = 0; trial < 200; ++trial) {
    auto random_shape = [&](int64_t total) {
      std::vector<int64_t> shape;
      for (int64_t d = 2; d <= total; ++d)
        while (total % d == 0 && gen.pick(0, 2) != 0) {
          shape.push_back(d);
          total /= d;
        }
      if (total > 1) shape.push_back(total);
      return shape;
    };
    const int64_t total = std::vector<int64_t>{6, 12, 24, 30, 36, 60, 120}[static_cast<size_t>(gen.pick(0, 6))];
    const Node r = range(0, total);
    Node offset = r;
    for (int views = static_cast<int>(gen.pick(1, 3)); views-- > 0;) {
      const std::vector<int64_t> shape = random_shape(total);
      offset = flatten(unflatten(offset, shape), shape);
    }
    ASSERT_TRUE(same(offset, r)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace hcq::fw
