// PLACEHOLDER until the symbolic rules land: bounds of constants and ranges, constant folding only.
#include "framework/ir/symbolic.hpp"

#include <limits>

namespace hcq::fw {

void compute_bounds(NodeData& n) {
  if (n.op == Op::CONST && !is_float(n.dtype)) {
    n.vmin = n.vmax = n.i.empty() ? 0 : n.i[0];
  } else if (n.op == Op::RANGE) {
    n.vmin = 0;
    n.vmax = n.i.at(1) - 1;
  } else if (!is_float(n.dtype)) {
    n.vmin = std::numeric_limits<int64_t>::min();
    n.vmax = std::numeric_limits<int64_t>::max();
  }
}

const RuleSet& symbolic_rules() {
  static const RuleSet rules;
  return rules;
}

Node simplify(const Node& n) { return rewrite(n, symbolic_rules()); }

Node idx_add(const Node& a, const Node& b) {
  if (a->is_const(0)) return b;
  if (b->is_const(0)) return a;
  return make_node(Op::ADD, kIndex, {a, b});
}
Node idx_mul(const Node& a, int64_t c) { return idx_mul(a, index_const(c)); }
Node idx_mul(const Node& a, const Node& b) {
  if (a->is_const(1)) return b;
  if (b->is_const(1)) return a;
  if (a->is_const(0) || b->is_const(0)) return index_const(0);
  return make_node(Op::MUL, kIndex, {a, b});
}
Node idx_div(const Node& a, int64_t c) { return c == 1 ? a : make_node(Op::IDIV, kIndex, {a, index_const(c)}); }
Node idx_mod(const Node& a, int64_t c) { return make_node(Op::MOD, kIndex, {a, index_const(c)}); }
Node idx_lt(const Node& a, int64_t c) { return make_node(Op::CMPLT, DType::bool_, {a, index_const(c)}); }
Node idx_ge(const Node& a, int64_t c) {
  return make_node(Op::XOR, DType::bool_, {idx_lt(a, c), const_node(DType::bool_, 1)});
}
Node bool_and(const Node& a, const Node& b) {
  if (a->is_const(1)) return b;
  if (b->is_const(1)) return a;
  return make_node(Op::AND, DType::bool_, {a, b});
}

}  // namespace hcq::fw
