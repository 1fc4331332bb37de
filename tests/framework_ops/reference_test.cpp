// The reference itself, on cases worked out by hand (and checked in Python/numpy when they were written): if it were
// wrong, every op test would be judged against the wrong answer.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"

namespace hcq::optest {
namespace {

using ref::Array;

Array iota(const ref::Dims& shape) {
  Array a = Array::filled(shape, 0);
  for (size_t i = 0; i < a.values.size(); ++i) a.values[i] = double(i);
  return a;
}

TEST(TensorOpsReference, IndexingAndFormat) {
  EXPECT_EQ(ref::format({2, 3}), "(2, 3)");
  EXPECT_EQ(ref::format({4}), "(4,)");
  EXPECT_EQ(ref::format({}), "()");
  const Array a = iota({2, 3, 4});
  EXPECT_EQ(a.at({1, 2, 3}), 23);
  EXPECT_EQ(a.at({1, 0, 1}), 13);
  int visits = 0;
  ref::for_each_index({}, [&](const ref::Dims& i) { visits += i.empty(); });
  ref::for_each_index({3, 0}, [&](const ref::Dims&) { visits += 100; });
  EXPECT_EQ(visits, 1);
  EXPECT_THROW(Array({2}, {1, 2, 3}), std::invalid_argument);
}

TEST(TensorOpsReference, Broadcasting) {
  EXPECT_EQ(ref::broadcast_shapes({3, 1, 11}, {5, 1}), (ref::Dims{3, 5, 11}));
  EXPECT_EQ(ref::broadcast_shapes({}, {2}), (ref::Dims{2}));
  EXPECT_EQ(ref::broadcast_shapes({0, 1}, {1, 4}), (ref::Dims{0, 4}));
  EXPECT_THROW(ref::broadcast_shapes({2, 3}, {4}), std::invalid_argument);
  const Array sum = ref::zip(iota({2, 1}), iota({3}), [](double a, double b) { return 10 * a + b; });
  EXPECT_EQ(sum.values, (std::vector<double>{0, 1, 2, 10, 11, 12}));
}

TEST(TensorOpsReference, Reductions) {
  const Array a = iota({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  EXPECT_EQ(ref::sum(a, {}, false).values, (std::vector<double>{15}));
  EXPECT_EQ(ref::sum(a, {0}, false).values, (std::vector<double>{3, 5, 7}));
  EXPECT_EQ(ref::sum(a, {-1}, true).shape, (ref::Dims{2, 1}));
  EXPECT_EQ(ref::sum(a, {-1}, true).values, (std::vector<double>{3, 12}));
  EXPECT_EQ(ref::prod(a, {1}, false).values, (std::vector<double>{0, 60}));
  EXPECT_EQ(ref::max(a, {0}, false).values, (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(ref::mean(a, {1}, false).values, (std::vector<double>{1, 4}));
  EXPECT_EQ(ref::var(a, {1}, false, 1).values, (std::vector<double>{1, 1}));
  EXPECT_EQ(ref::var(a, {}, false, 0).values[0], 17.5 / 6);  // numpy.var(range(6))
  const Array ties({2, 4}, {-5, -1, -1, -7, 3, 3, -2, 3});
  EXPECT_EQ(ref::argmax(ties, 1, false).values, (std::vector<double>{1, 0}));
  EXPECT_EQ(ref::argmin(ties, 1, false).values, (std::vector<double>{3, 2}));
  EXPECT_EQ(ref::argmax(ties, 0, true).shape, (ref::Dims{1, 4}));
  EXPECT_EQ(ref::cumsum(a, 1).values, (std::vector<double>{0, 1, 3, 3, 7, 12}));
  EXPECT_EQ(ref::any(Array({2, 2}, {0, 0, 0, 2}), {1}, false).values, (std::vector<double>{0, 1}));
  EXPECT_EQ(ref::all(Array({2, 2}, {1, 0, 3, 2}), {1}, false).values, (std::vector<double>{0, 1}));
  const Array lse = ref::logsumexp(Array({2}, {0, 0}), 0, false);
  EXPECT_DOUBLE_EQ(lse.values[0], std::log(2.0));
  EXPECT_DOUBLE_EQ(ref::softmax(Array({2}, {1, 1}), 0).values[1], 0.5);
}

TEST(TensorOpsReference, PythonSlices) {
  const Array a = iota({10});
  EXPECT_EQ(ref::slice(a, 0, 1, 10, 3).values, (std::vector<double>{1, 4, 7}));      // a[1:10:3]
  EXPECT_EQ(ref::slice(a, 0, -3, 100, 1).values, (std::vector<double>{7, 8, 9}));    // a[-3:100]
  EXPECT_EQ(ref::slice(a, 0, 8, 2, -2).values, (std::vector<double>{8, 6, 4}));      // a[8:2:-2]
  EXPECT_EQ(ref::slice(a, 0, -1, -100, -4).values, (std::vector<double>{9, 5, 1}));  // a[::-4]
  EXPECT_EQ(ref::slice(a, 0, 100, -100, -1).values.size(), 10u);                     // a[100:-100:-1]
  EXPECT_EQ(ref::slice(a, 0, 5, 2, 1).values.size(), 0u);                            // a[5:2]
}

TEST(TensorOpsReference, Movement) {
  const Array a = iota({2, 3});
  EXPECT_EQ(ref::permute(a, {1, 0}).values, (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(ref::reshape(a, {3, -1}).shape, (ref::Dims{3, 2}));
  EXPECT_EQ(ref::flip(a, {1}).values, (std::vector<double>{2, 1, 0, 5, 4, 3}));
  EXPECT_EQ(ref::pad(iota({2}), {{1, 2}}, 9).values, (std::vector<double>{9, 0, 1, 9, 9}));
  EXPECT_EQ(ref::shrink(a, {{1, 2}, {0, 2}}).values, (std::vector<double>{3, 4}));
  EXPECT_EQ(ref::expand(iota({2, 1}), {2, 2, -1}).values, (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(ref::repeat(iota({2}), {2, 2}).values, (std::vector<double>{0, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(ref::repeat(a, {1, 2}).values, (std::vector<double>{0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5}));
  EXPECT_EQ(ref::cat({a, iota({1, 3})}, 0).values, (std::vector<double>{0, 1, 2, 3, 4, 5, 0, 1, 2}));
  EXPECT_EQ(ref::cat({a, iota({2, 1})}, 1).values, (std::vector<double>{0, 1, 2, 0, 3, 4, 5, 1}));
  EXPECT_EQ(ref::stack({iota({2}), iota({2})}, -1).values, (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(ref::stack({iota({2}), iota({2})}, -1).shape, (ref::Dims{2, 2}));
  EXPECT_EQ(ref::unsqueeze(a, -1).shape, (ref::Dims{2, 3, 1}));
  EXPECT_EQ(ref::flatten(iota({2, 3, 4, 5}), 1, 2).shape, (ref::Dims{2, 12, 5}));
  EXPECT_EQ(ref::squeeze(iota({1, 2, 1})).shape, (ref::Dims{2}));
}

TEST(TensorOpsReference, Matmul) {
  const Array x({2, 2}, {1, 2, 3, 4}), y({2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(ref::matmul(x, y).values, (std::vector<double>{19, 22, 43, 50}));
  EXPECT_EQ(ref::matmul(Array({2}, {1, 2}), y).values, (std::vector<double>{19, 22}));
  EXPECT_EQ(ref::matmul(x, Array({2}, {1, 1})).values, (std::vector<double>{3, 7}));
  EXPECT_EQ(ref::matmul(Array({2}, {1, 2}), Array({2}, {3, 4})).shape, ref::Dims{});
  EXPECT_EQ(ref::matmul(iota({2, 1, 3, 4}), iota({5, 4, 2})).shape, (ref::Dims{2, 5, 3, 2}));
}

TEST(TensorOpsReference, HalfDecodingAndStorage) {
  EXPECT_EQ(decode_float16(0x3c00), 1.0);
  EXPECT_EQ(decode_float16(0xc000), -2.0);
  EXPECT_EQ(decode_float16(0x7bff), 65504.0);
  EXPECT_EQ(decode_float16(0x0001), std::ldexp(1.0, -24));
  EXPECT_EQ(decode_float16(0x7c00), INFINITY);
  EXPECT_EQ(decode_bfloat16(0x3f80), 1.0);
  EXPECT_EQ(decode_bfloat16(0xc040), -3.0);
  EXPECT_EQ(decode_bfloat16(0x0001), std::ldexp(1.0, -133));
  EXPECT_EQ(stored(DType::uint8, -1), 255);
  EXPECT_EQ(stored(DType::int8, 200), -56);
  EXPECT_EQ(stored(DType::uint32, -1), 4294967295.0);
  EXPECT_EQ(stored(DType::float16, 1.0 + 1.0 / 4096), 1.0);
  EXPECT_EQ(stored(DType::bool_, -0.5), 1.0);
}

}  // namespace
}  // namespace hcq::optest
