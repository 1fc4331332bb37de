// How a MultiTensor's parts make up its logical tensor: the split of an axis over devices, cutting a whole tensor
// by it, and bringing an operand to another operand's layout (shared by the elementwise ops, reductions, matmul).
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "hcq/multi.hpp"

namespace hcq::multi {

using Bounds = std::vector<std::pair<int64_t, int64_t>>;

// [start, end) of each of `parts` pieces of an axis of n: the first n % parts pieces are one longer.
Bounds split_bounds(int64_t n, size_t parts);
// The pieces of `whole` along `axis` (views, on whole's device).
std::vector<Tensor> cut(const Tensor& whole, int axis, const Bounds& bounds);
// x's parts laid out for a result of `out_ndim` dims split on `ax_out` with bounds `b` (or replicated): a replicated
// operand is cut locally on each device (or used whole where it broadcasts), one split the same way is used as it
// is, any other is gathered first.
std::vector<Tensor> conform(const MultiTensor& x, size_t out_ndim, int ax_out, const Bounds& b);

// InvalidArgument naming both device lists when a and b are not on the same devices in the same order.
void same_devices(const MultiTensor& a, const MultiTensor& b, std::string_view op);

}  // namespace hcq::multi
