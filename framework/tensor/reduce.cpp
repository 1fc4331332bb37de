// Reductions and what is built from them: sums, extremes, statistics, arg-extremes, softmax, cumsum, matmul.
#include <algorithm>
#include <cmath>

#include "framework/ir/shape_of.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

using namespace fw;

namespace {

std::vector<int64_t> norm_axes(const std::vector<int>& axes, size_t ndim, std::string_view op) {
  std::vector<int64_t> out;
  if (axes.empty()) {
    for (size_t k = 0; k < ndim; ++k) out.push_back(static_cast<int64_t>(k));
    return out;
  }
  for (int a : axes) {
    const int64_t n = norm_axis(a, ndim, op);
    if (std::find(out.begin(), out.end(), n) != out.end())
      throw InvalidArgument(hcq::cat(op, ": axis ", a, " is given twice"));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Drops the reduced axes unless keepdim.
Node finish(const Node& reduced, const std::vector<int64_t>& axes, bool keepdim) {
  if (keepdim) return reduced;
  Shape out;
  for (size_t k = 0; k < reduced->shape.size(); ++k)
    if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(k)) == axes.end()) out.push_back(reduced->shape[k]);
  return t_reshape(reduced, out);
}

// The type sums and products accumulate in (tinygrad's rule): int32 for small signed integers and bool, uint32 for
// small unsigned ones, int64 stays, halves accumulate in float32.
DType acc_dtype(DType t) {
  if (t == DType::bool_ || t == DType::int8 || t == DType::int32) return DType::int32;
  if (t == DType::uint8 || t == DType::uint32) return DType::uint32;
  if (t == DType::float16 || t == DType::bfloat16) return DType::float32;
  return t;
}

Tensor reduce(const Tensor& x, Op op, const std::vector<int>& axes, bool keepdim, std::string_view name) {
  const std::vector<int64_t> ax = norm_axes(axes, x.ndim(), name);
  return Tensor(finish(t_reduce(x.node(), op, ax), ax, keepdim));
}

Tensor accumulate(const Tensor& x, Op op, const std::vector<int>& axes, bool keepdim, std::string_view name) {
  const DType acc = acc_dtype(x.dtype());
  Tensor r = reduce(x.cast(acc), op, axes, keepdim, name);
  return is_float(x.dtype()) ? r.cast(x.dtype()) : r;
}

// The number of elements a reduction over `axes` takes, less `correction`, as x's float dtype: a constant, or a
// lazy expression of the variables of the symbolic dimensions among them (one schedule for every value).
Tensor count(const Tensor& x, const std::vector<int>& axes, std::string_view name, int correction = 0) {
  int64_t n = 1;
  std::vector<Tensor> vars;
  for (int64_t a : norm_axes(axes, x.ndim(), name)) {
    const Node& var = x.node()->dim_vars.empty() ? nullptr : x.node()->dim_vars[static_cast<size_t>(a)];
    if (var) vars.emplace_back(var);
    else n *= x.shape()[static_cast<size_t>(a)];
  }
  if (vars.empty())
    return Tensor::scalar(static_cast<double>(std::max<int64_t>(n - correction, 0)), x.dtype(), x.device());
  Tensor c = Tensor::scalar(static_cast<int>(n), DType::int32, x.device());
  for (const Tensor& v : vars) c = c.mul(v);
  return c.sub(correction).maximum(0).cast(x.dtype());
}

}  // namespace

Tensor Tensor::sum(std::vector<int> axes, bool keepdim) const {
  return accumulate(*this, Op::ADD, axes, keepdim, "sum");
}
Tensor Tensor::prod(std::vector<int> axes, bool keepdim) const {
  return accumulate(*this, Op::MUL, axes, keepdim, "prod");
}
Tensor Tensor::max(std::vector<int> axes, bool keepdim) const { return reduce(*this, Op::MAX, axes, keepdim, "max"); }
Tensor Tensor::min(std::vector<int> axes, bool keepdim) const { return reduce(*this, Op::MIN, axes, keepdim, "min"); }

Tensor Tensor::mean(std::vector<int> axes, bool keepdim) const {
  const Tensor x = is_float(dtype()) ? *this : cast(dtypes::default_float);
  return x.sum(axes, keepdim).div(count(x, axes, "mean"));
}

Tensor Tensor::var(std::vector<int> axes, bool keepdim, int correction) const {
  const Tensor x = is_float(dtype()) ? *this : cast(dtypes::default_float);
  const Tensor d = x.sub(x.mean(axes, true));
  return d.mul(d).sum(axes, keepdim).div(count(x, axes, "var", correction));
}

Tensor Tensor::std(std::vector<int> axes, bool keepdim, int correction) const {
  return var(std::move(axes), keepdim, correction).sqrt();
}

// The first index of the extreme: among positions equal to the extreme, the largest of (n - index).
Tensor Tensor::argmax(int axis, bool keepdim) const {
  const int a = norm_axis(axis, ndim(), "argmax");
  const int64_t n = shape()[static_cast<size_t>(a)];
  if (n == 0) throw ShapeError(hcq::cat("argmax: axis ", axis, " of ", shape_str(shape()), " is empty"));
  Shape idx_shape(ndim(), 1);
  idx_shape[static_cast<size_t>(a)] = n;
  Tensor rev = Tensor(t_reshape(t_index(n, DType::int32, device()), idx_shape)).mul(-1).add(static_cast<int>(n));
  // Over a symbolic axis the positions are narrowed by its variable too (the ones past it are not there).
  if (const Node& var = node()->dim_vars.empty() ? nullptr : node()->dim_vars[static_cast<size_t>(a)])
    rev = rev.narrow(a, Tensor(var));
  const Tensor hit = eq(max(a, true));
  return Tensor::scalar(static_cast<int>(n), DType::int32, device()).sub(hit.where(rev, 0).max(a, keepdim));
}
Tensor Tensor::argmin(int axis, bool keepdim) const {
  if (dtype() == DType::bool_) return logical_not().argmax(axis, keepdim);
  if (is_unsigned(dtype())) return cast(DType::int64).neg().argmax(axis, keepdim);
  return neg().argmax(axis, keepdim);
}
Tensor Tensor::argmax() const { return flatten().argmax(0); }
Tensor Tensor::argmin() const { return flatten().argmin(0); }

Tensor Tensor::any(std::vector<int> axes, bool keepdim) const {
  return reduce(cast(DType::bool_), Op::MAX, axes, keepdim, "any");
}
Tensor Tensor::all(std::vector<int> axes, bool keepdim) const {
  return reduce(cast(DType::bool_), Op::MIN, axes, keepdim, "all");
}

Tensor Tensor::softmax(int axis) const {
  const Tensor x = is_float(dtype()) ? *this : cast(dtypes::default_float);
  const Tensor e = x.sub(x.max(axis, true)).exp();
  return e.div(e.sum(axis, true));
}

Tensor Tensor::log_softmax(int axis) const {
  const Tensor x = is_float(dtype()) ? *this : cast(dtypes::default_float);
  const Tensor shifted = x.sub(x.max(axis, true));
  return shifted.sub(shifted.exp().sum(axis, true).log());
}

Tensor Tensor::logsumexp(int axis, bool keepdim) const {
  const Tensor x = is_float(dtype()) ? *this : cast(dtypes::default_float);
  const Tensor m = x.max(axis, true);
  // An all -inf row has max -inf: shift by 0 there so the result is -inf, not nan.
  const Tensor safe = m.eq(-INFINITY).where(0.0, m);
  const Tensor out = x.sub(safe).exp().sum(axis, true).log().add(safe);
  return keepdim ? out : out.squeeze(axis);
}

// out[..., i] = sum over j <= i of x[..., j]: x broadcast against a lower-triangular mask, then summed.
Tensor Tensor::cumsum(int axis) const {
  if (ndim() == 0) return *this;
  const int a = norm_axis(axis, ndim(), "cumsum");
  const int64_t n = shape()[static_cast<size_t>(a)];
  const Tensor x = transpose(a, -1);  // the axis last
  const Tensor j = Tensor(t_index(n, DType::int32, device()));
  const Tensor mask = j.reshape({1, n}).le(j.reshape({n, 1}));  // [i, j]: j <= i
  const Tensor s = mask.where(x.unsqueeze(-2), Tensor::scalar(0, x.dtype(), device())).sum(-1);
  return s.transpose(a, -1);
}

Tensor Tensor::matmul(const Tensor& o) const {
  if (ndim() == 0 || o.ndim() == 0)
    throw ShapeError(hcq::cat("matmul: both operands need at least one dimension, got ", shape_str(shape()), " and ",
                              shape_str(o.shape())));
  const Tensor a = ndim() == 1 ? unsqueeze(0) : *this;
  const Tensor b = o.ndim() == 1 ? o.unsqueeze(-1) : o;
  const int64_t k = a.shape(-1);
  if (b.shape(-2) != k)
    throw ShapeError(hcq::cat("matmul: shapes ", shape_str(shape()), " and ", shape_str(o.shape()), " do not align (",
                              k, " != ", b.shape(-2), ")"));
  const Shape batch_a(a.shape().begin(), a.shape().end() - 2), batch_b(b.shape().begin(), b.shape().end() - 2);
  try {
    broadcast_shape(batch_a, batch_b, "matmul");
  } catch (const ShapeError&) {
    throw ShapeError(hcq::cat("matmul: shapes ", shape_str(shape()), " and ", shape_str(o.shape()),
                              " cannot be broadcast together (batch dimensions ", shape_str(batch_a), " and ",
                              shape_str(batch_b), ")"));
  }
  // (..., M, 1, K) * (..., 1, N, K), summed over K.
  const Tensor x = a.unsqueeze(-2), y = b.transpose(-1, -2).unsqueeze(-3);
  const Tensor prod = x.mul(y);
  // Half types multiply in float32 (a product of two of them is exact there), sum in float32 and round once, as
  // PyTorch's and the matrix units' (AMX, WMMA, MMA) products do: the CPU device's bf16 tiles (render_c.cpp) take
  // this form.
  const DType t = prod.dtype();
  Tensor out = t == DType::float16 || t == DType::bfloat16
                   ? x.cast(DType::float32).mul(y.cast(DType::float32)).sum(-1).cast(t)
                   : prod.sum(-1);
  if (ndim() == 1) out = out.squeeze(-2);
  if (o.ndim() == 1) out = out.squeeze(-1);
  return out;
}

}  // namespace hcq
