// The gradient rule of each tensor-level op. Sources of an ALU node share its shape (the Tensor ops broadcast and
// cast before building it), so most rules are elementwise products; movement rules undo the movement, and
// reductions spread the gradient back over what they reduced.
#include <cmath>
#include <numbers>

#include "framework/autograd/custom_gradient.hpp"
#include "framework/autograd/gradient.hpp"
#include "framework/tensor/build.hpp"

namespace hcq::fw {
namespace {

Node alu(Op op, const Node& a, const Node& b) { return t_alu(op, a->dtype, {a, b}); }
Node mul(const Node& a, const Node& b) { return alu(Op::MUL, a, b); }
Node div(const Node& a, const Node& b) { return alu(Op::FDIV, a, b); }
Node neg(const Node& a) { return t_alu(Op::NEG, a->dtype, {a}); }
Node fill(const Node& like, double v) { return t_full(like->shape, v, like->dtype, like->device()); }
Node scale(const Node& a, double v) { return mul(a, fill(a, v)); }
Node unary(Op op, const Node& a) { return t_alu(op, a->dtype, {a}); }
// cond ? a : b, elementwise.
Node select(const Node& cond, const Node& a, const Node& b) { return t_alu(Op::WHERE, a->dtype, {cond, a, b}); }
Node compare(Op op, const Node& a, const Node& b) { return t_alu(op, DType::bool_, {a, b}); }

std::vector<Node> reduce_rule(const Node& n, const Node& g) {
  const Node& x = n->src[0];
  const Op op = static_cast<Op>(n->i[0]);
  std::vector<int64_t> axes(n->i.begin() + 1, n->i.end());
  const Node g_full = t_expand(g, x->shape);
  switch (op) {
    case Op::ADD: return {g_full};
    case Op::MUL: return {div(mul(t_expand(n, x->shape), g_full), x)};  // the product of the others (nan at 0)
    case Op::MAX:
    case Op::MIN: {
      // Ties share the gradient equally, as tinygrad's and PyTorch's max do.
      const Node hit = t_cast(compare(Op::CMPEQ, x, t_expand(n, x->shape)), x->dtype);
      const Node count = t_expand(t_reduce(hit, Op::ADD, axes), x->shape);
      return {div(mul(hit, g_full), count)};
    }
    default: return {nullptr};
  }
}

std::vector<Node> movement_rule(const Node& n, const Node& g) {
  const Node& x = n->src[0];
  const Shape& in = x->shape;
  switch (n->op) {
    case Op::RESHAPE: return {t_reshape(g, in)};
    case Op::PERMUTE: {
      std::vector<int64_t> inverse(n->i.size());
      for (size_t k = 0; k < n->i.size(); ++k) inverse[static_cast<size_t>(n->i[k])] = static_cast<int64_t>(k);
      return {t_permute(g, inverse)};
    }
    case Op::EXPAND: {
      std::vector<int64_t> axes;
      for (size_t k = 0; k < in.size(); ++k)
        if (in[k] != n->shape[k]) axes.push_back(static_cast<int64_t>(k));
      return {axes.empty() ? g : t_reduce(g, Op::ADD, axes)};
    }
    case Op::PAD: {  // the padding's value is a constant: only the source's region carries a gradient
      std::vector<int64_t> start_end;
      for (size_t k = 0; k < in.size(); ++k) {
        start_end.push_back(n->i[2 * k]);
        start_end.push_back(n->i[2 * k] + in[k]);
      }
      return {t_shrink(g, start_end)};
    }
    case Op::SHRINK: {
      std::vector<int64_t> before_after;
      for (size_t k = 0; k < in.size(); ++k) {
        before_after.push_back(n->i[2 * k]);
        before_after.push_back(in[k] - n->i[2 * k + 1]);
      }
      return {t_pad(g, before_after, 0.0)};
    }
    case Op::FLIP: return {t_flip(g, n->i)};
    default: return {nullptr};
  }
}

std::vector<Node> unary_rule(const Node& n, const Node& g) {
  const Node& x = n->src[0];
  switch (n->op) {
    case Op::NEG: return {neg(g)};
    case Op::EXP: return {mul(g, n)};
    case Op::EXP2: return {scale(mul(g, n), std::numbers::ln2)};
    case Op::LOG: return {div(g, x)};
    case Op::LOG2: return {div(g, scale(x, std::numbers::ln2))};
    case Op::SIN: return {mul(g, unary(Op::COS, x))};
    case Op::COS: return {neg(mul(g, unary(Op::SIN, x)))};
    case Op::SQRT: return {div(g, scale(n, 2.0))};
    case Op::RECIPROCAL: return {neg(mul(g, mul(n, n)))};
    default: return {nullptr};  // TRUNC: zero almost everywhere, no gradient (as tinygrad)
  }
}

std::vector<Node> binary_rule(const Node& n, const Node& g) {
  const Node &a = n->src[0], &b = n->src[1];
  switch (n->op) {
    case Op::ADD: return {g, g};
    case Op::SUB: return {g, neg(g)};
    case Op::MUL: return {mul(g, b), mul(g, a)};
    case Op::FDIV: return {div(g, b), neg(div(mul(g, n), b))};
    case Op::MAX:
    case Op::MIN: {
      // The chosen operand takes the gradient; on a tie each takes half.
      const bool is_max = n->op == Op::MAX;
      const Node a_wins = is_max ? compare(Op::CMPLT, b, a) : compare(Op::CMPLT, a, b);
      const Node b_wins = is_max ? compare(Op::CMPLT, a, b) : compare(Op::CMPLT, b, a);
      const Node zero = fill(g, 0.0), half = scale(g, 0.5);
      const Node tie = compare(Op::CMPEQ, a, b);
      return {select(a_wins, g, select(tie, half, zero)), select(b_wins, g, select(tie, half, zero))};
    }
    case Op::POW: {
      // d/da a^b = b a^(b-1) (0^0: b, so x^0 has gradient 0 and x^1 gradient 1 at 0);
      // d/db a^b = a^b ln a (at a = 0: 0, or -inf for b < 0, where a^b is already inf).
      const Node zero = fill(g, 0.0), one = fill(g, 1.0);
      const Node a_zero = compare(Op::CMPEQ, a, zero), b_zero = compare(Op::CMPEQ, b, zero);
      const Node both_zero = t_alu(Op::AND, DType::bool_, {a_zero, b_zero});
      const Node da = select(both_zero, b, mul(b, alu(Op::POW, a, alu(Op::SUB, b, one))));
      const Node db_at_zero = select(compare(Op::CMPLT, b, zero), fill(g, -INFINITY), zero);
      const Node db = select(a_zero, db_at_zero, mul(n, unary(Op::LOG, a)));
      return {mul(g, da), mul(g, db)};
    }
    default: return {nullptr, nullptr};  // integer arithmetic, comparisons, logic, shifts
  }
}

}  // namespace

std::vector<Node> gradient_rule(const Node& n, const Node& g) {
  std::vector<Node> out;
  if (is_movement(n->op)) out = movement_rule(n, g);
  else if (n->op == Op::REDUCE_AXIS) out = reduce_rule(n, g);
  else if (is_unary(n->op)) out = unary_rule(n, g);
  else if (is_binary(n->op)) out = binary_rule(n, g);
  else if (n->op == Op::WHERE) {
    const Node zero = fill(g, 0.0);
    out = {nullptr, select(n->src[0], g, zero), select(n->src[0], zero, g)};
  } else if (n->op == Op::CAST) out = {t_cast(g, n->src[0]->dtype)};
  else if (n->op == Op::CUSTOM_GRAD) out = custom_gradient(n, g);
  else if (n->op == Op::CONTIGUOUS) out = {g};
  else if (n->op == Op::NARROW) out = {make_node(Op::NARROW, g->dtype, {g, n->src[1]}, n->i)};  // 0 past the size
  else if (n->op == Op::COPY) out = {make_node(Op::COPY, g->dtype, {g}, {}, 0, n->src[0]->device())};
  out.resize(n->src.size());  // leaves, DETACH, ASSIGN, BITCAST: none
  // Only float values have gradients: an integer or bool source (an index, a mask) gets none.
  for (size_t k = 0; k < out.size(); ++k)
    if (out[k] && !is_float(n->src[k]->dtype)) out[k] = nullptr;
  return out;
}

}  // namespace hcq::fw
