// Dtypes: the facts (names, sizes, kinds), the promotion table written out by hand from dtype.hpp's rule and held
// against promote_types and against the dtype a binary op really produces, casts between every pair of dtypes,
// bitcasts, the host half types' conversions, and the dtype errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/dtype.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType B = DType::bool_, I8 = DType::int8, U8 = DType::uint8, I32 = DType::int32, U32 = DType::uint32,
                I64 = DType::int64, F16 = DType::float16, BF16 = DType::bfloat16, F32 = DType::float32;

// Rows and columns in kAllDtypes' order. A float beats an integer; the wider beats the narrower; float16 with
// bfloat16 is float32; a signed with an unsigned integer at least as wide is the next wider signed type (uint8 with
// int8 is int32, there is no int16; uint32 with int8 or int32 is int64).
// clang-format off
const DType kPromotion[9][9] = {
    //         bool  int8  uint8 int32 uint32 int64 f16   bf16  f32
    /* bool */ {B,    I8,   U8,   I32,  U32,   I64,  F16,  BF16, F32},
    /* i8   */ {I8,   I8,   I32,  I32,  I64,   I64,  F16,  BF16, F32},
    /* u8   */ {U8,   I32,  U8,   I32,  U32,   I64,  F16,  BF16, F32},
    /* i32  */ {I32,  I32,  I32,  I32,  I64,   I64,  F16,  BF16, F32},
    /* u32  */ {U32,  I64,  U32,  I64,  U32,   I64,  F16,  BF16, F32},
    /* i64  */ {I64,  I64,  I64,  I64,  I64,   I64,  F16,  BF16, F32},
    /* f16  */ {F16,  F16,  F16,  F16,  F16,   F16,  F16,  F32,  F32},
    /* bf16 */ {BF16, BF16, BF16, BF16, BF16,  BF16, F32,  BF16, F32},
    /* f32  */ {F32,  F32,  F32,  F32,  F32,   F32,  F32,  F32,  F32},
};
// clang-format on

DType promoted(DType a, DType b) { return kPromotion[static_cast<int>(a)][static_cast<int>(b)]; }

TEST(TensorDtype, FactsOfEveryDtype) {
  const unsigned sizes[] = {1, 1, 1, 4, 4, 8, 2, 2, 4};
  for (DType t : kAllDtypes) {
    SCOPED_TRACE(name_of(t));
    EXPECT_EQ(dtype_name(t), name_of(t));
    EXPECT_EQ(dtype_size(t), sizes[static_cast<int>(t)]);
    EXPECT_EQ(is_float(t), t == F16 || t == BF16 || t == F32);
    EXPECT_EQ(is_int(t), t == I8 || t == U8 || t == I32 || t == U32 || t == I64);
    EXPECT_EQ(is_unsigned(t), t == U8 || t == U32);
  }
  EXPECT_EQ(dtypes::default_float, F32);
  EXPECT_EQ(dtypes::default_int, I32);
}

TEST(TensorDtype, PromoteTypesMatchesTheTable) {
  for (DType a : kAllDtypes)
    for (DType b : kAllDtypes) {
      EXPECT_EQ(promote_types(a, b), promoted(a, b)) << name_of(a) << " with " << name_of(b);
      EXPECT_EQ(promote_types(a, b), promote_types(b, a)) << name_of(a) << " with " << name_of(b);
    }
}

// The dtype every binary op gives two tensors of different dtypes (building the graph runs nothing).
TEST(TensorDtype, EveryBinaryOpPromotesByTheTable) {
  const Tensor cond = Tensor::zeros({7}, B);
  for (DType ta : kAllDtypes)
    for (DType tb : kAllDtypes) {
      SCOPED_TRACE(std::string(name_of(ta)) + " with " + name_of(tb));
      const DType want = promoted(ta, tb);
      const Tensor x = Tensor::zeros({5, 7}, ta), y = Tensor::zeros({7}, tb);
      EXPECT_EQ((x + y).dtype(), want);
      EXPECT_EQ((x - y).dtype(), want);
      EXPECT_EQ((x * y).dtype(), want);
      EXPECT_EQ(x.maximum(y).dtype(), want);
      EXPECT_EQ(x.minimum(y).dtype(), want);
      EXPECT_EQ(cond.where(x, y).dtype(), want);
      EXPECT_EQ((x / y).dtype(), is_float_type(want) ? want : F32);  // true division: a float one stays
      EXPECT_EQ(x.lt(y).dtype(), B);
      EXPECT_EQ(x.eq(y).dtype(), B);
    }
}

// The values of the promoted add for every pair of different dtypes.
TEST(TensorDtype, AddOfMixedDtypesComputesInThePromotedType) {
  const Domain small{0, 50, true};  // representable in every dtype, sums exact in float16
  std::vector<Check> checks;
  for (size_t i = 0; i < kAllDtypes.size(); ++i)
    for (size_t j = i + 1; j < kAllDtypes.size(); ++j) {
      const DType ta = kAllDtypes[i], tb = kAllDtypes[j];
      const ref::Array a = random_array({5, 7}, ta, small, 3 + 10 * i + j);
      const ref::Array b = random_array({7}, tb, small, 5 + 10 * j + i);
      checks.push_back({std::string(name_of(ta)) + " + " + name_of(tb), to_tensor(a, ta) + to_tensor(b, tb),
                        promoted(ta, tb), ref::zip(a, b, [](double p, double q) { return p + q; }), kExact});
    }
  expect_all(checks);
}

// ---- casts: every dtype to every other

// Source values that every cast of the pair defines: no negative float into an unsigned type (undefined in C),
// nothing beyond float16's range, integers exact in float32 before a bfloat16 rounding.
Domain cast_domain(DType from, DType to) {
  if (from == B) return {0, 1};
  if (to == B) return is_float_type(from) ? Domain{-2, 2} : Domain{is_unsigned_type(from) ? 0. : -2, 2};
  Domain d = default_domain(from);
  if (is_float_type(from) && !is_float_type(to)) {
    d = is_unsigned_type(to) ? Domain{0, 250} : Domain{-100, 100};  // fractions truncate toward zero
    if (to == I8) d = {-127.9, 127.9};
  }
  if (!is_float_type(from) && to == F16) d = {std::max(d.lo, -60000.0), std::min(d.hi, 60000.0), true};
  if (!is_float_type(from) && to == BF16) d = {std::max(d.lo, -16e6), std::min(d.hi, 16e6), true};
  return d;
}

// Every dtype into the parameter's dtype. Integers wrap modulo 2^bits (two's complement), floats truncate toward
// zero into integers and round to nearest even into narrower floats, anything nonzero is true.
class TensorDtypeCast : public ::testing::TestWithParam<DType> {};

TEST_P(TensorDtypeCast, FromEveryOtherDtype) {
  const DType to = GetParam();
  std::vector<Check> checks;
  for (DType from : kAllDtypes) {
    if (from == to) continue;
    const ref::Array x = random_array({7, 13}, from, cast_domain(from, to), 11 + 9 * static_cast<uint64_t>(from));
    const ref::Array want =
        ref::map(x, [to](double v) { return stored(to, is_float_type(to) || to == B ? v : std::trunc(v)); });
    checks.push_back(
        {std::string(name_of(from)) + " to " + name_of(to), to_tensor(x, from).cast(to), to, want, kExact});
  }
  expect_all(checks);
}

INSTANTIATE_TEST_SUITE_P(TensorDtype, TensorDtypeCast, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

TEST(TensorDtypeCastValues, HandPickedEdges) {
  const Tensor f(std::vector<float>{-1.9f, -0.5f, 0.0f, 0.5f, 1.9f, 127.99f}, {6});
  EXPECT_EQ(f.cast(I32).data<int32_t>(), (std::vector<int32_t>{-1, 0, 0, 0, 1, 127}));
  EXPECT_EQ(to_array(f.cast(B)).values, (std::vector<double>{1, 1, 0, 1, 1, 1}));
  const Tensor i(std::vector<int32_t>{-1, 255, 256, 300, -129}, {5});
  EXPECT_EQ(i.cast(U8).data<uint8_t>(), (std::vector<uint8_t>{255, 255, 0, 44, 127}));
  EXPECT_EQ(i.cast(I8).data<int8_t>(), (std::vector<int8_t>{-1, -1, 0, 44, 127}));
  EXPECT_EQ(i.cast(U32).data<uint32_t>(), (std::vector<uint32_t>{4294967295u, 255, 256, 300, 4294967167u}));
  EXPECT_EQ(i.cast(I64).data<int64_t>(), (std::vector<int64_t>{-1, 255, 256, 300, -129}));
  const Tensor big(std::vector<int64_t>{(int64_t{1} << 32) + 5, -(int64_t{1} << 40)}, {2});
  EXPECT_EQ(big.cast(I32).data<int32_t>(), (std::vector<int32_t>{5, 0}));
  const Tensor u(std::vector<uint32_t>{4294967295u, 2147483648u}, {2});
  EXPECT_EQ(u.cast(I64).data<int64_t>(), (std::vector<int64_t>{4294967295, 2147483648}));
  EXPECT_EQ(u.cast(F32).data<float>(), (std::vector<float>{4294967296.0f, 2147483648.0f}));
  // float32 -> float16: 65519 is the largest value that rounds to 65504, 65520 overflows to infinity.
  const Tensor h(std::vector<float>{65519.0f, 65520.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048}, {4});
  const std::vector<double> halves = to_array(h.cast(F16)).values;
  EXPECT_EQ(halves, (std::vector<double>{65504, INFINITY, 1.0, 1.0 + 2.0 / 1024}));  // ties to even
}

// ---- bitcast

template <class From, class To>
std::vector<To> reinterpret(const std::vector<From>& v) {
  std::vector<To> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(From));
  return out;
}

TEST(TensorDtypeBitcast, SameSizeKeepsTheBits) {
  const std::vector<float> f = {1.0f, -2.5f, 0.0f, -0.0f, 3.14159f, 1e-40f};
  const Tensor x(f, {2, 3});
  EXPECT_EQ(x.bitcast(I32).data<int32_t>(), (reinterpret<float, int32_t>(f)));
  EXPECT_EQ(x.bitcast(U32).data<uint32_t>(), (reinterpret<float, uint32_t>(f)));
  EXPECT_EQ(x.bitcast(U32).bitcast(F32).data<float>(), f);
  EXPECT_EQ(x.bitcast(I32).shape(), (Shape{2, 3}));
  const std::vector<int8_t> s = {-1, -128, 127, 0};
  EXPECT_EQ(Tensor(s, {4}).bitcast(U8).data<uint8_t>(), (reinterpret<int8_t, uint8_t>(s)));
  const std::vector<float16_t> h = {float16_t{0x3c00}, float16_t{0xc000}, float16_t{0x7bff}};
  const std::vector<bfloat16_t> hb = Tensor(h, {3}).bitcast(BF16).data<bfloat16_t>();
  ASSERT_EQ(hb.size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_EQ(hb[k].bits, h[k].bits);
  // A bitcast of a computed (not yet realized) value sees the computed bits.
  EXPECT_EQ((x * 2.0f).bitcast(I32).data<int32_t>()[0], std::bit_cast<int32_t>(2.0f));
}

TEST(TensorDtypeBitcast, DifferentSizeIsADTypeError) {
  const Tensor x(std::vector<float>{1.0f, 2.0f}, {2});
  EXPECT_TRUE(throws_containing<DTypeError>([&] { (void)x.bitcast(I64); }, {"float32", "int64"}));
  EXPECT_TRUE(throws_containing<DTypeError>([&] { (void)x.bitcast(F16); }, {"float32", "float16"}));
}

TEST(TensorDtypeErrors, FloorDivisionOfFloatsIsADTypeError) {
  const Tensor x(std::vector<float>{1.0f, 2.0f}, {2});
  EXPECT_TRUE(throws_containing<DTypeError>([&] { (void)x.idiv(x); }, {"float32"}));
  EXPECT_TRUE(throws_containing<DTypeError>([&] { (void)x.mod(x); }, {"float32"}));
  const Tensor h(std::vector<float16_t>{float16_t{0x3c00}}, {1});
  EXPECT_TRUE(throws_containing<DTypeError>([&] { (void)h.idiv(2); }, {"float16"}));
}

TEST(TensorDtypeErrors, ReadingWithTheWrongHostTypeIsADTypeError) {
  const Tensor x(std::vector<float>{1.0f, 2.0f}, {2});
  EXPECT_TRUE(throws_containing<DTypeError>([&] { (void)x.data<int32_t>(); }, {"float32", "int32"}));
}

// ---- the host half types, against the IEEE formulas

TEST(TensorDtypeHalf, Float16EveryBitPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const float16_t h{static_cast<uint16_t>(bits)};
    const double want = decode_float16(h.bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(h.to_float())) << std::hex << bits;
      EXPECT_TRUE(std::isnan(decode_float16(float16_t::from_float(h.to_float()).bits))) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(static_cast<double>(h.to_float()), want) << std::hex << bits;
    ASSERT_EQ(float16_t::from_float(static_cast<float>(want)).bits, h.bits) << std::hex << bits;
  }
}

TEST(TensorDtypeHalf, BFloat16EveryBitPattern) {
  for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const bfloat16_t h{static_cast<uint16_t>(bits)};
    const double want = decode_bfloat16(h.bits);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(h.to_float())) << std::hex << bits;
      continue;
    }
    ASSERT_EQ(static_cast<double>(h.to_float()), want) << std::hex << bits;
    ASSERT_EQ(bfloat16_t::from_float(static_cast<float>(want)).bits, h.bits) << std::hex << bits;
  }
}

// from_float rounds to the nearest half, ties to the even one: no neighbour of the result is closer.
template <class Half>
void expect_rounds_to_nearest(double (*decode)(uint16_t), double limit) {
  Rng rng(99);
  for (int i = 0; i < 20000; ++i) {
    const float f = static_cast<float>(i % 2 ? rng.uniform(-limit, limit) : std::ldexp(rng.uniform(-1, 1), -16));
    const uint16_t h = Half::from_float(f).bits;
    const double got = decode(h), err = std::fabs(got - f);
    for (int step : {-1, 1}) {
      const uint16_t n = static_cast<uint16_t>(h + step);
      const double other = decode(n);
      if (std::isnan(other) || std::signbit(other) != std::signbit(got)) continue;
      const double other_err = std::fabs(other - f);
      ASSERT_LE(err, other_err) << "from_float(" << f << ") = " << got << ", but " << other << " is closer";
      if (err == other_err) {
        ASSERT_EQ(h & 1, 0) << "tie at " << f << " not rounded to even";
      }
    }
  }
}

TEST(TensorDtypeHalf, FromFloatRoundsToNearestEven) {
  expect_rounds_to_nearest<float16_t>(decode_float16, 65000);
  expect_rounds_to_nearest<bfloat16_t>(decode_bfloat16, 1e30);
  EXPECT_EQ(float16_t::from_float(65520.0f).bits, 0x7c00);                      // overflows to +inf
  EXPECT_EQ(float16_t::from_float(std::ldexp(1.0f, -24)).bits, 1);              // the smallest subnormal
  EXPECT_EQ(float16_t::from_float(std::ldexp(1.0f, -25)).bits, 0);              // half of it: a tie, to even (0)
  EXPECT_EQ(float16_t::from_float(std::ldexp(3.0f, -26)).bits, 1);              // 0.75 of it: up
  EXPECT_EQ(bfloat16_t::from_float(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);  // a tie, to even
}

}  // namespace
}  // namespace hcq::optest
