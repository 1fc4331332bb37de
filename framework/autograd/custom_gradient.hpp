// Gradients a layer writes for its own composite op, as PyTorch's autograd.Function does, where the rules of the
// ops it is built from give a correct but slow gradient. A convolution's windows are movement ops, so the generic
// gradient of its input is a sum over overlapping windows (a fold through divisions and remainders, over an
// intermediate of N x Cin x OH x OW x KH x KW); its own rule is a convolution of the gradient with the flipped
// kernel instead.
//
// The value is wrapped in a CUSTOM_GRAD node whose sources are the value and the inputs the rule differentiates
// with respect to. Autograd calls the rule there and does not go into the value's graph; callify drops the wrapper,
// so what is computed is the value's graph unchanged.
#pragma once

#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// The gradients of a CUSTOM_GRAD node n's inputs (n->src[1..]), given n's gradient g (n's shape and dtype): one per
// input, null where none flows. n->i[1..] are the arguments given to with_custom_gradient.
using CustomGradientRule = std::vector<Node> (*)(const Node& n, const Node& g);

// Registers a rule once per process (a function-local static at its first use); returns its number.
int64_t register_custom_gradient(CustomGradientRule rule);

// `value`, whose gradient with respect to each of `inputs` is given by rule `rule` (with `args`).
Node with_custom_gradient(const Node& value, std::vector<Node> inputs, int64_t rule, std::vector<int64_t> args);

// The rule of a CUSTOM_GRAD node: its gradient for every source (the value's is null).
std::vector<Node> custom_gradient(const Node& n, const Node& g);

}  // namespace hcq::fw
