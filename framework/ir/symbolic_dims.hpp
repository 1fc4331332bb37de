// Symbolic dimensions (issue 20: a batch size or a sequence length that changes per call without a new schedule).
// A tensor-level node's shape holds each dimension's maximum, the size of its storage; NARROW(x, variable) on an
// axis says that only the first (the variable's value) elements there are present. `NodeData::dim_vars` carries
// that through the ops built on top: per dimension, the variable (a BIND, or a VAR_PARAM after callify) whose value
// is the dimension's size, or null for a concrete one; empty when the node has none. Kernels run over the storage
// and mask: NARROW reads 0 past the value, and a reduce over a symbolic axis takes its identity there
// (schedule/lower.cpp), so the schedule, and every kernel, is the same for each value.
#pragma once

#include <optional>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// The node's symbolic dimensions from its op and its sources' (make_node calls it; see above).
std::vector<Node> dim_vars_of(const NodeData& n);

// Where a reshape from `from` to `to` takes each symbolic dimension of `from` (`vars`, as dim_vars): the dimension of
// `to` with the same size and the same number of elements before it. nullopt when one has none (the reshape would
// merge or split a symbolic dimension).
std::optional<std::vector<Node>> reshape_dim_vars(const Shape& from, const std::vector<Node>& vars, const Shape& to);

// A dimension's size now: the BIND's value (`var` is a BIND), or the maximum where `var` is null.
int64_t bound_size(const Node& var, int64_t max);

// "n=3 (1..8)": the variable's name, its value and bounds, for messages and shape prints.
std::string dim_var_str(const Node& var);

}  // namespace hcq::fw
