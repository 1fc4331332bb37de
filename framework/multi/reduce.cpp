// The MultiTensor ops that combine devices: reductions (over the split axis: a partial result per device, then an
// allreduce) and matmul (a split inner dimension gives partial products, summed by an allreduce).
#include <algorithm>

#include "framework/multi/layout.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/multi.hpp"

namespace hcq {

using fw::shape_str;

namespace {

Tensor reduce_part(const Tensor& t, ReduceOp op, const std::vector<int>& axes) {
  switch (op) {
    case ReduceOp::sum: return t.sum(axes, true);
    case ReduceOp::prod: return t.prod(axes, true);
    case ReduceOp::max: return t.max(axes, true);
    case ReduceOp::min: return t.min(axes, true);
  }
  throw InvalidArgument("reduce: unknown op");
}

// The shape with `axes` removed (keepdim false).
Shape drop(const Shape& shape, const std::vector<int>& axes) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (std::find(axes.begin(), axes.end(), static_cast<int>(d)) == axes.end()) out.push_back(shape[d]);
  return out;
}

}  // namespace

MultiTensor MultiTensor::reduce(ReduceOp op, std::vector<int> axes, bool keepdim, const char* what) const {
  if (axes.empty())
    for (size_t d = 0; d < ndim(); ++d) axes.push_back(static_cast<int>(d));
  for (int& a : axes) a = fw::norm_axis(a, ndim(), what);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const bool across = axis_ != replicated && std::find(axes.begin(), axes.end(), axis_) != axes.end();
  std::vector<Tensor> partial;
  for (const Tensor& p : parts_) partial.push_back(reduce_part(p, op, axes));
  int ax = axis_;
  if (across) {
    // Each device holds the reduction of its rows; combining them is the allreduce, which leaves the whole result
    // on every device.
    partial = allreduce(partial, op);
    ax = replicated;
  }
  Shape shape = shape_;
  for (int a : axes) shape[static_cast<size_t>(a)] = 1;
  if (ax != replicated) shape[static_cast<size_t>(ax)] = shape_[static_cast<size_t>(ax)];
  if (!keepdim) {
    for (Tensor& t : partial) t = t.reshape(drop(t.shape(), axes));
    if (ax != replicated)
      ax -= static_cast<int>(std::count_if(axes.begin(), axes.end(), [&](int a) { return a < ax; }));
    shape = drop(shape, axes);
  }
  return MultiTensor(std::move(partial), devices_, ax, std::move(shape));
}

MultiTensor MultiTensor::sum(std::vector<int> axes, bool keepdim) const {
  return reduce(ReduceOp::sum, std::move(axes), keepdim, "sum");
}
MultiTensor MultiTensor::max(std::vector<int> axes, bool keepdim) const {
  return reduce(ReduceOp::max, std::move(axes), keepdim, "max");
}
MultiTensor MultiTensor::min(std::vector<int> axes, bool keepdim) const {
  return reduce(ReduceOp::min, std::move(axes), keepdim, "min");
}
MultiTensor MultiTensor::prod(std::vector<int> axes, bool keepdim) const {
  return reduce(ReduceOp::prod, std::move(axes), keepdim, "prod");
}

MultiTensor MultiTensor::mean(std::vector<int> axes, bool keepdim) const {
  if (axes.empty())
    for (size_t d = 0; d < ndim(); ++d) axes.push_back(static_cast<int>(d));
  int64_t count = 1;
  std::vector<int> seen;
  for (int a : axes) {
    const int n = fw::norm_axis(a, ndim(), "mean");
    if (std::find(seen.begin(), seen.end(), n) != seen.end()) continue;
    seen.push_back(n);
    count *= shape_[static_cast<size_t>(n)];
  }
  // The sum over the logical axes divided by their logical size: each device's part has fewer rows, so a per-device
  // mean would weigh uneven shards wrongly.
  MultiTensor s = sum(axes, keepdim);
  if (is_float(dtype())) return s.div(Scalar(static_cast<double>(count)));
  return s.cast(dtypes::float32).div(Scalar(static_cast<double>(count)));
}

// ---- matmul

MultiTensor MultiTensor::matmul(const MultiTensor& o) const {
  if (ndim() < 2 || o.ndim() < 2)
    throw ShapeError(cat("matmul: ", shape_str(shape_), " @ ", shape_str(o.shape_),
                         " (sharded operands must be at least 2-d: unsqueeze a vector first)"));
  multi::same_devices(*this, o, "matmul");
  const int ar = axis_ == replicated ? 0 : axis_ - static_cast<int>(ndim());        // -1: K, -2: M, less: batch
  const int br = o.axis_ == replicated ? 0 : o.axis_ - static_cast<int>(o.ndim());  // -1: N, -2: K, less: batch
  const size_t out_ndim = std::max(ndim(), o.ndim());
  if (shape_.back() != o.shape_[o.ndim() - 2])
    throw ShapeError(cat("matmul: ", shape_str(shape_), " @ ", shape_str(o.shape_), " (inner dimensions differ)"));
  auto each = [&](const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    std::vector<Tensor> out;
    for (size_t k = 0; k < a.size(); ++k) out.push_back(a[k].matmul(b[k]));
    return out;
  };
  auto finish = [&](std::vector<Tensor> out, int ax) {
    Shape shape = out.front().shape();
    if (ax != replicated) {
      shape[static_cast<size_t>(ax)] = 0;
      for (const Tensor& t : out) shape[static_cast<size_t>(ax)] += t.shape(ax);
    }
    return MultiTensor(std::move(out), devices_, ax, std::move(shape));
  };
  // The inner dimension split: partial products per device, summed across them.
  const bool a_k = ar == -1, b_k = br == -2;
  if (a_k || b_k) {
    if (a_k && b_k && bounds() != o.bounds()) return matmul(o.to_replicated());
    if ((a_k && o.axis_ != replicated && !b_k) || (b_k && axis_ != replicated && !a_k)) {
      // The other operand is split elsewhere: gather it, then this case again.
      return a_k ? matmul(o.to_replicated()) : to_replicated().matmul(o);
    }
    const multi::Bounds kb = a_k ? bounds() : o.bounds();
    std::vector<Tensor> a, b;  // a replicated operand is cut by each device from its own copy
    for (size_t k = 0; k < parts_.size(); ++k) {
      a.push_back(a_k ? parts_[k] : parts_[k].slice(-1, kb[k].first, kb[k].second));
      b.push_back(b_k ? o.parts_[k] : o.parts_[k].slice(-2, kb[k].first, kb[k].second));
    }
    return finish(allreduce(each(a, b), ReduceOp::sum), replicated);
  }
  if (axis_ == replicated && o.axis_ == replicated) return finish(each(parts_, o.parts_), replicated);
  if (axis_ != replicated && o.axis_ != replicated) return matmul(o.to_replicated());
  // One operand split on rows (this), columns (o) or a batch dimension; the replicated one is cut to match where it
  // has that batch dimension.
  const MultiTensor& split = axis_ != replicated ? *this : o;
  const int ax_out = split.axis_ + static_cast<int>(out_ndim - split.ndim());
  if (split.axis_ >= static_cast<int>(split.ndim()) - 2) {  // rows of this, columns of o: nothing to cut
    return finish(each(parts_, o.parts_), ax_out);
  }
  const multi::Bounds b = split.bounds();
  auto batch = [&](const MultiTensor& x) {
    const int own = ax_out - static_cast<int>(out_ndim - x.ndim());
    if (x.axis_ != replicated || own < 0 || x.shape_[static_cast<size_t>(own)] == 1) return x.parts_;
    std::vector<Tensor> cutp;
    for (size_t k = 0; k < x.parts_.size(); ++k) cutp.push_back(x.parts_[k].slice(own, b[k].first, b[k].second));
    return cutp;
  };
  return finish(each(batch(*this), batch(o)), ax_out);
}

}  // namespace hcq
