// Movement ops: each is a view (an IR node the scheduler turns into index arithmetic), never a copy.
#include <algorithm>

#include "framework/ir/shape_of.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

using namespace fw;

Tensor Tensor::reshape(Shape want) const {
  int infer = -1;
  int64_t known = 1;
  for (size_t k = 0; k < want.size(); ++k) {
    if (want[k] == -1) {
      if (infer >= 0) throw ShapeError(hcq::cat("reshape: more than one -1 in ", shape_str(want)));
      infer = static_cast<int>(k);
    } else if (want[k] < 0) {
      throw ShapeError(hcq::cat("reshape: negative dimension in ", shape_str(want)));
    } else {
      known *= want[k];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      throw ShapeError(
          hcq::cat("reshape: cannot reshape ", shape_str(shape()), " (", numel(), " elements) to ", shape_str(want)));
    want[static_cast<size_t>(infer)] = numel() / known;
  }
  return Tensor(t_reshape(node(), want));
}

Tensor Tensor::permute(std::vector<int> order) const {
  if (order.size() != ndim())
    throw InvalidArgument(hcq::cat("permute: ", order.size(), " axes given for a tensor of ", ndim(), " dimensions"));
  std::vector<int64_t> o;
  for (int a : order) {
    const int64_t n = norm_axis(a, ndim(), "permute");
    if (std::find(o.begin(), o.end(), n) != o.end())
      throw InvalidArgument(hcq::cat("permute: axis ", a, " is given twice"));
    o.push_back(n);
  }
  return Tensor(t_permute(node(), o));
}

Tensor Tensor::transpose(int a, int b) const {
  std::vector<int> order(ndim());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::swap(order[static_cast<size_t>(norm_axis(a, ndim(), "transpose"))],
            order[static_cast<size_t>(norm_axis(b, ndim(), "transpose"))]);
  return permute(order);
}

Tensor Tensor::expand(Shape want) const {
  if (want.size() < ndim())
    throw ShapeError(hcq::cat("expand: cannot expand ", shape_str(shape()), " to ", shape_str(want)));
  const size_t lead = want.size() - ndim();
  for (size_t k = 0; k < want.size(); ++k)
    if (want[k] == -1) {
      if (k < lead) throw ShapeError(hcq::cat("expand: -1 in a new leading dimension of ", shape_str(want)));
      want[k] = shape()[k - lead];
    }
  return Tensor(t_broadcast(node(), want, "expand"));
}

Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> before_after, Scalar value) const {
  if (before_after.size() != ndim())
    throw InvalidArgument(
        hcq::cat("pad: ", before_after.size(), " pairs given for a tensor of ", ndim(), " dimensions"));
  // Negative padding removes elements (as in PyTorch): shrink first, then pad the rest.
  std::vector<int64_t> shrink_arg, pad_arg;
  for (size_t k = 0; k < ndim(); ++k) {
    auto [b, a] = before_after[k];
    const int64_t start = b < 0 ? -b : 0, end = shape()[k] - (a < 0 ? -a : 0);
    if (end < start)
      throw ShapeError(hcq::cat("pad: padding (", b, ", ", a, ") removes more than dimension ", k, " of ",
                                shape_str(shape()), " holds"));
    shrink_arg.insert(shrink_arg.end(), {start, end});
    pad_arg.insert(pad_arg.end(), {std::max<int64_t>(b, 0), std::max<int64_t>(a, 0)});
  }
  return Tensor(t_pad(t_shrink(node(), shrink_arg), pad_arg, value.value));
}

Tensor Tensor::shrink(std::vector<std::pair<int64_t, int64_t>> start_end) const {
  if (start_end.size() != ndim())
    throw InvalidArgument(
        hcq::cat("shrink: ", start_end.size(), " pairs given for a tensor of ", ndim(), " dimensions"));
  std::vector<int64_t> arg;
  for (size_t k = 0; k < ndim(); ++k) {
    auto [s, e] = start_end[k];
    if (s < 0 || e < s || e > shape()[k])
      throw ShapeError(hcq::cat("shrink: (", s, ", ", e, ") is not within dimension ", k, " of ", shape_str(shape())));
    arg.insert(arg.end(), {s, e});
  }
  return Tensor(t_shrink(node(), arg));
}

Tensor Tensor::slice(int axis, int64_t start, int64_t stop, int64_t step) const {
  const int a = norm_axis(axis, ndim(), "slice");
  const int64_t n = shape()[static_cast<size_t>(a)];
  if (step == 0) throw InvalidArgument("slice: step must not be 0");
  // Python's slice.indices(n).
  auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
  int64_t s = start < 0 ? start + n : start, e = stop < 0 ? stop + n : stop;
  if (step > 0) {
    s = clamp(s, 0, n);
    e = clamp(e, 0, n);
  } else {
    s = clamp(s, -1, n - 1);
    e = clamp(e, -1, n - 1);
  }
  const int64_t count = step > 0 ? std::max<int64_t>(0, (e - s + step - 1) / step)
                                 : std::max<int64_t>(0, (s - e + (-step) - 1) / (-step));
  // Take [lo, lo + count*|step|) in the direction of the step, then every |step|-th element.
  const int64_t mag = step > 0 ? step : -step;
  Tensor x = *this;
  int64_t lo = s;
  if (step < 0) {
    x = x.flip(a);
    lo = n - 1 - s;
  }
  std::vector<std::pair<int64_t, int64_t>> se(ndim());
  for (size_t k = 0; k < ndim(); ++k) se[k] = {0, x.shape()[k]};
  const int64_t avail = n - lo, take = count * mag;
  se[static_cast<size_t>(a)] = {lo, lo + std::min(take, avail)};
  x = x.shrink(se);
  if (mag == 1) return x;
  // Pad to count*mag, view as (count, mag), keep column 0.
  std::vector<std::pair<int64_t, int64_t>> pads(ndim(), {0, 0});
  pads[static_cast<size_t>(a)] = {0, take - std::min(take, avail)};
  x = x.pad(pads);
  Shape split = x.shape();
  split[static_cast<size_t>(a)] = count;
  split.insert(split.begin() + a + 1, mag);
  x = x.reshape(split);
  std::vector<std::pair<int64_t, int64_t>> col;
  for (size_t k = 0; k < split.size(); ++k) col.push_back({0, split[k]});
  col[static_cast<size_t>(a) + 1] = {0, 1};
  return x.shrink(col).squeeze(a + 1);
}

Tensor Tensor::narrow(int axis, const Tensor& size) const { return Tensor(t_narrow(node(), axis, size.node())); }

Tensor Tensor::flip(std::vector<int> axes) const {
  std::vector<int64_t> flags(ndim(), 0);
  for (int a : axes) {
    const size_t n = static_cast<size_t>(norm_axis(a, ndim(), "flip"));
    if (flags[n]) throw InvalidArgument(hcq::cat("flip: axis ", a, " is given twice"));
    flags[n] = 1;
  }
  return Tensor(t_flip(node(), flags));
}

Tensor Tensor::squeeze() const {
  Shape out;
  for (int64_t d : shape())
    if (d != 1) out.push_back(d);
  return reshape(out);
}

Tensor Tensor::squeeze(int axis) const {
  const size_t a = static_cast<size_t>(norm_axis(axis, ndim(), "squeeze"));
  if (ndim() == 0 || shape()[a] != 1) return *this;
  Shape out = shape();
  out.erase(out.begin() + static_cast<ptrdiff_t>(a));
  return reshape(out);
}

Tensor Tensor::unsqueeze(int axis) const {
  const int a = norm_axis(axis < 0 ? axis : axis, ndim() + 1, "unsqueeze");
  Shape out = shape();
  out.insert(out.begin() + a, 1);
  return reshape(out);
}

Tensor Tensor::flatten(int start, int end) const {
  if (ndim() == 0) return reshape({1});
  const size_t s = static_cast<size_t>(norm_axis(start, ndim(), "flatten"));
  const size_t e = static_cast<size_t>(norm_axis(end, ndim(), "flatten"));
  if (e < s) throw InvalidArgument(hcq::cat("flatten: start ", start, " is after end ", end));
  Shape out(shape().begin(), shape().begin() + static_cast<ptrdiff_t>(s));
  int64_t n = 1;
  for (size_t k = s; k <= e; ++k) n *= shape()[k];
  out.push_back(n);
  out.insert(out.end(), shape().begin() + static_cast<ptrdiff_t>(e) + 1, shape().end());
  return reshape(out);
}

// Each dim d of size n repeated r times: view as (1, n), expand to (r, n), merge.
Tensor Tensor::repeat(std::vector<int64_t> repeats) const {
  if (repeats.size() < ndim())
    throw InvalidArgument(hcq::cat("repeat: ", repeats.size(), " repeats for a tensor of ", ndim(), " dimensions"));
  for (int64_t r : repeats)
    if (r < 0) throw InvalidArgument(hcq::cat("repeat: a repeat count is negative (", r, ")"));
  Shape base(repeats.size() - ndim(), 1);
  base.insert(base.end(), shape().begin(), shape().end());
  Shape unsq, expd, out;
  for (size_t k = 0; k < base.size(); ++k) {
    unsq.insert(unsq.end(), {1, base[k]});
    expd.insert(expd.end(), {repeats[k], base[k]});
    out.push_back(repeats[k] * base[k]);
  }
  return reshape(unsq).expand(expd).reshape(out);
}

// Each piece padded to the full length along the axis, then summed (OR for bools): one fused kernel.
Tensor Tensor::cat(const std::vector<Tensor>& others, int axis) const {
  const int a = norm_axis(axis, ndim(), "cat");
  std::vector<Tensor> all{*this};
  all.insert(all.end(), others.begin(), others.end());
  DType t = dtype();
  int64_t total = 0;
  for (const Tensor& x : all) {
    if (x.ndim() != ndim())
      throw ShapeError(hcq::cat("cat: shapes ", shape_str(shape()), " and ", shape_str(x.shape()), " differ in rank"));
    for (size_t k = 0; k < ndim(); ++k)
      if (static_cast<int>(k) != a && x.shape()[k] != shape()[k])
        throw ShapeError(
            hcq::cat("cat: shapes ", shape_str(shape()), " and ", shape_str(x.shape()), " differ outside axis ", axis));
    if (x.device() != device())
      throw InvalidArgument(hcq::cat("cat: tensors on ", device(), " and ", x.device(), ": move them to one device"));
    t = promote_types(t, x.dtype());
    total += x.shape()[static_cast<size_t>(a)];
  }
  Tensor out;
  int64_t at = 0;
  for (const Tensor& x : all) {
    std::vector<std::pair<int64_t, int64_t>> pads(ndim(), {0, 0});
    const int64_t n = x.shape()[static_cast<size_t>(a)];
    pads[static_cast<size_t>(a)] = {at, total - at - n};
    at += n;
    const Tensor p = x.cast(t).pad(pads);
    out = out.defined() ? (t == DType::bool_ ? out.logical_or(p) : out.add(p)) : p;
  }
  return out;
}

Tensor Tensor::stack(const std::vector<Tensor>& tensors, int axis) {
  if (tensors.empty()) throw InvalidArgument("stack: no tensors given");
  const int a = norm_axis(axis, tensors[0].ndim() + 1, "stack");
  std::vector<Tensor> rest;
  for (size_t k = 1; k < tensors.size(); ++k) {
    if (tensors[k].shape() != tensors[0].shape())
      throw ShapeError(
          hcq::cat("stack: shapes ", shape_str(tensors[0].shape()), " and ", shape_str(tensors[k].shape()), " differ"));
    rest.push_back(tensors[k].unsqueeze(a));
  }
  return tensors[0].unsqueeze(a).cat(rest, a);
}

}  // namespace hcq
