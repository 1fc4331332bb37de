// Tensor: the handle, creation from host data and by value, casts, realisation and reading back.
#include "hcq/tensor.hpp"

#include <cmath>
#include <cstring>

#include "framework/engine/realize.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/ir/symbolic_dims.hpp"
#include "framework/tensor/build.hpp"
#include "framework/tensor/impl.hpp"
#include "hcq/buffer.hpp"
#include "hcq/registry.hpp"

namespace hcq {

using namespace fw;

// Under NoGrad, results of ops come out detached. Buffer views (what realize and assign targets are) stay as
// they are: a DETACH adds nothing there, since no gradient flows out of a buffer.
Tensor::Tensor(std::shared_ptr<const fw::NodeData> node) : impl_(std::make_shared<Impl>()) {
  if (no_grad_active() && node->op != Op::DETACH && !is_buffer_view(node)) {
    const DType dtype = node->dtype;
    node = make_node(Op::DETACH, dtype, {std::move(node)});
  }
  impl_->node = std::move(node);
}

const std::shared_ptr<const fw::NodeData>& Tensor::node() const {
  if (!impl_) throw InvalidArgument("tensor: the tensor is empty (default-constructed)");
  return impl_->node;
}

const Shape& Tensor::shape() const { return node()->shape; }
int64_t Tensor::shape(int axis) const { return shape()[static_cast<size_t>(norm_axis(axis, ndim(), "shape"))]; }
int64_t Tensor::numel() const { return fw::numel(shape()); }
Shape Tensor::bound_shape() const {
  const Node& n = node();
  if (n->dim_vars.empty()) return n->shape;
  Shape out = n->shape;
  for (size_t k = 0; k < out.size(); ++k) out[k] = bound_size(n->dim_vars[k], out[k]);
  return out;
}
int64_t Tensor::bound_numel() const { return fw::numel(bound_shape()); }
DType Tensor::dtype() const { return node()->dtype; }
const std::string& Tensor::device() const { return node()->device(); }

Tensor::Tensor(std::span<const std::byte> bytes, Shape shape, DType dtype, std::string device) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(hcq::cat("tensor: negative dimension in ", shape_str(shape)));
  const int64_t n = fw::numel(shape);
  if (bytes.size() % dtype_size(dtype) != 0)
    throw ShapeError(hcq::cat("tensor: ", bytes.size(), " bytes of data for shape ", shape_str(shape),
                              " are not a whole number of ", dtype_name(dtype), " elements (", dtype_size(dtype),
                              " bytes each)"));
  if (static_cast<uint64_t>(n) * dtype_size(dtype) != bytes.size())
    throw ShapeError(hcq::cat("tensor: ", bytes.size() / dtype_size(dtype), " elements of data for shape ",
                              shape_str(shape), " (", n, " elements)"));
  Node buf = new_buffer_node(canonical_device(device), dtype, n);
  if (n > 0) buf->payload->copyin(bytes);
  impl_ = std::make_shared<Impl>();
  impl_->node = t_reshape(buf, shape);
}

Tensor Tensor::scalar(Scalar v, DType dtype, std::string device) {
  return Tensor(t_const(v, dtype, canonical_device(device)));
}

namespace {
DType kind_dtype(Scalar v) {
  return v.kind == Scalar::boolean   ? DType::bool_
         : v.kind == Scalar::integer ? dtypes::default_int
                                     : dtypes::default_float;
}
}  // namespace

Tensor Tensor::scalar(Scalar v) { return scalar(v, kind_dtype(v)); }
Tensor Tensor::full(Shape shape, Scalar v, DType dtype, std::string device) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(hcq::cat("full: negative dimension in ", shape_str(shape)));
  return Tensor(t_full(shape, v, dtype, canonical_device(device)));
}
Tensor Tensor::full(Shape shape, Scalar v) { return full(std::move(shape), v, kind_dtype(v)); }
Tensor Tensor::zeros(Shape shape, DType dtype, std::string device) {
  return full(std::move(shape), 0, dtype, std::move(device));
}
Tensor Tensor::ones(Shape shape, DType dtype, std::string device) {
  return full(std::move(shape), 1, dtype, std::move(device));
}

Tensor Tensor::empty(Shape shape, DType dtype, std::string device) {
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(hcq::cat("empty: negative dimension in ", shape_str(shape)));
  return Tensor(t_reshape(new_buffer_node(canonical_device(device), dtype, fw::numel(shape)), shape));
}

Tensor Tensor::arange(Scalar stop) { return arange(0, stop, 1); }
Tensor Tensor::arange(Scalar start, Scalar stop, Scalar step, std::string device) {
  const bool any_float =
      start.kind == Scalar::floating || stop.kind == Scalar::floating || step.kind == Scalar::floating;
  return arange(start, stop, step, any_float ? dtypes::default_float : dtypes::default_int, std::move(device));
}
Tensor Tensor::arange(Scalar start, Scalar stop, Scalar step, DType dtype, std::string device) {
  if (step.value == 0) throw InvalidArgument("arange: step must not be 0");
  const double span = (stop.value - start.value) / step.value;
  const int64_t n = span > 0 ? static_cast<int64_t>(std::ceil(span)) : 0;
  const std::string& dev = canonical_device(device);
  // Computed in the wider of the target type and int32/float32, so integer steps stay exact.
  const DType calc = is_float(dtype) ? dtypes::float32 : promote_types(dtype, DType::int32);
  Node idx = t_index(n, calc, dev);
  Node v =
      t_alu(Op::ADD, calc, {t_alu(Op::MUL, calc, {idx, t_full({n}, step, calc, dev)}), t_full({n}, start, calc, dev)});
  return Tensor(t_cast(v, dtype));
}

Tensor Tensor::eye(int64_t n, DType dtype, std::string device) {
  if (n < 0) throw InvalidArgument(hcq::cat("eye: n must not be negative (got ", n, ")"));
  const std::string& dev = canonical_device(device);
  Node i = t_index(n, DType::int32, dev);
  Node rows = t_expand(t_reshape(i, {n, 1}), {n, n}), cols = t_expand(t_reshape(i, {1, n}), {n, n});
  return Tensor(t_cast(t_alu(Op::CMPEQ, DType::bool_, {rows, cols}), dtype));
}

Tensor Tensor::cast(DType t) const { return Tensor(t_cast(node(), t)); }

Tensor Tensor::bitcast(DType t) const {
  if (dtype_size(t) != dtype_size(dtype()))
    throw DTypeError(hcq::cat("bitcast: ", dtype_name(dtype()), " (", dtype_size(dtype()), " bytes) to ", dtype_name(t),
                              " (", dtype_size(t), " bytes): the sizes differ"));
  if (t == dtype()) return *this;
  return Tensor(make_node(Op::BITCAST, t, {node()}));
}

Tensor Tensor::contiguous() const { return Tensor(make_node(Op::CONTIGUOUS, dtype(), {node()})); }

Tensor& Tensor::realize() {
  realize({*this});
  return *this;
}

void Tensor::realize(std::vector<Tensor> tensors) {
  std::vector<Node> roots;
  roots.reserve(tensors.size());
  for (const Tensor& t : tensors) roots.push_back(t.node());
  std::vector<Node> done = realize_nodes(roots);
  for (size_t k = 0; k < tensors.size(); ++k) {
    Impl& impl = *tensors[k].impl_;
    if (impl.node != done[k] && impl.node->op != Op::ASSIGN) impl.computed_from = impl.node;
    impl.node = done[k];
  }
}

Tensor& Tensor::assign(const Tensor& o) {
  const Node& target = node();
  const Node* base = assign_base(target);
  if (!base)
    throw InvalidArgument(hcq::cat("assign: the target ", shape_str(shape()),
                                   " is not a realized buffer (realize it, or "
                                   "make it with empty/zeros and realize, before assigning to it)"));
  // The masks of a symbolic dimension leave the elements past its size undefined: stored into a buffer, they would
  // overwrite what is there.
  if (!target->dim_vars.empty() || !o.node()->dim_vars.empty())
    throw ShapeError(hcq::cat("assign: ", dims_str(o.node()), " into ", dims_str(target),
                              ": a tensor with a symbolic dimension is not assigned (yet); compute it and read it, or "
                              "return it from the TinyJit"));
  Node value = t_cast(t_broadcast(o.node(), shape(), "assign"), dtype());
  if (value->device() != device())
    throw InvalidArgument(hcq::cat("assign: the value is on ", value->device(), ", the target on ", device()));
  const Node& buf = (*base)->op == Op::RESHAPE ? (*base)->src[0] : *base;
  if (buf->shared_by_tensors() && base == &target) {
    // Other tensors hold this buffer as their value too (realized from an equal expression): this one gets a
    // buffer of its own for the new value, and the shared one is left as it is.
    Node own = t_reshape(new_buffer_node(buf->s, dtype(), numel()), shape());
    impl_->node = make_node(Op::ASSIGN, dtype(), {own, value});
    impl_->computed_from.reset();
    return *this;
  }
  // Lazy tensors realized into this buffer earlier must not read the new contents as their value.
  buf->unlink_realized_from();
  impl_->node = make_node(Op::ASSIGN, dtype(), {target, value});
  impl_->computed_from.reset();
  return *this;
}

Tensor Tensor::to(const std::string& device_name) const {
  const std::string& dev = canonical_device(device_name);
  if (dev == device()) return *this;
  return Tensor(make_node(Op::COPY, dtype(), {node()}, {}, 0, dev));
}

void Tensor::read_into(std::span<std::byte> out, DType want) const {
  if (want != dtype())
    throw DTypeError(hcq::cat("data: the tensor is ", dtype_name(dtype()), ", not ", dtype_name(want),
                              " (cast it, or use tolist())"));
  Tensor self = *this;
  self.realize();
  if (self.node()->dim_vars.empty()) return read_buffer_view(self.node(), out);
  // Symbolic dimensions: the buffer holds the maxima's storage; the elements present are those below each
  // dimension's bound size, gathered row by row (the last dimension's present elements are contiguous).
  const Shape full = shape(), bound = bound_shape();
  const size_t es = dtype_size(dtype());
  std::vector<std::byte> all(static_cast<size_t>(fw::numel(full)) * es);
  read_buffer_view(self.node(), all);
  if (out.empty()) return;
  const size_t rank = full.size();
  const size_t row = static_cast<size_t>(bound[rank - 1]) * es;
  std::vector<int64_t> at(rank, 0);
  for (size_t o = 0; o < out.size(); o += row) {
    int64_t flat = 0;
    for (size_t k = 0; k < rank; ++k) flat = flat * full[k] + at[k];
    std::memcpy(out.data() + o, all.data() + static_cast<size_t>(flat) * es, row);
    for (size_t k = rank - 1; k-- > 0;) {  // the next row: odometer over every dimension but the last
      if (++at[k] < bound[k]) break;
      at[k] = 0;
    }
  }
}

std::vector<double> Tensor::tolist() const {
  const size_t n = static_cast<size_t>(bound_numel());
  std::vector<double> out(n);
  auto conv = [&]<class T>(T) {
    std::vector<T> v = data<T>();
    for (size_t k = 0; k < n; ++k) {
      if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) out[k] = v[k].to_float();
      else out[k] = static_cast<double>(v[k]);
    }
  };
  switch (dtype()) {
    case DType::bool_: conv(bool{}); break;
    case DType::int8: conv(int8_t{}); break;
    case DType::uint8: conv(uint8_t{}); break;
    case DType::int32: conv(int32_t{}); break;
    case DType::uint32: conv(uint32_t{}); break;
    case DType::int64: conv(int64_t{}); break;
    case DType::float16: conv(float16_t{}); break;
    case DType::bfloat16: conv(bfloat16_t{}); break;
    case DType::float32: conv(float{}); break;
  }
  return out;
}

double Tensor::item() const {
  if (bound_numel() != 1)
    throw ShapeError(hcq::cat("item: the tensor has ", bound_numel(), " elements ", dims_str(node()), ", not 1"));
  return tolist()[0];
}

FrameworkCounters framework_counters() { return fw::counters(); }

}  // namespace hcq
