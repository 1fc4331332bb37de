// Reductions whose reduced axis has 0 elements, over tensors backed by a real (0-byte) buffer rather than a constant
// the scheduler folds away: sum is 0, prod is 1, a matmul with K = 0 is all zeros.
// This file is the last in framework_ops_test_sources and its cases are parameterised, so they run after every
// other op test: a device fault here (a 0-byte buffer handed to a kernel) is sticky for the process and would
// otherwise fail every test after it.
#include <gtest/gtest.h>

#include <vector>

#include "framework_ops/reference.hpp"
#include "framework_ops/tensor_check.hpp"
#include "hcq/tensor.hpp"

namespace hcq::optest {
namespace {

constexpr DType F32 = DType::float32, I32 = DType::int32;

struct ZeroSizeCase {
  const char* name;
  Tensor (*compute)();
  DType dtype;
  ref::Array want;
};

Tensor empty_data(ref::Dims shape, DType t) { return to_tensor(ref::Array::filled(shape, 0), t); }

const std::vector<ZeroSizeCase>& zero_size_cases() {
  static const std::vector<ZeroSizeCase> cases = {
      {"sum_over_empty_axis", [] { return empty_data({3, 0}, F32).sum(1); }, F32, ref::Array::filled({3}, 0)},
      {"prod_over_empty_axis", [] { return empty_data({3, 0}, I32).prod(1); }, I32, ref::Array::filled({3}, 1)},
      {"sum_of_computed_empty", [] { return (empty_data({0, 5}, F32) * 2).sum(0, true); }, F32,
       ref::Array::filled({1, 5}, 0)},
      {"matmul_k0", [] { return empty_data({3, 0}, F32).matmul(empty_data({0, 4}, F32)); }, F32,
       ref::Array::filled({3, 4}, 0)},
  };
  return cases;
}

class TensorReduceZeroSize : public ::testing::TestWithParam<ZeroSizeCase> {};

TEST_P(TensorReduceZeroSize, GivesTheIdentity) {
  const ZeroSizeCase& c = GetParam();
  EXPECT_TRUE(matches(c.compute(), c.dtype, c.want, kExact));
}

INSTANTIATE_TEST_SUITE_P(TensorReduce, TensorReduceZeroSize, ::testing::ValuesIn(zero_size_cases()),
                         [](const ::testing::TestParamInfo<ZeroSizeCase>& info) { return info.param.name; });

}  // namespace
}  // namespace hcq::optest
