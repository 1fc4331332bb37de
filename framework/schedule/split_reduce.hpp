// Large reductions into two kernels (issue 15): a reduce of many elements into few outputs leaves most of a GPU idle
// (one workgroup per output), so it becomes a reduce of contiguous chunks into a buffer of partials, then a reduce of
// the partials (tinygrad's split_reduceop). Applied to the callified graph before the realize map, on devices
// whose code generator asks for it.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "framework/codegen/target.hpp"
#include "framework/ir/node.hpp"

namespace hcq::fw {

// The roots with each qualifying REDUCE_AXIS on a device for which `limits_on(device)` gives limits (SplitLimits,
// codegen/target.hpp: from the device's compute units and workgroup size) rewritten as
// RESHAPE(REDUCE_AXIS(CONTIGUOUS(REDUCE_AXIS(RESHAPE(x))))): one reduced axis of extent n is viewed as (p, n/p) with
// p the largest divisor of n in [8, max_parts], the first reduce takes every reduced axis but the p one (each partial
// is a contiguous chunk of the axis), the second reduces the p partials. Other nodes are rebuilt only where a source
// changed. A reduce with no such divisor stays one kernel.
std::vector<Node> split_large_reduces(const std::vector<Node>& roots,
                                      const std::function<std::optional<SplitLimits>(const std::string&)>& limits_on);

}  // namespace hcq::fw
