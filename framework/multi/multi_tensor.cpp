// MultiTensor (include/hcq/multi.hpp): one lazy Tensor per device and the layout that says how they make up the
// logical tensor. Creation, layout changes (gather, allgather, reshard), elementwise ops and movement; reductions and
// matmul, which combine devices' partial results, are in reduce.cpp.
#include <algorithm>
#include <numeric>

#include "framework/multi/layout.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/multi.hpp"

namespace hcq {

using fw::shape_str;

namespace multi {

std::vector<std::pair<int64_t, int64_t>> split_bounds(int64_t n, size_t parts) {
  std::vector<std::pair<int64_t, int64_t>> out;
  const auto N = static_cast<int64_t>(parts);
  int64_t lo = 0;
  for (int64_t k = 0; k < N; ++k) {
    const int64_t len = n / N + (k < n % N ? 1 : 0);  // the first n % N parts take one more
    out.emplace_back(lo, lo + len);
    lo += len;
  }
  return out;
}

std::vector<Tensor> cut(const Tensor& whole, int axis, const std::vector<std::pair<int64_t, int64_t>>& bounds) {
  std::vector<Tensor> out;
  for (const auto& [lo, hi] : bounds) out.push_back(whole.slice(axis, lo, hi));
  return out;
}

}  // namespace multi

namespace {

std::vector<std::string> canonical_all(const std::vector<std::string>& devices, std::string_view what) {
  if (devices.empty()) throw InvalidArgument(cat(what, ": no devices given"));
  std::vector<std::string> out;
  out.reserve(devices.size());
  for (const std::string& d : devices) out.push_back(fw::canonical_device(d));
  return out;
}

// The devices in `devices` plus `extra`, for one reachability check.
std::vector<std::string> with(std::vector<std::string> devices, const std::string& extra) {
  devices.push_back(extra);
  return devices;
}

}  // namespace

MultiTensor MultiTensor::shard(const Tensor& t, const std::vector<std::string>& devices, int axis) {
  if (!t.defined()) throw InvalidArgument("shard: an empty tensor");
  std::vector<std::string> devs = canonical_all(devices, "shard");
  const int ax = fw::norm_axis(axis, t.ndim(), "shard");
  const int64_t n = t.shape(ax);
  if (n < static_cast<int64_t>(devs.size()))
    throw ShapeError(cat("shard: axis ", ax, " of ", shape_str(t.shape()), " has ", n, " elements, fewer than the ",
                         devs.size(), " devices (each device must hold at least one)"));
  check_devices_reach(with(devs, t.device()));
  std::vector<Tensor> parts = multi::cut(t, ax, multi::split_bounds(n, devs.size()));
  for (size_t k = 0; k < parts.size(); ++k) parts[k] = parts[k].to(devs[k]);
  return MultiTensor(std::move(parts), std::move(devs), ax, t.shape());
}

MultiTensor MultiTensor::replicate(const Tensor& t, const std::vector<std::string>& devices) {
  if (!t.defined()) throw InvalidArgument("to(devices): an empty tensor");
  std::vector<std::string> devs = canonical_all(devices, "to(devices)");
  check_devices_reach(with(devs, t.device()));
  std::vector<Tensor> parts;
  for (const std::string& d : devs) parts.push_back(t.to(d));
  return MultiTensor(std::move(parts), std::move(devs), replicated, t.shape());
}

MultiTensor MultiTensor::from_parts(std::vector<Tensor> parts, int axis) {
  if (parts.empty()) throw InvalidArgument("from_parts: no parts");
  for (const Tensor& p : parts)
    if (!p.defined()) throw InvalidArgument("from_parts: an empty tensor");
  const Tensor& first = parts.front();
  const int ax = axis == replicated ? replicated : fw::norm_axis(axis, first.ndim(), "from_parts");
  Shape shape = first.shape();
  if (ax != replicated) shape[static_cast<size_t>(ax)] = 0;
  std::vector<std::string> devs;
  for (const Tensor& p : parts) {
    if (p.dtype() != first.dtype())
      throw DTypeError(cat("from_parts: parts of ", dtype_name(first.dtype()), " and ", dtype_name(p.dtype())));
    Shape s = p.shape();
    bool same = s.size() == shape.size();
    for (size_t d = 0; same && d < s.size(); ++d)
      if (static_cast<int>(d) != ax) same = s[d] == shape[d];
    if (!same)
      throw ShapeError(cat(
          "from_parts: parts of ", shape_str(first.shape()), " and ", shape_str(s),
          ax == replicated ? " (replicated parts must be equal)" : cat(" differ outside the split axis ", ax).c_str()));
    if (ax != replicated) {
      if (p.shape(ax) == 0) throw ShapeError(cat("from_parts: a part of ", shape_str(s), " holds nothing"));
      shape[static_cast<size_t>(ax)] += p.shape(ax);
    }
    devs.push_back(p.device());
  }
  check_devices_reach(devs);
  return MultiTensor(std::move(parts), std::move(devs), ax, std::move(shape));
}

DType MultiTensor::dtype() const {
  if (parts_.empty()) throw InvalidArgument("MultiTensor: empty");
  return parts_.front().dtype();
}

std::vector<std::pair<int64_t, int64_t>> MultiTensor::bounds() const {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (axis_ == replicated) return out;
  int64_t lo = 0;
  for (const Tensor& p : parts_) {
    out.emplace_back(lo, lo + p.shape(axis_));
    lo += p.shape(axis_);
  }
  return out;
}

MultiTensor MultiTensor::per_part(const std::function<Tensor(const Tensor&)>& f, int new_axis, Shape new_shape) const {
  std::vector<Tensor> out;
  out.reserve(parts_.size());
  for (const Tensor& p : parts_) out.push_back(f(p));
  if (new_shape.empty() && !out.empty()) {  // from the results: part 0's shape, the split axis summed
    new_shape = out.front().shape();
    if (new_axis != replicated) {
      new_shape[static_cast<size_t>(new_axis)] = 0;
      for (const Tensor& p : out) new_shape[static_cast<size_t>(new_axis)] += p.shape(new_axis);
    }
  }
  return MultiTensor(std::move(out), devices_, new_axis, std::move(new_shape));
}

// ---- layouts

MultiTensor MultiTensor::to_replicated() const {
  if (axis_ == replicated) return *this;
  std::vector<Tensor> out;
  for (const std::string& dst : devices_) {
    std::vector<Tensor> pieces;
    for (const Tensor& p : parts_) pieces.push_back(p.to(dst));  // no copy for the part already there
    Tensor first = pieces.front();
    pieces.erase(pieces.begin());
    out.push_back(pieces.empty() ? first : first.cat(pieces, axis_));
  }
  return MultiTensor(std::move(out), devices_, replicated, shape_);
}

MultiTensor MultiTensor::reshard(int axis) const {
  const int ax = fw::norm_axis(axis, ndim(), "reshard");
  if (ax == axis_) return *this;
  if (axis_ != replicated) return to_replicated().reshard(ax);
  if (shape_[static_cast<size_t>(ax)] < static_cast<int64_t>(devices_.size()))
    throw ShapeError(
        cat("reshard: axis ", ax, " of ", shape_str(shape_), " is shorter than the ", devices_.size(), " devices"));
  const auto b = multi::split_bounds(shape_[static_cast<size_t>(ax)], devices_.size());
  std::vector<Tensor> out;
  for (size_t k = 0; k < parts_.size(); ++k) out.push_back(parts_[k].slice(ax, b[k].first, b[k].second));
  return MultiTensor(std::move(out), devices_, ax, shape_);
}

Tensor MultiTensor::gather(const std::string& device) const {
  if (parts_.empty()) throw InvalidArgument("gather: an empty MultiTensor");
  const std::string& dst = fw::canonical_device(device);
  if (axis_ == replicated) {
    auto it = std::find(devices_.begin(), devices_.end(), dst);
    return it != devices_.end() ? parts_[static_cast<size_t>(it - devices_.begin())] : parts_.front().to(dst);
  }
  check_devices_reach(with(devices_, dst));
  std::vector<Tensor> pieces;
  for (size_t k = 1; k < parts_.size(); ++k) pieces.push_back(parts_[k].to(dst));
  Tensor first = parts_.front().to(dst);
  return pieces.empty() ? first : first.cat(pieces, axis_);
}

MultiTensor& MultiTensor::realize() {
  Tensor::realize(parts_);
  return *this;
}

// ---- elementwise

namespace multi {

std::vector<Tensor> conform(const MultiTensor& x, size_t out_ndim, int ax_out,
                            const std::vector<std::pair<int64_t, int64_t>>& b) {
  const int offset = static_cast<int>(out_ndim - x.ndim());  // numpy aligns shapes on the right
  const int own = ax_out == MultiTensor::replicated ? MultiTensor::replicated : ax_out - offset;
  if (x.is_replicated()) {
    // The whole tensor on every device: each cuts its own piece (no copy), unless it broadcasts along that axis.
    if (own < 0 || x.shape()[static_cast<size_t>(own)] == 1) return x.parts();
    std::vector<Tensor> out;
    for (size_t k = 0; k < x.parts().size(); ++k) out.push_back(x.parts()[k].slice(own, b[k].first, b[k].second));
    return out;
  }
  if (x.axis() == own && x.bounds() == b) return x.parts();
  return conform(x.to_replicated(), out_ndim, ax_out, b);
}

void same_devices(const MultiTensor& a, const MultiTensor& b, std::string_view op) {
  if (a.devices() != b.devices()) {
    std::string da, db;
    for (const auto& d : a.devices()) da += (da.empty() ? "" : ", ") + d;
    for (const auto& d : b.devices()) db += (db.empty() ? "" : ", ") + d;
    throw InvalidArgument(cat(op, ": operands on different devices [", da, "] and [", db,
                              "] (move one with to(devices) or shard(devices, axis) first)"));
  }
}

}  // namespace multi

MultiTensor MultiTensor::binary(const MultiTensor& o,
                                const std::function<Tensor(const Tensor&, const Tensor&)>& f) const {
  multi::same_devices(*this, o, "elementwise");
  const Shape out_shape = fw::broadcast_shape(shape_, o.shape_, "elementwise");
  const size_t out_ndim = out_shape.size();
  // The layout of the first split operand wins; the other is cut or gathered to match it.
  int ax_out = replicated;
  std::vector<std::pair<int64_t, int64_t>> b;
  if (axis_ != replicated) {
    ax_out = axis_ + static_cast<int>(out_ndim - ndim());
    b = bounds();
  } else if (o.axis_ != replicated) {
    ax_out = o.axis_ + static_cast<int>(out_ndim - o.ndim());
    b = o.bounds();
  }
  const std::vector<Tensor> x = multi::conform(*this, out_ndim, ax_out, b);
  const std::vector<Tensor> y = multi::conform(o, out_ndim, ax_out, b);
  std::vector<Tensor> out;
  for (size_t k = 0; k < x.size(); ++k) out.push_back(f(x[k], y[k]));
  Shape shape = out.front().shape();
  if (ax_out != replicated) shape[static_cast<size_t>(ax_out)] = out_shape[static_cast<size_t>(ax_out)];
  return MultiTensor(std::move(out), devices_, ax_out, std::move(shape));
}

MultiTensor MultiTensor::where(const MultiTensor& a, const MultiTensor& b) const {
  multi::same_devices(*this, a, "where");
  multi::same_devices(*this, b, "where");
  const Shape out_shape = fw::broadcast_shape(fw::broadcast_shape(shape_, a.shape_, "where"), b.shape_, "where");
  const size_t out_ndim = out_shape.size();
  int ax_out = replicated;
  std::vector<std::pair<int64_t, int64_t>> bd;
  for (const MultiTensor* m : {this, &a, &b}) {
    if (m->axis_ != replicated) {
      ax_out = m->axis_ + static_cast<int>(out_ndim - m->ndim());
      bd = m->bounds();
      break;
    }
  }
  const auto c = multi::conform(*this, out_ndim, ax_out, bd);
  const auto x = multi::conform(a, out_ndim, ax_out, bd);
  const auto y = multi::conform(b, out_ndim, ax_out, bd);
  std::vector<Tensor> out;
  for (size_t k = 0; k < c.size(); ++k) out.push_back(c[k].where(x[k], y[k]));
  Shape shape = out.front().shape();
  if (ax_out != replicated) shape[static_cast<size_t>(ax_out)] = out_shape[static_cast<size_t>(ax_out)];
  return MultiTensor(std::move(out), devices_, ax_out, std::move(shape));
}

MultiTensor MultiTensor::add(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a + b; });
}
MultiTensor MultiTensor::sub(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a - b; });
}
MultiTensor MultiTensor::mul(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a * b; });
}
MultiTensor MultiTensor::div(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a / b; });
}
MultiTensor MultiTensor::maximum(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a.maximum(b); });
}
MultiTensor MultiTensor::minimum(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a.minimum(b); });
}
MultiTensor MultiTensor::lt(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a.lt(b); });
}
MultiTensor MultiTensor::eq(const MultiTensor& o) const {
  return binary(o, [](auto& a, auto& b) { return a.eq(b); });
}

MultiTensor MultiTensor::unary(const std::function<Tensor(const Tensor&)>& f) const {
  MultiTensor out = per_part(f, axis_, {});
  for (size_t d = 0; d < out.shape_.size() && d < shape_.size(); ++d)
    if (out.shape_.size() != shape_.size() || out.shape_[d] != shape_[d])
      throw ShapeError(cat("unary: the op changed the shape ", shape_str(shape_), " to ", shape_str(out.shape_),
                           " (use the movement ops)"));
  return out;
}
MultiTensor MultiTensor::add(Scalar s) const {
  return unary([s](const Tensor& t) { return t.add(s); });
}
MultiTensor MultiTensor::sub(Scalar s) const {
  return unary([s](const Tensor& t) { return t.sub(s); });
}
MultiTensor MultiTensor::mul(Scalar s) const {
  return unary([s](const Tensor& t) { return t.mul(s); });
}
MultiTensor MultiTensor::div(Scalar s) const {
  return unary([s](const Tensor& t) { return t.div(s); });
}
MultiTensor MultiTensor::neg() const {
  return unary([](const Tensor& t) { return t.neg(); });
}
MultiTensor MultiTensor::exp() const {
  return unary([](const Tensor& t) { return t.exp(); });
}
MultiTensor MultiTensor::log() const {
  return unary([](const Tensor& t) { return t.log(); });
}
MultiTensor MultiTensor::sqrt() const {
  return unary([](const Tensor& t) { return t.sqrt(); });
}
MultiTensor MultiTensor::relu() const {
  return unary([](const Tensor& t) { return t.relu(); });
}
MultiTensor MultiTensor::sigmoid() const {
  return unary([](const Tensor& t) { return t.sigmoid(); });
}
MultiTensor MultiTensor::tanh() const {
  return unary([](const Tensor& t) { return t.tanh(); });
}
MultiTensor MultiTensor::abs() const {
  return unary([](const Tensor& t) { return t.abs(); });
}
MultiTensor MultiTensor::cast(DType to) const {
  return unary([to](const Tensor& t) { return t.cast(to); });
}

// ---- movement

MultiTensor MultiTensor::reshape(Shape shape) const {
  // Resolve -1 on the logical shape first (a part's -1 would be inferred from the part).
  const int64_t total = std::accumulate(shape_.begin(), shape_.end(), int64_t{1}, std::multiplies<>());
  int64_t known = 1;
  int infer = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && infer < 0) infer = static_cast<int>(d);
    else known *= shape[d];
  }
  if (infer >= 0 && known > 0 && total % known == 0) shape[static_cast<size_t>(infer)] = total / known;
  if (axis_ == replicated) return per_part([&](const Tensor& t) { return t.reshape(shape); }, replicated, shape);
  // The split axis must stay one axis: the same elements before it and the same length.
  int64_t before = 1;
  for (int d = 0; d < axis_; ++d) before *= shape_[static_cast<size_t>(d)];
  int64_t prefix = 1;
  int found = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (prefix == before && shape[d] == shape_[static_cast<size_t>(axis_)]) {
      found = static_cast<int>(d);
      break;
    }
    prefix *= shape[d];
  }
  if (found < 0 || std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>()) != total)
    throw ShapeError(cat("reshape: ", shape_str(shape_), " split on axis ", axis_, " to ", shape_str(shape),
                         " would split or merge the split axis (reshard or to_replicated() first)"));
  return per_part(
      [&](const Tensor& t) {
        Shape s = shape;
        s[static_cast<size_t>(found)] = t.shape(axis_);
        return t.reshape(s);
      },
      found, shape);
}

MultiTensor MultiTensor::permute(std::vector<int> order) const {
  int ax = replicated;
  if (axis_ != replicated)
    for (size_t d = 0; d < order.size(); ++d)
      if (fw::norm_axis(order[d], ndim(), "permute") == axis_) ax = static_cast<int>(d);
  return per_part([&](const Tensor& t) { return t.permute(order); }, ax, {});
}

MultiTensor MultiTensor::transpose(int a, int b) const {
  std::vector<int> order(ndim());
  std::iota(order.begin(), order.end(), 0);
  std::swap(order[static_cast<size_t>(fw::norm_axis(a, ndim(), "transpose"))],
            order[static_cast<size_t>(fw::norm_axis(b, ndim(), "transpose"))]);
  return permute(order);
}

MultiTensor MultiTensor::expand(Shape shape) const {
  if (axis_ == replicated) return per_part([&](const Tensor& t) { return t.expand(shape); }, replicated, {});
  if (shape.size() < ndim())
    throw ShapeError(cat("expand: ", shape_str(shape_), " to ", shape_str(shape), " (fewer dimensions)"));
  const int ax = axis_ + static_cast<int>(shape.size() - ndim());
  const int64_t want = shape[static_cast<size_t>(ax)];
  if (want != -1 && want != shape_[static_cast<size_t>(axis_)])
    throw ShapeError(
        cat("expand: ", shape_str(shape_), " to ", shape_str(shape), " would expand the split axis ", axis_));
  Shape per = shape;
  per[static_cast<size_t>(ax)] = -1;  // each part keeps its own length there
  return per_part([&](const Tensor& t) { return t.expand(per); }, ax, {});
}

namespace {

[[noreturn]] void on_split_axis(std::string_view op, const Shape& shape, int axis) {
  throw ShapeError(cat(op, ": ", shape_str(shape), " is split on axis ", axis,
                       ", which this op cannot change per device (to_replicated() or reshard() first)"));
}

}  // namespace

MultiTensor MultiTensor::pad(std::vector<std::pair<int64_t, int64_t>> before_after, Scalar value) const {
  if (axis_ != replicated && static_cast<size_t>(axis_) < before_after.size() &&
      before_after[static_cast<size_t>(axis_)] != std::pair<int64_t, int64_t>{0, 0})
    on_split_axis("pad", shape_, axis_);
  return per_part([&](const Tensor& t) { return t.pad(before_after, value); }, axis_, {});
}

MultiTensor MultiTensor::shrink(std::vector<std::pair<int64_t, int64_t>> start_end) const {
  if (axis_ == replicated) return per_part([&](const Tensor& t) { return t.shrink(start_end); }, replicated, {});
  if (static_cast<size_t>(axis_) < start_end.size()) {
    if (start_end[static_cast<size_t>(axis_)] != std::pair<int64_t, int64_t>{0, shape_[static_cast<size_t>(axis_)]})
      on_split_axis("shrink", shape_, axis_);
  }
  return per_part(
      [&](const Tensor& t) {
        auto se = start_end;
        if (static_cast<size_t>(axis_) < se.size()) se[static_cast<size_t>(axis_)] = {0, t.shape(axis_)};
        return t.shrink(se);
      },
      axis_, {});
}

MultiTensor MultiTensor::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  if (axis_ != replicated && fw::norm_axis(axis, ndim(), "slice") == axis_) on_split_axis("slice", shape_, axis_);
  return per_part([&](const Tensor& t) { return t.slice(axis, start, stop, step); }, axis_, {});
}

MultiTensor MultiTensor::flip(int axis) const {
  if (axis_ != replicated && fw::norm_axis(axis, ndim(), "flip") == axis_) on_split_axis("flip", shape_, axis_);
  return per_part([&](const Tensor& t) { return t.flip(axis); }, axis_, {});
}

MultiTensor MultiTensor::unsqueeze(int axis) const {
  const int at = fw::norm_axis(axis, ndim() + 1, "unsqueeze");
  const int ax = axis_ == replicated ? replicated : (at <= axis_ ? axis_ + 1 : axis_);
  return per_part([&](const Tensor& t) { return t.unsqueeze(at); }, ax, {});
}

MultiTensor MultiTensor::squeeze(int axis) const {
  const int at = fw::norm_axis(axis, ndim(), "squeeze");
  if (at == axis_) on_split_axis("squeeze", shape_, axis_);
  const int ax = axis_ == replicated ? replicated : (at < axis_ ? axis_ - 1 : axis_);
  return per_part([&](const Tensor& t) { return t.squeeze(at); }, ax, {});
}

MultiTensor MultiTensor::flatten(int start, int end) const {
  const int s = fw::norm_axis(start, ndim(), "flatten"), e = fw::norm_axis(end, ndim(), "flatten");
  Shape shape;
  for (int d = 0; d < static_cast<int>(ndim()); ++d) {
    if (d > s && d <= e) shape.back() *= shape_[static_cast<size_t>(d)];
    else shape.push_back(shape_[static_cast<size_t>(d)]);
  }
  return reshape(shape);
}

// ---- the Tensor side

MultiTensor Tensor::shard(const std::vector<std::string>& devices, int axis) const {
  return MultiTensor::shard(*this, devices, axis);
}

MultiTensor Tensor::to(const std::vector<std::string>& devices) const { return MultiTensor::replicate(*this, devices); }

}  // namespace hcq
