// Symbolic simplification of integer (index) arithmetic inside kernels, so that movement ops render as plain
// strided indexing: constant folding, identities, sums in a canonical order with like terms combined, affine
// div/mod by positive constants using the bounds of range variables, and comparisons the bounds decide.
#pragma once

#include "framework/ir/node.hpp"
#include "framework/ir/rewrite.hpp"

namespace hcq::fw {

// The bounds [vmin, vmax] of an integer or bool kernel-level node from its sources' bounds (RANGE: 0..extent-1).
// Called by make_node; exact for constants and ranges, conservative for the rest: the whole range of the dtype when
// unknown or when the interval arithmetic could overflow (a value that may wrap can be anything). Floats: 0, 0.
void compute_bounds(NodeData& n);

// The rules (built once). For kernel-level integer and bool nodes (tensor-level constants, which carry a device, are
// left alone): folding with C semantics and the dtype's wrap-around, identities, comparisons the bounds decide; and
// for kIndex, sums in one canonical order (terms by descending coefficient, ranges first, then by structure; the
// constant last) and division/remainder by positive constants of non-negative expressions.
const RuleSet& symbolic_rules();

// rewrite(n, symbolic_rules()).
Node simplify(const Node& n);

// Builders that simplify as they go (index arithmetic in the lowering uses these). idx_div and idx_mod throw
// InvalidArgument for a divisor that is not positive.
Node idx_add(const Node& a, const Node& b);
Node idx_mul(const Node& a, int64_t c);
Node idx_mul(const Node& a, const Node& b);
Node idx_div(const Node& a, int64_t c);  // a >= 0, c > 0
Node idx_mod(const Node& a, int64_t c);  // a >= 0, c > 0
Node idx_lt(const Node& a, int64_t c);   // bool
Node idx_ge(const Node& a, int64_t c);   // bool: !(a < c)
Node bool_and(const Node& a, const Node& b);

}  // namespace hcq::fw
