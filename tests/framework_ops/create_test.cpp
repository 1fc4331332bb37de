// Creation: tensors from host data in every dtype, scalars, zeros/ones/full/empty, arange (int and float, negative
// steps), eye, and the random tensors: range, moments over 100K samples, and the counter-based generator's promises
// (the same numbers after the same seed, element i depends only on (seed, k, i), not on fusion or realize order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType B = DType::bool_, I32 = DType::int32, F16 = DType::float16, BF16 = DType::bfloat16,
                F32 = DType::float32;

// ---- from host data, through the typed constructor and data<T>()

template <class T>
class TensorCreateFromData : public ::testing::Test {};

using HostTypes = ::testing::Types<int8_t, uint8_t, int32_t, uint32_t, int64_t, float16_t, bfloat16_t, float>;
TYPED_TEST_SUITE(TensorCreateFromData, HostTypes);

template <class T>
std::vector<T> host_values(DType t, size_t n) {
  const ref::Array a = random_array({static_cast<int64_t>(n)}, t, 229);
  std::vector<T> out;
  for (double v : a.values) {
    if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) out.push_back(T::from_float(float(v)));
    else out.push_back(static_cast<T>(v));
  }
  return out;
}

template <class T>
std::vector<uint8_t> raw(const std::vector<T>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(T));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

TYPED_TEST(TensorCreateFromData, RoundTripsEveryBit) {
  constexpr DType t = Tensor::host_dtype<TypeParam>();
  const std::vector<TypeParam> values = host_values<TypeParam>(t, 3 * 5 * 7);
  const Tensor x(values, {3, 5, 7});
  EXPECT_EQ(x.dtype(), t);
  EXPECT_EQ(x.shape(), (Shape{3, 5, 7}));
  EXPECT_EQ(x.shape(-1), 7);
  EXPECT_EQ(x.shape(0), 3);
  EXPECT_EQ(x.ndim(), 3u);
  EXPECT_EQ(x.numel(), 105);
  EXPECT_TRUE(x.defined());
  if (std::getenv("HCQ_DEVICE") == nullptr) {
    EXPECT_TRUE(x.device().starts_with("CPU")) << x.device();  // the canonical name, "CPU:0" today
  }
  EXPECT_EQ(raw(x.data<TypeParam>()), raw(values));
  // tolist() converts to double the way the reference reads the tensor.
  EXPECT_EQ(x.tolist(), to_array(x).values);
}

TEST(TensorCreate, BoolFromBytes) {
  const std::vector<uint8_t> bits = {1, 0, 0, 1, 1, 0};
  const Tensor x(std::as_bytes(std::span<const uint8_t>(bits)), {2, 3}, B);
  EXPECT_EQ(x.dtype(), B);
  EXPECT_EQ(x.tolist(), (std::vector<double>{1, 0, 0, 1, 1, 0}));
}

TEST(TensorCreate, DataOfTheWrongSizeIsAnError) {
  EXPECT_TRUE(
      throws_containing<InvalidArgument>([] { (void)Tensor(std::vector<float>{1, 2, 3}, {2, 2}); }, {"(2, 2)", "3"}));
  const std::vector<std::byte> five(5);
  EXPECT_TRUE(throws_containing<InvalidArgument>([&] { (void)Tensor(std::span<const std::byte>(five), {2}, F32); },
                                                 {"(2,)", "5"}));
}

// ---- scalar, zeros, ones, full, empty

class TensorCreateFilled : public ::testing::TestWithParam<DType> {};

TEST_P(TensorCreateFilled, ScalarZerosOnesFullEmpty) {
  const DType t = GetParam();
  const double v = t == B ? 1 : (is_float_type(t) ? 2.5 : 7);
  const Tensor s = is_float_type(t) ? Tensor::scalar(2.5, t) : Tensor::scalar(static_cast<int>(v), t);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.dtype(), t);
  EXPECT_EQ(s.item(), v);
  const Tensor f = is_float_type(t) ? Tensor::full({2, 3}, 2.5, t) : Tensor::full({2, 3}, static_cast<int>(v), t);
  expect_all({{"zeros", Tensor::zeros({2, 3}, t), t, ref::Array::filled({2, 3}, 0), kExact},
              {"ones", Tensor::ones({2, 3}, t), t, ref::Array::filled({2, 3}, 1), kExact},
              {"full", f, t, ref::Array::filled({2, 3}, v), kExact}});
  Tensor e = Tensor::empty({4, 2}, t);
  EXPECT_EQ(e.shape(), (Shape{4, 2}));
  EXPECT_EQ(e.dtype(), t);
  e.realize();
  EXPECT_EQ(e.tolist().size(), 8u);
}

INSTANTIATE_TEST_SUITE_P(TensorCreate, TensorCreateFilled, ::testing::ValuesIn(kAllDtypes),
                         [](const ::testing::TestParamInfo<DType>& info) { return name_of(info.param); });

TEST(TensorCreate, DefaultDtypesFollowTheScalarsKind) {
  EXPECT_EQ(Tensor::zeros({2}).dtype(), F32);
  EXPECT_EQ(Tensor::ones({2}).dtype(), F32);
  EXPECT_EQ(Tensor::empty({2}).dtype(), F32);
  EXPECT_EQ(Tensor::full({2}, 3).dtype(), I32);
  EXPECT_EQ(Tensor::full({2}, 2.5).dtype(), F32);
  EXPECT_EQ(Tensor::full({2}, true).dtype(), B);
  EXPECT_EQ(Tensor::full({2}, 3).tolist(), (std::vector<double>{3, 3}));
  EXPECT_EQ(Tensor::full({0, 3}, 1.5).shape(), (Shape{0, 3}));
  EXPECT_TRUE(Tensor::full({0, 3}, 1.5).tolist().empty());
}

// ---- arange and eye

TEST(TensorCreate, ArangeIntegers) {
  EXPECT_EQ(Tensor::arange(5).dtype(), I32);
  EXPECT_EQ(Tensor::arange(5).data<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(Tensor::arange(2, 11, 3).data<int32_t>(), (std::vector<int32_t>{2, 5, 8}));
  EXPECT_EQ(Tensor::arange(-3, 3).data<int32_t>(), (std::vector<int32_t>{-3, -2, -1, 0, 1, 2}));
  EXPECT_EQ(Tensor::arange(10, 0, -3).data<int32_t>(), (std::vector<int32_t>{10, 7, 4, 1}));
  EXPECT_EQ(Tensor::arange(3, 3).shape(), (Shape{0}));
  EXPECT_EQ(Tensor::arange(3, 0).shape(), (Shape{0}));
  const Tensor big = Tensor::arange(0, 100000, 1, DType::int64);
  EXPECT_EQ(big.dtype(), DType::int64);
  std::vector<int64_t> want(100000);
  std::iota(want.begin(), want.end(), int64_t{0});
  EXPECT_EQ(big.data<int64_t>(), want);
}

TEST(TensorCreate, ArangeFloats) {
  EXPECT_EQ(Tensor::arange(0.0, 1.0, 0.25).dtype(), F32);
  EXPECT_EQ(Tensor::arange(0.0, 1.0, 0.25).data<float>(), (std::vector<float>{0, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(Tensor::arange(5.0, 0.0, -1.5).data<float>(), (std::vector<float>{5, 3.5f, 2, 0.5f}));
  EXPECT_EQ(Tensor::arange(2.5).data<float>(), (std::vector<float>{0, 1, 2}));
  EXPECT_EQ(Tensor::arange(0, 2, 0.5).data<float>(), (std::vector<float>{0, 0.5f, 1, 1.5f}));  // a float step
  const std::vector<float> tenths = Tensor::arange(0.0, 1.0, 0.1).data<float>();
  ASSERT_EQ(tenths.size(), 10u);
  for (size_t i = 0; i < tenths.size(); ++i) EXPECT_NEAR(tenths[i], 0.1 * static_cast<double>(i), 1e-6);
  const Tensor h = Tensor::arange(0, 6, 2, F16);
  EXPECT_EQ(h.dtype(), F16);
  EXPECT_EQ(h.tolist(), (std::vector<double>{0, 2, 4}));
}

TEST(TensorCreate, Eye) {
  ref::Array want = ref::Array::filled({4, 4}, 0);
  for (int64_t i = 0; i < 4; ++i) want.at({i, i}) = 1;
  EXPECT_TRUE(matches(Tensor::eye(4), F32, want, kExact));
  EXPECT_TRUE(matches(Tensor::eye(4, I32), I32, want, kExact));
  EXPECT_TRUE(matches(Tensor::eye(1, F16), F16, ref::Array({1, 1}, {1}), kExact));
  EXPECT_EQ(Tensor::eye(0).shape(), (Shape{0, 0}));
}

// ---- random

double mean_of(const std::vector<float>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }

double std_of(const std::vector<float>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (float x : v) s += (x - m) * (x - m);
  return std::sqrt(s / double(v.size() - 1));
}

size_t equal_count(const std::vector<float>& a, const std::vector<float>& b) {
  size_t n = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) n += a[i] == b[i];
  return n;
}

TEST(TensorCreateRandom, RandIsUniformOnZeroOne) {
  Tensor::manual_seed(1234);
  const std::vector<float> r = Tensor::rand({100000}).data<float>();
  ASSERT_EQ(r.size(), 100000u);
  EXPECT_GE(*std::min_element(r.begin(), r.end()), 0.0f);
  EXPECT_LT(*std::max_element(r.begin(), r.end()), 1.0f);
  EXPECT_NEAR(mean_of(r), 0.5, 0.01);  // the mean's standard error is 0.0009
  EXPECT_NEAR(std_of(r), std::sqrt(1.0 / 12), 0.01);
  // Ten equal bins each hold about a tenth.
  std::vector<int> bins(10, 0);
  for (float x : r) ++bins[std::min<size_t>(static_cast<size_t>(x * 10), 9)];
  for (int b : bins) EXPECT_NEAR(b, 10000, 500);
}

TEST(TensorCreateRandom, SameSeedSameNumbersOtherSeedOthers) {
  Tensor::manual_seed(42);
  const std::vector<float> a = Tensor::rand({1000}).data<float>();
  const std::vector<float> a_next = Tensor::rand({1000}).data<float>();
  Tensor::manual_seed(42);
  const std::vector<float> b = Tensor::rand({1000}).data<float>();
  Tensor::manual_seed(43);
  const std::vector<float> c = Tensor::rand({1000}).data<float>();
  EXPECT_EQ(a, b);
  EXPECT_LT(equal_count(a, c), 5u);
  EXPECT_LT(equal_count(a, a_next), 5u);  // two successive rand calls differ
}

TEST(TensorCreateRandom, ElementDependsOnSeedCounterAndIndexOnly) {
  Tensor::manual_seed(7);
  Tensor first = Tensor::rand({1000}), second = Tensor::rand({1000});
  const std::vector<float> second_alone = second.data<float>();  // realized before the first
  const std::vector<float> first_late = first.data<float>();
  Tensor::manual_seed(7);
  const std::vector<float> first_in_order = Tensor::rand({1000}).data<float>();
  const std::vector<float> second_in_order = Tensor::rand({1000}).data<float>();
  EXPECT_EQ(first_late, first_in_order);
  EXPECT_EQ(second_alone, second_in_order);
  // A longer tensor from the same position in the sequence starts with the same numbers.
  Tensor::manual_seed(7);
  const std::vector<float> longer = Tensor::rand({2000}).data<float>();
  EXPECT_TRUE(std::equal(first_in_order.begin(), first_in_order.end(), longer.begin()));
  // Fused into an expression, the numbers are the same.
  Tensor::manual_seed(7);
  const std::vector<float> doubled = (Tensor::rand({1000}) * 2.0f).data<float>();
  for (size_t i = 0; i < doubled.size(); ++i) ASSERT_EQ(doubled[i], 2 * first_in_order[i]) << i;
}

TEST(TensorCreateRandom, HalfRandStaysBelowOne) {
  Tensor::manual_seed(5);
  for (DType t : {F16, BF16}) {
    const std::vector<double> r = Tensor::rand({20000}, t).tolist();
    EXPECT_LT(*std::max_element(r.begin(), r.end()), 1.0) << name_of(t);
    EXPECT_GE(*std::min_element(r.begin(), r.end()), 0.0) << name_of(t);
    EXPECT_NEAR(std::accumulate(r.begin(), r.end(), 0.0) / double(r.size()), 0.5, 0.02) << name_of(t);
  }
}

TEST(TensorCreateRandom, RandnIsStandardNormal) {
  Tensor::manual_seed(99);
  const std::vector<float> r = Tensor::randn({100000}).data<float>();
  EXPECT_TRUE(std::all_of(r.begin(), r.end(), [](float x) { return std::isfinite(x); }));
  EXPECT_NEAR(mean_of(r), 0.0, 0.02);
  EXPECT_NEAR(std_of(r), 1.0, 0.02);
  // The shape, not just two moments: 68.27 % within one sigma, 95.45 % within two.
  const double one = double(std::count_if(r.begin(), r.end(), [](float x) { return std::fabs(x) < 1; })) / 1e5;
  const double two = double(std::count_if(r.begin(), r.end(), [](float x) { return std::fabs(x) < 2; })) / 1e5;
  EXPECT_NEAR(one, 0.6827, 0.01);
  EXPECT_NEAR(two, 0.9545, 0.005);
}

TEST(TensorCreateRandom, UniformStaysInItsBounds) {
  Tensor::manual_seed(3);
  const std::vector<float> r = Tensor::uniform({100000}, -3, 5).data<float>();
  const auto [lo, hi] = std::minmax_element(r.begin(), r.end());
  EXPECT_GE(*lo, -3.0f);
  EXPECT_LT(*hi, 5.0f);
  EXPECT_LT(*lo, -2.99f);
  EXPECT_GT(*hi, 4.99f);
  EXPECT_NEAR(mean_of(r), 1.0, 0.05);
  EXPECT_EQ(Tensor::uniform({4, 5}, 0, 1).shape(), (Shape{4, 5}));
}

}  // namespace
}  // namespace hcq::optest
