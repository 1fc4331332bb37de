// The shape of a tensor-level node from its op, arguments and sources (kernel-level nodes have shape ()).
#pragma once

#include "framework/ir/node.hpp"

namespace hcq::fw {

Shape shape_of(const NodeData& n);
int64_t numel(const Shape& s);

}  // namespace hcq::fw
