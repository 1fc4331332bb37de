#include "framework/ir/symbolic_dims.hpp"

#include <algorithm>

#include "hcq/error.hpp"

namespace hcq::fw {
namespace {

bool any_set(const std::vector<Node>& v) {
  return std::any_of(v.begin(), v.end(), [](const Node& n) { return n != nullptr; });
}

std::vector<Node> or_empty(std::vector<Node> v) { return any_set(v) ? v : std::vector<Node>{}; }

}  // namespace

std::optional<std::vector<Node>> reshape_dim_vars(const Shape& from, const std::vector<Node>& vars, const Shape& to) {
  std::vector<Node> out(to.size());
  for (size_t a = 0; a < vars.size(); ++a) {
    if (!vars[a]) continue;
    int64_t before = 1;
    for (size_t k = 0; k < a; ++k) before *= from[k];
    int64_t prefix = 1;
    bool found = false;
    for (size_t b = 0; b < to.size() && !found; ++b) {
      if (prefix == before && to[b] == from[a] && !out[b]) {
        out[b] = vars[a];
        found = true;
      }
      prefix *= to[b];
    }
    if (!found) return std::nullopt;
  }
  return out;
}

std::vector<Node> dim_vars_of(const NodeData& n) {
  if (n.shape.empty()) return {};
  if (n.op != Op::NARROW && std::all_of(n.src.begin(), n.src.end(), [](const Node& s) { return s->dim_vars.empty(); }))
    return {};
  const std::vector<Node>& in = n.src.at(0)->dim_vars;
  switch (n.op) {
    case Op::NARROW: {
      std::vector<Node> out = in.empty() ? std::vector<Node>(n.shape.size()) : in;
      out.at(static_cast<size_t>(n.i.at(0))) = n.src.at(1);
      return out;
    }
    case Op::RESHAPE: {
      if (in.empty()) return {};
      // A reshape that would break a symbolic dimension is refused where it is built (t_reshape); here the
      // dimensions that cannot be followed are left out.
      return or_empty(reshape_dim_vars(n.src[0]->shape, in, n.shape).value_or(std::vector<Node>{}));
    }
    case Op::PERMUTE: {
      if (in.empty()) return {};
      std::vector<Node> out(n.shape.size());
      for (size_t k = 0; k < out.size(); ++k) out[k] = in[static_cast<size_t>(n.i[k])];
      return out;
    }
    case Op::REDUCE_AXIS: {
      if (in.empty()) return {};
      std::vector<Node> out = in;
      for (size_t k = 1; k < n.i.size(); ++k) out[static_cast<size_t>(n.i[k])] = nullptr;
      return or_empty(std::move(out));
    }
    default: {
      // Elementwise ops, expand, pad, shrink, flip, copies, assigns: the dimensions line up with every source of
      // the same rank (a broadcast operand was expanded from size 1 there), and the builders refused sources whose
      // variables disagree, so each dimension takes the first source's variable it has.
      std::vector<Node> out(n.shape.size());
      for (const Node& s : n.src)
        if (!s->dim_vars.empty() && s->shape.size() == n.shape.size())
          for (size_t k = 0; k < out.size(); ++k)
            if (!out[k]) out[k] = s->dim_vars[k];
      return or_empty(std::move(out));
    }
  }
}

int64_t bound_size(const Node& var, int64_t max) {
  if (!var) return max;
  if (var->op != Op::BIND)
    throw InvalidArgument(hcq::cat("symbolic dimension: the variable ", var->src.at(0)->s, " is not bound to a value"));
  return var->i.at(0);
}

std::string dim_var_str(const Node& var) {
  const Node& def = var->src.at(0);
  std::string out = def->s.empty() ? std::string("?") : def->s;
  if (var->op == Op::BIND) out += hcq::cat("=", var->i.at(0));
  return out + hcq::cat(" (", def->i.at(0), "..", def->i.at(1), ")");
}

}  // namespace hcq::fw
