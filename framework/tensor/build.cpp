#include "framework/tensor/build.hpp"

#include <mutex>
#include <unordered_map>

#include "framework/ir/shape_of.hpp"
#include "framework/ir/symbolic_dims.hpp"
#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string dims_str(const Node& x) {
  if (x->dim_vars.empty()) return shape_str(x->shape);
  std::string out = "(";
  for (size_t k = 0; k < x->shape.size(); ++k)
    out += (k ? ", " : "") + (x->dim_vars[k] ? dim_var_str(x->dim_vars[k]) : std::to_string(x->shape[k]));
  return out + (x->shape.size() == 1 ? ",)" : ")");
}

namespace {

// Movement that changes a symbolic dimension's extent or order (pad, shrink, flip) is refused: the masks that stand
// for the dimension's size assume its elements start at 0 and run up.
void refuse_on_symbolic(const Node& x, std::string_view op, const std::vector<bool>& touched) {
  for (size_t k = 0; k < x->dim_vars.size(); ++k)
    if (x->dim_vars[k] && touched[k])
      throw ShapeError(cat(op, ": dimension ", k, " of ", dims_str(x), " is symbolic (", dim_var_str(x->dim_vars[k]),
                           "); ", op, " only its concrete dimensions"));
}

}  // namespace

const std::string& canonical_device(const std::string& name) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string>* names = new std::unordered_map<std::string, std::string>();
  std::lock_guard lock(mu);
  auto it = names->find(name);
  if (it != names->end()) return it->second;
  std::string want = name;
  if (want.empty()) want = knobs::device().value_or("CPU");
  Device& dev = open_device(want);
  return names->emplace(name, dev.name()).first->second;
}

int norm_axis(int axis, size_t ndim, std::string_view op) {
  const int n = static_cast<int>(ndim);
  if (axis < -n || axis >= n || (n == 0 && axis != 0 && axis != -1))
    throw InvalidArgument(cat(op, ": axis ", axis, " is out of range for a tensor of ", ndim, " dimensions"));
  if (n == 0) return 0;
  return axis < 0 ? axis + n : axis;
}

Node t_const(Scalar v, DType t, const std::string& device) { return const_node(t, v.value, device); }

Node t_full(const Shape& shape, Scalar v, DType t, const std::string& device) {
  Node c = t_const(v, t, device);
  if (shape.empty()) return c;
  return t_expand(t_reshape(c, Shape(shape.size(), 1)), shape);
}

Node t_cast(const Node& x, DType t) {
  if (x->dtype == t) return x;
  if (x->op == Op::CONST) return const_node(t, x->const_value(), x->s);
  return make_node(Op::CAST, t, {x});
}

Node t_reshape(const Node& x, const Shape& shape) {
  if (x->shape == shape) return x;
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(cat("reshape: negative dimension in ", shape_str(shape)));
  if (numel(shape) != numel(x->shape))
    throw ShapeError(cat("reshape: cannot reshape ", shape_str(x->shape), " (", numel(x->shape), " elements) to ",
                         shape_str(shape), " (", numel(shape), " elements)"));
  if (!x->dim_vars.empty() && !reshape_dim_vars(x->shape, x->dim_vars, shape))
    throw ShapeError(cat("reshape: cannot reshape ", dims_str(x), " to ", shape_str(shape),
                         ": it would merge or split a symbolic dimension (keep each one a dimension of its own, with "
                         "the same number of elements before it)"));
  // Reshapes of reshapes collapse: only the source's shape matters.
  const Node& base = x->op == Op::RESHAPE ? x->src[0] : x;
  if (base->shape == shape) return base;
  return make_node(Op::RESHAPE, x->dtype, {base}, shape);
}

Node t_expand(const Node& x, const Shape& shape) {
  if (x->shape == shape) return x;
  if (shape.size() != x->shape.size())
    throw ShapeError(cat("expand: cannot expand ", shape_str(x->shape), " to ", shape_str(shape)));
  for (size_t k = 0; k < shape.size(); ++k)
    if (x->shape[k] != shape[k] && x->shape[k] != 1)
      throw ShapeError(cat("expand: cannot expand ", shape_str(x->shape), " to ", shape_str(shape), " (dimension ", k,
                           " is ", x->shape[k], ", not 1)"));
  return make_node(Op::EXPAND, x->dtype, {x}, shape);
}

Node t_permute(const Node& x, const std::vector<int64_t>& order) {
  bool identity = true;
  for (size_t k = 0; k < order.size(); ++k) identity &= order[k] == static_cast<int64_t>(k);
  if (identity) return x;
  return make_node(Op::PERMUTE, x->dtype, {x}, order);
}

Node t_pad(const Node& x, const std::vector<int64_t>& before_after, double value) {
  bool none = true;
  for (int64_t p : before_after) none &= p == 0;
  if (none) return x;
  std::vector<bool> touched(x->shape.size());
  for (size_t k = 0; k < touched.size(); ++k) touched[k] = before_after[2 * k] != 0 || before_after[2 * k + 1] != 0;
  refuse_on_symbolic(x, "pad", touched);
  return make_node(Op::PAD, x->dtype, {x}, before_after, value);
}

Node t_shrink(const Node& x, const std::vector<int64_t>& start_end) {
  bool none = true;
  for (size_t k = 0; k < x->shape.size(); ++k) none &= start_end[2 * k] == 0 && start_end[2 * k + 1] == x->shape[k];
  if (none) return x;
  std::vector<bool> touched(x->shape.size());
  for (size_t k = 0; k < touched.size(); ++k) touched[k] = start_end[2 * k] != 0 || start_end[2 * k + 1] != x->shape[k];
  refuse_on_symbolic(x, "shrink", touched);
  return make_node(Op::SHRINK, x->dtype, {x}, start_end);
}

Node t_flip(const Node& x, const std::vector<int64_t>& flags) {
  bool none = true;
  for (size_t k = 0; k < flags.size(); ++k) none &= flags[k] == 0 || x->shape[k] <= 1;
  if (none) return x;
  std::vector<bool> touched(x->shape.size());
  for (size_t k = 0; k < touched.size(); ++k) touched[k] = flags[k] != 0;
  refuse_on_symbolic(x, "flip", touched);
  return make_node(Op::FLIP, x->dtype, {x}, flags);
}

Node t_reduce(const Node& x, Op op, const std::vector<int64_t>& axes) {
  std::vector<int64_t> arg{static_cast<int64_t>(op)};
  for (int64_t a : axes)
    if (x->shape[static_cast<size_t>(a)] != 1) arg.push_back(a);
  if (arg.size() == 1) return x;  // reducing size-1 axes changes nothing
  return make_node(Op::REDUCE_AXIS, x->dtype, {x}, std::move(arg));
}

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t k = 0; k < n; ++k) {
    const int64_t da = k + a.size() >= n ? a[k + a.size() - n] : 1;
    const int64_t db = k + b.size() >= n ? b[k + b.size() - n] : 1;
    if (da != db && da != 1 && db != 1)
      throw ShapeError(cat(op, ": shapes ", shape_str(a), " and ", shape_str(b), " cannot be broadcast together"));
    out[k] = da == 1 ? db : da;
  }
  return out;
}

Node t_broadcast(const Node& x, const Shape& shape, std::string_view op) {
  if (x->shape == shape) return x;
  if (x->shape.size() > shape.size())
    throw ShapeError(cat(op, ": cannot broadcast ", shape_str(x->shape), " to ", shape_str(shape)));
  Shape padded(shape.size() - x->shape.size(), 1);
  padded.insert(padded.end(), x->shape.begin(), x->shape.end());
  for (size_t k = 0; k < shape.size(); ++k)
    if (padded[k] != shape[k] && padded[k] != 1)
      throw ShapeError(cat(op, ": cannot broadcast ", shape_str(x->shape), " to ", shape_str(shape)));
  return t_expand(t_reshape(x, padded), shape);
}

void check_dims_agree(const std::vector<const Node*>& operands, std::string_view op) {
  size_t rank = 0;
  for (const Node* x : operands) rank = std::max(rank, (*x)->shape.size());
  for (size_t k = 0; k < rank; ++k) {
    const Node* with_var = nullptr;  // the first operand symbolic at output dimension k
    size_t var_axis = 0;
    for (const Node* x : operands) {
      const size_t r = (*x)->shape.size();
      if (k + r >= rank && !(*x)->dim_vars.empty() && (*x)->dim_vars[k + r - rank]) {
        with_var = x;
        var_axis = k + r - rank;
        break;
      }
    }
    if (!with_var) continue;
    const Node& var = (*with_var)->dim_vars[var_axis];
    for (const Node* x : operands) {
      const size_t r = (*x)->shape.size();
      if (k + r < rank) continue;  // broadcast along a new leading dimension
      const size_t a = k + r - rank;
      const Node other = (*x)->dim_vars.empty() ? nullptr : (*x)->dim_vars[a];
      if (other == var || (!other && (*x)->shape[a] == 1)) continue;  // the same variable, or broadcast from size 1
      throw ShapeError(cat(op, ": dimension ", k, " is ", dim_var_str(var), " in ", dims_str(*with_var), " but ",
                           other ? dim_var_str(other) : std::to_string((*x)->shape[a]), " in ", dims_str(*x),
                           " (narrow both with the same bound variable)"));
    }
  }
}

Node t_narrow(const Node& x, int axis, const Node& bound) {
  if (bound->op != Op::BIND)
    throw InvalidArgument(cat("narrow: the size must be a bound Variable (Variable::bind), not a ", op_name(bound->op),
                              " ", dims_str(bound)));
  const size_t a = static_cast<size_t>(norm_axis(axis, x->shape.size(), "narrow"));
  const Node& var = bound->src.at(0);
  if (!x->dim_vars.empty() && x->dim_vars[a])
    throw ShapeError(cat("narrow: dimension ", a, " of ", dims_str(x), " is symbolic already"));
  if (var->i.at(1) > x->shape[a])
    throw ShapeError(cat("narrow: ", dim_var_str(bound), " can exceed dimension ", a, " of ", dims_str(x),
                         ", which is ", x->shape[a]));
  if (var->i.at(0) < 0) throw ShapeError(cat("narrow: ", dim_var_str(bound), " can be negative"));
  // The storage keeps the variable's maximum. The BIND is made on x's device, where x's kernels read its value.
  std::vector<int64_t> start_end;
  for (size_t k = 0; k < x->shape.size(); ++k) {
    start_end.push_back(0);
    start_end.push_back(k == a ? var->i[1] : x->shape[k]);
  }
  const Node kept = t_shrink(x, start_end);
  const Node b = make_node(Op::BIND, DType::int32, {var}, {bound->i.at(0)}, 0, x->device());
  return make_node(Op::NARROW, x->dtype, {kept, b}, {static_cast<int64_t>(a)});
}

Node t_alu(Op op, DType out, std::vector<Node> src) { return make_node(op, out, std::move(src)); }

Node t_index(int64_t n, DType t, const std::string& device) {
  return t_cast(make_node(Op::INDEX, kIndex, {}, {n}, 0, device), t);
}

}  // namespace hcq::fw
