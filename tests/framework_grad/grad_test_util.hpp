// What the autograd, optimiser and layer tests share: a 1-d float parameter from values.
#pragma once

#include <cstdint>
#include <vector>

#include "hcq/tensor.hpp"

namespace hcq::gradtest {

inline Tensor param(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor(v, {n}).requires_grad_();
}

}  // namespace hcq::gradtest
