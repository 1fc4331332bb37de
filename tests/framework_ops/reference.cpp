// The double-precision reference: each op as a loop over the output's multi-indices that reads its inputs at the
// index the op's definition names. Nothing is clever here on purpose.
#include "framework_ops/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace hcq::ref {

namespace {

[[noreturn]] void misuse(const std::string& what) { throw std::invalid_argument("reference: " + what); }

size_t axis_index(int axis, size_t ndim) {
  const int64_t n = static_cast<int64_t>(ndim);
  const int64_t a = axis < 0 ? axis + n : axis;
  if (a < 0 || a >= n) misuse("axis " + std::to_string(axis) + " out of range for " + std::to_string(ndim) + " dims");
  return static_cast<size_t>(a);
}

// The output shape of a reduction, and where an input index lands in it.
Dims reduced_shape(const Dims& shape, const std::vector<bool>& reduced, bool keepdim) {
  Dims out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) out.push_back(shape[d]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

Dims reduced_index(const Dims& index, const std::vector<bool>& reduced, bool keepdim) {
  Dims out;
  for (size_t d = 0; d < index.size(); ++d) {
    if (!reduced[d]) out.push_back(index[d]);
    else if (keepdim) out.push_back(0);
  }
  return out;
}

int64_t reduced_count(const Dims& shape, const std::vector<bool>& reduced) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduced[d]) n *= shape[d];
  return n;
}

Array arg_extreme(const Array& a, int axis, bool keepdim, bool want_max) {
  const size_t ax = axis_index(axis, a.shape.size());
  std::vector<bool> reduced(a.shape.size(), false);
  reduced[ax] = true;
  Array out = Array::filled(reduced_shape(a.shape, reduced, keepdim), 0.0);
  for_each_index(out.shape, [&](const Dims& o) {
    Dims index = o;
    if (!keepdim) index.insert(index.begin() + static_cast<std::ptrdiff_t>(ax), 0);
    int64_t best = 0;
    index[ax] = 0;
    double best_value = a.at(index);
    for (int64_t i = 1; i < a.shape[ax]; ++i) {
      index[ax] = i;
      const double v = a.at(index);
      if (want_max ? v > best_value : v < best_value) {  // strict: the first of equal values wins
        best = i;
        best_value = v;
      }
    }
    out.at(o) = static_cast<double>(best);
  });
  return out;
}

}  // namespace

int64_t count(const Dims& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string format(const Dims& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

Array::Array(Dims s, std::vector<double> v) : shape(std::move(s)), values(std::move(v)) {
  for (int64_t d : shape)
    if (d < 0) misuse("negative dimension in " + format(shape));
  if (count(shape) != static_cast<int64_t>(values.size()))
    misuse(std::to_string(values.size()) + " values for shape " + format(shape));
}

Array Array::filled(Dims s, double value) {
  const int64_t n = count(s);
  return Array(std::move(s), std::vector<double>(static_cast<size_t>(n), value));
}

size_t Array::offset(const Dims& index) const {
  if (index.size() != shape.size()) misuse("index of rank " + std::to_string(index.size()) + " into " + format(shape));
  size_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape[d]) misuse("index out of range of " + format(shape));
    flat = flat * static_cast<size_t>(shape[d]) + static_cast<size_t>(index[d]);
  }
  return flat;
}

// ---- broadcasting

Dims broadcast_shapes(const Dims& a, const Dims& b) {
  const size_t n = std::max(a.size(), b.size());
  Dims out(n);
  for (size_t i = 0; i < n; ++i) {  // i counts from the last axis
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1, y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) misuse("shapes " + format(a) + " and " + format(b) + " do not broadcast");
    out[n - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

Array broadcast_to(const Array& a, const Dims& shape) {
  if (shape.size() < a.shape.size()) misuse("cannot broadcast " + format(a.shape) + " to " + format(shape));
  const size_t lead = shape.size() - a.shape.size();
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (a.shape[d] != 1 && a.shape[d] != shape[lead + d])
      misuse("cannot broadcast " + format(a.shape) + " to " + format(shape));
  Array out = Array::filled(shape, 0.0);
  for_each_index(shape, [&](const Dims& o) {
    Dims src(a.shape.size());
    for (size_t d = 0; d < a.shape.size(); ++d) src[d] = a.shape[d] == 1 ? 0 : o[lead + d];
    out.at(o) = a.at(src);
  });
  return out;
}

// ---- reductions

std::vector<bool> reduced_axes(const std::vector<int>& axes, size_t ndim) {
  std::vector<bool> reduced(ndim, axes.empty());
  for (int axis : axes) reduced[axis_index(axis, ndim)] = true;
  return reduced;
}

Array reduce(const Array& a, const std::vector<int>& axes, bool keepdim, double init,
             double (*combine)(double, double)) {
  const std::vector<bool> reduced = reduced_axes(axes, a.shape.size());
  Array out = Array::filled(reduced_shape(a.shape, reduced, keepdim), init);
  for_each_index(a.shape, [&](const Dims& i) {
    double& acc = out.at(reduced_index(i, reduced, keepdim));
    acc = combine(acc, a.at(i));
  });
  return out;
}

Array sum(const Array& a, const std::vector<int>& axes, bool keepdim) {
  return reduce(a, axes, keepdim, 0.0, [](double x, double y) { return x + y; });
}

Array prod(const Array& a, const std::vector<int>& axes, bool keepdim) {
  return reduce(a, axes, keepdim, 1.0, [](double x, double y) { return x * y; });
}

Array max(const Array& a, const std::vector<int>& axes, bool keepdim) {
  return reduce(a, axes, keepdim, -std::numeric_limits<double>::infinity(),
                [](double x, double y) { return std::max(x, y); });
}

Array min(const Array& a, const std::vector<int>& axes, bool keepdim) {
  return reduce(a, axes, keepdim, std::numeric_limits<double>::infinity(),
                [](double x, double y) { return std::min(x, y); });
}

Array mean(const Array& a, const std::vector<int>& axes, bool keepdim) {
  const double n = static_cast<double>(reduced_count(a.shape, reduced_axes(axes, a.shape.size())));
  return map(sum(a, axes, keepdim), [n](double s) { return s / n; });
}

Array var(const Array& a, const std::vector<int>& axes, bool keepdim, int correction) {
  const std::vector<bool> reduced = reduced_axes(axes, a.shape.size());
  const Array m = mean(a, axes, true);
  Array squares = a;
  for_each_index(a.shape, [&](const Dims& i) {
    const double d = a.at(i) - m.at(reduced_index(i, reduced, true));
    squares.at(i) = d * d;
  });
  const double n = static_cast<double>(reduced_count(a.shape, reduced)) - correction;
  return map(sum(squares, axes, keepdim), [n](double s) { return s / n; });
}

Array std_dev(const Array& a, const std::vector<int>& axes, bool keepdim, int correction) {
  return map(var(a, axes, keepdim, correction), [](double v) { return std::sqrt(v); });
}

Array any(const Array& a, const std::vector<int>& axes, bool keepdim) {
  return reduce(a, axes, keepdim, 0.0, [](double acc, double x) { return (acc != 0 || x != 0) ? 1.0 : 0.0; });
}

Array all(const Array& a, const std::vector<int>& axes, bool keepdim) {
  return reduce(a, axes, keepdim, 1.0, [](double acc, double x) { return (acc != 0 && x != 0) ? 1.0 : 0.0; });
}

Array argmax(const Array& a, int axis, bool keepdim) { return arg_extreme(a, axis, keepdim, true); }
Array argmin(const Array& a, int axis, bool keepdim) { return arg_extreme(a, axis, keepdim, false); }

Array logsumexp(const Array& a, int axis, bool keepdim) {
  const std::vector<bool> reduced = reduced_axes({axis}, a.shape.size());
  const Array m = max(a, {axis}, true);
  Array shifted = a;
  for_each_index(a.shape,
                 [&](const Dims& i) { shifted.at(i) = std::exp(a.at(i) - m.at(reduced_index(i, reduced, true))); });
  Array out = sum(shifted, {axis}, true);
  for_each_index(out.shape, [&](const Dims& i) { out.at(i) = m.at(i) + std::log(out.at(i)); });
  return keepdim ? out : squeeze(out, axis);
}

Array log_softmax(const Array& a, int axis) {
  const std::vector<bool> reduced = reduced_axes({axis}, a.shape.size());
  const Array lse = logsumexp(a, axis, true);
  Array out = a;
  for_each_index(a.shape, [&](const Dims& i) { out.at(i) = a.at(i) - lse.at(reduced_index(i, reduced, true)); });
  return out;
}

Array softmax(const Array& a, int axis) {
  return map(log_softmax(a, axis), [](double v) { return std::exp(v); });
}

Array cumsum(const Array& a, int axis) {
  const size_t ax = axis_index(axis, a.shape.size());
  Array out = a;
  for_each_index(a.shape, [&](const Dims& i) {
    Dims j = i;
    double s = 0;
    for (j[ax] = 0; j[ax] <= i[ax]; ++j[ax]) s += a.at(j);
    out.at(i) = s;
  });
  return out;
}

// ---- movement

Array reshape(const Array& a, Dims shape) {
  int64_t known = 1, inferred = -1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) {
      if (inferred >= 0) misuse("two -1 in " + format(shape));
      inferred = static_cast<int64_t>(d);
    } else {
      known *= shape[d];
    }
  }
  if (inferred >= 0) shape[static_cast<size_t>(inferred)] = known == 0 ? 0 : a.numel() / known;
  if (count(shape) != a.numel()) misuse("cannot reshape " + format(a.shape) + " to " + format(shape));
  return Array(shape, a.values);  // row-major order is what reshape keeps
}

Array permute(const Array& a, const std::vector<int>& order) {
  if (order.size() != a.shape.size()) misuse("permute order of the wrong rank");
  Dims shape(order.size());
  for (size_t i = 0; i < order.size(); ++i) shape[i] = a.shape[axis_index(order[i], a.shape.size())];
  Array out = Array::filled(shape, 0.0);
  for_each_index(shape, [&](const Dims& o) {
    Dims src(order.size());
    for (size_t i = 0; i < order.size(); ++i) src[axis_index(order[i], order.size())] = o[i];
    out.at(o) = a.at(src);
  });
  return out;
}

Array expand(const Array& a, Dims shape) {
  const size_t lead = shape.size() - a.shape.size();
  for (size_t d = 0; d < a.shape.size(); ++d)
    if (shape[lead + d] == -1) shape[lead + d] = a.shape[d];
  return broadcast_to(a, shape);
}

Array pad(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& before_after, double value) {
  if (before_after.size() != a.shape.size()) misuse("pad of the wrong rank");
  Dims shape = a.shape;
  for (size_t d = 0; d < shape.size(); ++d) shape[d] += before_after[d].first + before_after[d].second;
  Array out = Array::filled(shape, value);
  for_each_index(a.shape, [&](const Dims& i) {
    Dims o = i;
    for (size_t d = 0; d < o.size(); ++d) o[d] += before_after[d].first;
    out.at(o) = a.at(i);
  });
  return out;
}

Array shrink(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& start_end) {
  if (start_end.size() != a.shape.size()) misuse("shrink of the wrong rank");
  Dims shape(a.shape.size());
  for (size_t d = 0; d < shape.size(); ++d) shape[d] = start_end[d].second - start_end[d].first;
  Array out = Array::filled(shape, 0.0);
  for_each_index(shape, [&](const Dims& o) {
    Dims src = o;
    for (size_t d = 0; d < src.size(); ++d) src[d] += start_end[d].first;
    out.at(o) = a.at(src);
  });
  return out;
}

Array flip(const Array& a, const std::vector<int>& axes) {
  const std::vector<bool> flipped = reduced_axes(axes, a.shape.size());
  if (axes.empty()) misuse("flip needs axes");
  Array out = a;
  for_each_index(a.shape, [&](const Dims& o) {
    Dims src = o;
    for (size_t d = 0; d < src.size(); ++d)
      if (flipped[d]) src[d] = a.shape[d] - 1 - o[d];
    out.at(o) = a.at(src);
  });
  return out;
}

Array slice(const Array& a, int axis, int64_t start, int64_t stop, int64_t step) {
  if (step == 0) misuse("slice step 0");
  const size_t ax = axis_index(axis, a.shape.size());
  const int64_t n = a.shape[ax];
  // Python's slice.indices: negative counts from the end, then clamp to [0, n] going up or [-1, n-1] going down.
  auto clamp = [&](int64_t i) {
    if (i < 0) i += n;
    return step > 0 ? std::clamp<int64_t>(i, 0, n) : std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t first = clamp(start), last = clamp(stop);
  const int64_t length = step > 0 ? (last > first ? (last - first + step - 1) / step : 0)
                                  : (first > last ? (first - last - step - 1) / -step : 0);
  Dims shape = a.shape;
  shape[ax] = length;
  Array out = Array::filled(shape, 0.0);
  for_each_index(shape, [&](const Dims& o) {
    Dims src = o;
    src[ax] = first + o[ax] * step;
    out.at(o) = a.at(src);
  });
  return out;
}

Array cat(const std::vector<Array>& parts, int axis) {
  if (parts.empty()) misuse("cat of nothing");
  const size_t ax = axis_index(axis, parts[0].shape.size());
  Dims shape = parts[0].shape;
  shape[ax] = 0;
  for (const Array& p : parts) {
    if (p.shape.size() != shape.size()) misuse("cat of mixed ranks");
    for (size_t d = 0; d < shape.size(); ++d)
      if (d != ax && p.shape[d] != parts[0].shape[d]) misuse("cat of mismatched shapes");
    shape[ax] += p.shape[ax];
  }
  Array out = Array::filled(shape, 0.0);
  int64_t base = 0;
  for (const Array& p : parts) {
    for_each_index(p.shape, [&](const Dims& i) {
      Dims o = i;
      o[ax] += base;
      out.at(o) = p.at(i);
    });
    base += p.shape[ax];
  }
  return out;
}

Array stack(const std::vector<Array>& parts, int axis) {
  std::vector<Array> lifted;
  for (const Array& p : parts) lifted.push_back(unsqueeze(p, axis));
  const int rank = static_cast<int>(parts.at(0).shape.size()) + 1;
  return cat(lifted, axis < 0 ? axis + rank : axis);
}

Array repeat(const Array& a, const std::vector<int64_t>& repeats) {
  if (repeats.size() < a.shape.size()) misuse("repeat needs a count per axis");
  Dims base(repeats.size() - a.shape.size(), 1);
  base.insert(base.end(), a.shape.begin(), a.shape.end());
  const Array src = reshape(a, base);
  Dims shape(base.size());
  for (size_t d = 0; d < base.size(); ++d) shape[d] = base[d] * repeats[d];
  Array out = Array::filled(shape, 0.0);
  for_each_index(shape, [&](const Dims& o) {
    Dims i = o;
    for (size_t d = 0; d < i.size(); ++d) i[d] = o[d] % base[d];
    out.at(o) = src.at(i);
  });
  return out;
}

Array squeeze(const Array& a) {
  Dims shape;
  for (int64_t d : a.shape)
    if (d != 1) shape.push_back(d);
  return Array(shape, a.values);
}

Array squeeze(const Array& a, int axis) {
  const size_t ax = axis_index(axis, a.shape.size());
  if (a.shape[ax] != 1) misuse("squeeze of an axis that is not 1");
  Dims shape = a.shape;
  shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(ax));
  return Array(shape, a.values);
}

Array unsqueeze(const Array& a, int axis) {
  const size_t ax = axis_index(axis, a.shape.size() + 1);
  Dims shape = a.shape;
  shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(ax), 1);
  return Array(shape, a.values);
}

Array flatten(const Array& a, int start, int end) {
  const size_t s = axis_index(start, a.shape.size()), e = axis_index(end, a.shape.size());
  Dims shape(a.shape.begin(), a.shape.begin() + static_cast<std::ptrdiff_t>(s));
  int64_t merged = 1;
  for (size_t d = s; d <= e; ++d) merged *= a.shape[d];
  shape.push_back(merged);
  shape.insert(shape.end(), a.shape.begin() + static_cast<std::ptrdiff_t>(e) + 1, a.shape.end());
  return Array(shape, a.values);
}

// ---- matmul

Array matmul(const Array& a, const Array& b) {
  if (a.shape.empty() || b.shape.empty()) misuse("matmul of a 0-d array");
  // numpy: a 1-d left operand is a row (its 1 removed after), a 1-d right operand a column.
  const Array x = a.shape.size() == 1 ? unsqueeze(a, 0) : a;
  const Array y = b.shape.size() == 1 ? unsqueeze(b, 1) : b;
  const int64_t m = x.shape[x.shape.size() - 2], k = x.shape.back(), n = y.shape.back();
  if (y.shape[y.shape.size() - 2] != k) misuse("matmul of " + format(a.shape) + " and " + format(b.shape));
  const Dims batch =
      broadcast_shapes(Dims(x.shape.begin(), x.shape.end() - 2), Dims(y.shape.begin(), y.shape.end() - 2));
  Dims xs = batch, ys = batch, shape = batch;
  xs.insert(xs.end(), {m, k});
  ys.insert(ys.end(), {k, n});
  shape.insert(shape.end(), {m, n});
  const Array xb = broadcast_to(x, xs), yb = broadcast_to(y, ys);
  Array out = Array::filled(shape, 0.0);
  for_each_index(shape, [&](const Dims& o) {
    Dims xi = o, yi = o;
    double s = 0;
    for (int64_t t = 0; t < k; ++t) {
      xi[xi.size() - 1] = t;
      yi[yi.size() - 2] = t;
      s += xb.at(xi) * yb.at(yi);
    }
    out.at(o) = s;
  });
  if (a.shape.size() == 1) out = squeeze(out, -2);
  if (b.shape.size() == 1) out = squeeze(out, -1);
  return out;
}

}  // namespace hcq::ref
