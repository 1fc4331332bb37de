#include "framework/tensor/build.hpp"

#include <mutex>
#include <unordered_map>

#include "framework/ir/shape_of.hpp"
#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
  return out + (s.size() == 1 ? ",)" : ")");
}

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
  return make_node(Op::PAD, x->dtype, {x}, before_after, value);
}

Node t_shrink(const Node& x, const std::vector<int64_t>& start_end) {
  bool none = true;
  for (size_t k = 0; k < x->shape.size(); ++k) none &= start_end[2 * k] == 0 && start_end[2 * k + 1] == x->shape[k];
  if (none) return x;
  return make_node(Op::SHRINK, x->dtype, {x}, start_end);
}

Node t_flip(const Node& x, const std::vector<int64_t>& flags) {
  bool none = true;
  for (size_t k = 0; k < flags.size(); ++k) none &= flags[k] == 0 || x->shape[k] <= 1;
  if (none) return x;
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

Node t_alu(Op op, DType out, std::vector<Node> src) { return make_node(op, out, std::move(src)); }

Node t_index(int64_t n, DType t, const std::string& device) {
  return t_cast(make_node(Op::INDEX, kIndex, {}, {n}, 0, device), t);
}

}  // namespace hcq::fw
