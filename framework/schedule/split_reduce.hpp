// Large reductions into two kernels (issue 15): a reduce of many elements into few outputs leaves most of a GPU idle
// (one workgroup per output), so it becomes a reduce of contiguous chunks into a buffer of partials, then a reduce of
// the partials (tinygrad's split_reduceop). Applied to the callified graph before the realize map, on devices
// whose code generator asks for it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// A reduce is split when each output reduces at least this many elements...
inline constexpr int64_t kSplitMinReduce = 32768;
// ...and there are at most this many outputs (more already give every compute unit a workgroup).
inline constexpr int64_t kSplitMaxOutputs = 256;

// The roots with each qualifying REDUCE_AXIS on a device for which `splits_on(device)` is true rewritten as
// RESHAPE(REDUCE_AXIS(CONTIGUOUS(REDUCE_AXIS(RESHAPE(x))))): one reduced axis of extent n is viewed as (p, n/p) with
// p the largest divisor of n in [8, 256], the first reduce takes every reduced axis but the p one (each partial is a
// contiguous chunk of the axis), the second reduces the p partials. Other nodes are rebuilt only where a source
// changed. A reduce with no such divisor stays one kernel.
std::vector<Node> split_large_reduces(const std::vector<Node>& roots,
                                      const std::function<bool(const std::string&)>& splits_on);

}  // namespace hcq::fw
