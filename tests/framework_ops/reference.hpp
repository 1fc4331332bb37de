// The double-precision reference the framework's ops are checked against: an n-d array of doubles with a shape,
// and every op written as the plainest loop over multi-indices that is obviously right. It shares no code with
// framework/ (it does not include hcq headers at all), so a bug there cannot hide in here.
// Misuse (a shape that does not fit, a bad axis) throws std::invalid_argument: that is a bug in a test, not in hcq.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hcq::ref {

using Dims = std::vector<int64_t>;

int64_t count(const Dims& shape);
// "(2, 3)", "(4,)", "()": the way shapes are written in messages (Python's tuples).
std::string format(const Dims& shape);

struct Array {
  Dims shape;
  std::vector<double> values;  // row-major

  Array() = default;
  Array(Dims shape, std::vector<double> values);
  static Array filled(Dims shape, double value);

  int64_t numel() const { return static_cast<int64_t>(values.size()); }
  size_t offset(const Dims& index) const;
  double at(const Dims& index) const { return values[offset(index)]; }
  double& at(const Dims& index) { return values[offset(index)]; }
};

// Calls visit(index) for every multi-index of shape in row-major order (once, with {}, for a 0-d shape; never for a
// shape with a 0 dimension).
template <class Visit>
void for_each_index(const Dims& shape, Visit visit) {
  if (count(shape) == 0) return;
  Dims index(shape.size(), 0);
  for (;;) {
    visit(static_cast<const Dims&>(index));
    size_t d = shape.size();
    for (; d > 0; --d) {  // an odometer: the last axis turns fastest
      if (++index[d - 1] < shape[d - 1]) break;
      index[d - 1] = 0;
    }
    if (d == 0) return;  // every axis wrapped: done
  }
}

// ---- broadcasting and elementwise
Dims broadcast_shapes(const Dims& a, const Dims& b);  // numpy's rule
Array broadcast_to(const Array& a, const Dims& shape);

template <class F>
Array map(const Array& a, F f) {
  Array out = a;
  for (double& v : out.values) v = f(v);
  return out;
}

template <class F>
Array zip(const Array& a, const Array& b, F f) {
  const Dims shape = broadcast_shapes(a.shape, b.shape);
  const Array x = broadcast_to(a, shape), y = broadcast_to(b, shape);
  Array out = Array::filled(shape, 0.0);
  for (size_t i = 0; i < out.values.size(); ++i) out.values[i] = f(x.values[i], y.values[i]);
  return out;
}

template <class F>
Array zip3(const Array& a, const Array& b, const Array& c, F f) {
  const Dims shape = broadcast_shapes(broadcast_shapes(a.shape, b.shape), c.shape);
  const Array x = broadcast_to(a, shape), y = broadcast_to(b, shape), z = broadcast_to(c, shape);
  Array out = Array::filled(shape, 0.0);
  for (size_t i = 0; i < out.values.size(); ++i) out.values[i] = f(x.values[i], y.values[i], z.values[i]);
  return out;
}

// ---- reductions over a set of axes (empty: all axes; negative axes count from the end)
std::vector<bool> reduced_axes(const std::vector<int>& axes, size_t ndim);
Array reduce(const Array& a, const std::vector<int>& axes, bool keepdim, double init,
             double (*combine)(double, double));
Array sum(const Array& a, const std::vector<int>& axes, bool keepdim);
Array prod(const Array& a, const std::vector<int>& axes, bool keepdim);
Array max(const Array& a, const std::vector<int>& axes, bool keepdim);
Array min(const Array& a, const std::vector<int>& axes, bool keepdim);
Array mean(const Array& a, const std::vector<int>& axes, bool keepdim);
Array var(const Array& a, const std::vector<int>& axes, bool keepdim, int correction);
Array std_dev(const Array& a, const std::vector<int>& axes, bool keepdim, int correction);
Array any(const Array& a, const std::vector<int>& axes, bool keepdim);  // 1 where some element is nonzero
Array all(const Array& a, const std::vector<int>& axes, bool keepdim);
// The index of the first maximum (minimum) along axis.
Array argmax(const Array& a, int axis, bool keepdim);
Array argmin(const Array& a, int axis, bool keepdim);
Array softmax(const Array& a, int axis);
Array log_softmax(const Array& a, int axis);
Array logsumexp(const Array& a, int axis, bool keepdim);
Array cumsum(const Array& a, int axis);

// ---- movement
Array reshape(const Array& a, Dims shape);  // one -1 is inferred
Array permute(const Array& a, const std::vector<int>& order);
Array expand(const Array& a, Dims shape);  // -1 keeps a dimension; new leading dimensions may be added
Array pad(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& before_after, double value);
Array shrink(const Array& a, const std::vector<std::pair<int64_t, int64_t>>& start_end);
Array flip(const Array& a, const std::vector<int>& axes);
Array slice(const Array& a, int axis, int64_t start, int64_t stop, int64_t step);  // Python's a[start:stop:step]
Array cat(const std::vector<Array>& parts, int axis);
Array stack(const std::vector<Array>& parts, int axis);
Array repeat(const Array& a, const std::vector<int64_t>& repeats);  // torch's repeat (numpy's tile)
Array squeeze(const Array& a);                                      // every size-1 axis
Array squeeze(const Array& a, int axis);
Array unsqueeze(const Array& a, int axis);
Array flatten(const Array& a, int start, int end);

// ---- linear algebra: numpy's matmul
Array matmul(const Array& a, const Array& b);

}  // namespace hcq::ref
