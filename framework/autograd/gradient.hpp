// Reverse-mode differentiation on the tensor-level graph (tinygrad's gradient.py, as rules on the IR): each op has
// a rule giving its sources' gradients from its own, written with the same tensor-level builders the Tensor ops use,
// so a gradient is one more lazy graph that the scheduler fuses like any other.
#pragma once

#include <unordered_map>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// The gradients of `root` with respect to each of `targets` that it depends on through differentiable ops, given
// root's own gradient `root_grad` (root's shape and dtype). A target not reached has no entry.
std::unordered_map<const NodeData*, Node> gradients(const Node& root, const Node& root_grad,
                                                    const std::vector<Node>& targets);

// The node a gradient with respect to `n` is taken at. A realized tensor is a view of its buffer, and views of views
// collapse onto the buffer (t_reshape), so a graph built from the view reaches the BUFFER node, not the view: the
// gradient is taken with respect to the buffer and reshaped to the view's shape.
inline const Node& gradient_target(const Node& n) {
  return n->op == Op::RESHAPE && n->src[0]->op == Op::BUFFER ? n->src[0] : n;
}

// One op's rule: the gradient of each of n's sources, given n's gradient g; null where none flows (integer and
// bool sources, comparisons, DETACH, ASSIGN, BITCAST, leaves).
std::vector<Node> gradient_rule(const Node& n, const Node& g);

}  // namespace hcq::fw
