// Rangeify's first half: which tensor-level nodes become buffers (kernel boundaries). Everything else fuses into
// the kernel of the realized node that uses it.
#pragma once

#include <unordered_set>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// A node is realized when it is a root, a CONTIGUOUS, a COPY or the source of one, an ASSIGN, or a REDUCE_AXIS
// that would otherwise be recomputed: one that two kernels use, or one its consumer reads through an EXPAND (each
// reduced value used for many output elements); likewise an elementwise value of many ops read through an EXPAND.
// A contraction (a sum of products) inside another reduce's kernel is realized too, so that it is tiled on its own
// (a convolution feeding a max pool). `extra` forces more nodes: an assign's value that reads its own
// target at other positions, and a reduce whose users in one kernel read it at different indices (found while
// lowering: lower.hpp). Roots that are parameters already (a buffer view) are not realized. An elementwise value
// with two or more transcendentals or divisions in its tree is realized when two kernels use it and one reads it
// through an EXPAND (a softmax's gradient feeding a product: recomputed per column otherwise).
std::unordered_set<const NodeData*> realize_map(const std::vector<Node>& roots,
                                                const std::unordered_set<const NodeData*>& extra);

// A PARAM, or a RESHAPE of one with the same element count.
bool is_param_view(const NodeData* n);

}  // namespace hcq::fw
