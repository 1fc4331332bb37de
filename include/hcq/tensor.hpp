// Tensor: the framework's lazy tensor, in tinygrad's style. An op only builds a graph; realize() (or reading the
// data) schedules it into fused, generated kernels and runs them on the tensor's HCQ device.
//
//   hcq::Tensor a = hcq::Tensor::arange(6).reshape({2, 3});
//   hcq::Tensor b = ((a + 1) * a).relu().sum(1);      // nothing has run yet
//   std::vector<float> out = b.data<float>();          // one kernel: [2, 20]
//
// Ownership: a Tensor is a handle; copies share one tensor (as Python references do), so realize() or assign()
// through one copy is seen by all. The memory of a realized tensor lives while a handle or a graph uses it.
// Threads: the graph and the caches are thread-safe; one Tensor handle should not be realized from two threads at
// once.
// Errors: ShapeError (the op and the shapes), DTypeError (the op and the dtypes), InvalidArgument (a bad axis or
// argument), OutOfMemory, DeviceFault (reading a tensor whose device faulted), CompileError (a kernel that failed to
// compile, with its source).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hcq/dtype.hpp"
#include "hcq/error.hpp"

namespace hcq {

class ShapeError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};
class DTypeError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

using Shape = std::vector<int64_t>;

class MultiTensor;  // include/hcq/multi.hpp

namespace fw {
struct NodeData;
struct TensorAccess;
}  // namespace fw

// A number on one side of an op. Its kind matters for promotion: an integer scalar keeps an integer tensor's
// dtype, a float scalar makes an integer tensor float (as in tinygrad and PyTorch).
struct Scalar {
  double value;
  enum Kind : uint8_t { boolean, integer, floating } kind;
  Scalar(bool v) : value(v), kind(boolean) {}
  Scalar(int v) : value(v), kind(integer) {}
  Scalar(long v) : value(static_cast<double>(v)), kind(integer) {}
  Scalar(long long v) : value(static_cast<double>(v)), kind(integer) {}
  Scalar(unsigned v) : value(v), kind(integer) {}
  Scalar(float v) : value(v), kind(floating) {}
  Scalar(double v) : value(v), kind(floating) {}
};

class Tensor {
 public:
  // ---- creation. `device` empty: HCQ_DEVICE, else "CPU".
  // From host data: data.size() must equal the shape's element count.
  template <class T>
  Tensor(const std::vector<T>& data, Shape shape, std::string device = {})
      : Tensor(std::as_bytes(std::span<const T>(data)), std::move(shape), host_dtype<T>(), std::move(device)) {}
  Tensor(std::span<const std::byte> bytes, Shape shape, DType dtype, std::string device = {});
  // A 0-d tensor.
  static Tensor scalar(Scalar v, DType dtype, std::string device = {});
  static Tensor scalar(Scalar v);  // dtype from the kind: bool, int32, float32
  static Tensor zeros(Shape shape, DType dtype = dtypes::float32, std::string device = {});
  static Tensor ones(Shape shape, DType dtype = dtypes::float32, std::string device = {});
  static Tensor full(Shape shape, Scalar v, DType dtype, std::string device = {});
  static Tensor full(Shape shape, Scalar v);  // dtype from the scalar's kind
  // Memory with unspecified contents (allocated when realized).
  static Tensor empty(Shape shape, DType dtype = dtypes::float32, std::string device = {});
  // [start, stop) in steps; arange(n) is 0..n-1. int32 unless a float is given or dtype says otherwise.
  static Tensor arange(Scalar stop);
  static Tensor arange(Scalar start, Scalar stop, Scalar step = 1, std::string device = {});
  static Tensor arange(Scalar start, Scalar stop, Scalar step, DType dtype, std::string device = {});
  static Tensor eye(int64_t n, DType dtype = dtypes::float32, std::string device = {});
  // Random numbers from a counter-based generator: element i of the k-th random tensor since manual_seed(s) is a
  // hash of (s, k, i), the same on every device and independent of how the graph is fused.
  static void manual_seed(uint64_t seed);
  static Tensor rand(Shape shape, DType dtype = dtypes::float32, std::string device = {});   // [0, 1)
  static Tensor randn(Shape shape, DType dtype = dtypes::float32, std::string device = {});  // N(0, 1)
  static Tensor uniform(Shape shape, double low, double high, DType dtype = dtypes::float32, std::string device = {});

  // A default-constructed Tensor is empty: every op on it throws InvalidArgument.
  Tensor() = default;

  // ---- what it is
  const Shape& shape() const;
  int64_t shape(int axis) const;  // negative counts from the end
  size_t ndim() const { return shape().size(); }
  int64_t numel() const;  // of shape(): a symbolic dimension counts at its maximum
  // With symbolic dimensions (narrow): each one at its bound value (shape() holds their maxima); data(), tolist()
  // and item() read that many elements. Without: shape() and numel().
  Shape bound_shape() const;
  int64_t bound_numel() const;
  DType dtype() const;
  const std::string& device() const;  // the device's canonical name, e.g. "CPU:0"
  bool defined() const { return impl_ != nullptr; }

  // ---- casts
  Tensor cast(DType t) const;
  Tensor bitcast(DType t) const;  // same element size only; DTypeError otherwise

  // ---- elementwise (numpy broadcasting; a Scalar on either side)
  Tensor neg() const;
  Tensor add(const Tensor& o) const;
  Tensor sub(const Tensor& o) const;
  Tensor mul(const Tensor& o) const;
  Tensor div(const Tensor& o) const;   // true division: integers give float32
  Tensor idiv(const Tensor& o) const;  // integers only: floor division (Python's //); x // 0 is 0
  Tensor mod(const Tensor& o) const;   // integers only: the sign of the divisor (Python's %); x % 0 is 0
  Tensor pow(const Tensor& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor minimum(const Tensor& o) const;
  Tensor add(Scalar s) const;
  Tensor sub(Scalar s) const;
  Tensor mul(Scalar s) const;
  Tensor div(Scalar s) const;
  Tensor idiv(Scalar s) const;
  Tensor mod(Scalar s) const;
  Tensor pow(Scalar s) const;
  Tensor maximum(Scalar s) const;
  Tensor minimum(Scalar s) const;
  Tensor exp() const;
  Tensor exp2() const;
  Tensor log() const;
  Tensor log2() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor abs() const;
  Tensor sign() const;
  Tensor reciprocal() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor gelu() const;  // tanh approximation, as tinygrad's
  Tensor silu() const;
  Tensor clip(Scalar lo, Scalar hi) const;
  // Comparisons give bool.
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor lt(Scalar s) const;
  Tensor le(Scalar s) const;
  Tensor gt(Scalar s) const;
  Tensor ge(Scalar s) const;
  Tensor eq(Scalar s) const;
  Tensor ne(Scalar s) const;
  // this ? a : b, elementwise; this is cast to bool.
  Tensor where(const Tensor& a, const Tensor& b) const;
  Tensor where(const Tensor& a, Scalar b) const;
  Tensor where(Scalar a, const Tensor& b) const;
  Tensor where(Scalar a, Scalar b) const;
  Tensor logical_and(const Tensor& o) const;
  Tensor logical_or(const Tensor& o) const;
  Tensor logical_not() const;

  // ---- reductions. `axes` empty: all axes. Negative axes count from the end.
  // sum and prod accumulate integers in int32 (uint32 for unsigned, int64 for int64) and halves in float32 (the
  // result is cast back to the half type), as tinygrad does.
  Tensor sum(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor sum(int axis, bool keepdim = false) const { return sum(std::vector<int>{axis}, keepdim); }
  Tensor max(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor max(int axis, bool keepdim = false) const { return max(std::vector<int>{axis}, keepdim); }
  Tensor min(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor min(int axis, bool keepdim = false) const { return min(std::vector<int>{axis}, keepdim); }
  Tensor mean(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor mean(int axis, bool keepdim = false) const { return mean(std::vector<int>{axis}, keepdim); }
  Tensor prod(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor prod(int axis, bool keepdim = false) const { return prod(std::vector<int>{axis}, keepdim); }
  Tensor var(std::vector<int> axes = {}, bool keepdim = false, int correction = 1) const;
  Tensor var(int axis, bool keepdim = false, int correction = 1) const {
    return var(std::vector<int>{axis}, keepdim, correction);
  }
  Tensor std(std::vector<int> axes = {}, bool keepdim = false, int correction = 1) const;
  Tensor std(int axis, bool keepdim = false, int correction = 1) const {
    return std(std::vector<int>{axis}, keepdim, correction);
  }
  // Index of the first maximum (minimum) along one axis, as int32; axis nullopt-like -1... see argmax_all().
  Tensor argmax(int axis, bool keepdim = false) const;
  Tensor argmin(int axis, bool keepdim = false) const;
  Tensor argmax() const;  // over the flattened tensor
  Tensor argmin() const;
  Tensor any(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor any(int axis, bool keepdim = false) const { return any(std::vector<int>{axis}, keepdim); }
  Tensor all(std::vector<int> axes = {}, bool keepdim = false) const;
  Tensor all(int axis, bool keepdim = false) const { return all(std::vector<int>{axis}, keepdim); }
  Tensor softmax(int axis = -1) const;
  Tensor log_softmax(int axis = -1) const;
  Tensor logsumexp(int axis, bool keepdim = false) const;
  Tensor cumsum(int axis = 0) const;

  // ---- movement: views, never copies
  Tensor reshape(Shape shape) const;  // one -1 is inferred
  Tensor permute(std::vector<int> order) const;
  Tensor transpose(int a = 1, int b = 0) const;
  Tensor expand(Shape shape) const;  // -1 keeps a dimension; new leading dimensions may be added
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> before_after, Scalar value = 0.0) const;
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> start_end) const;
  // Python slicing on one axis: negative indices count from the end, out-of-range ones are clamped, step != 0.
  Tensor slice(int axis, int64_t start, int64_t stop, int64_t step = 1) const;
  // A symbolic dimension (issue 20): only the first `size` elements of `axis` are present, `size` a bound Variable
  // (`n.bind(k)`), so one schedule, and one TinyJit capture, serve every value. shape() keeps the variable's maximum
  // there (the storage), bound_shape() the value. Elementwise ops, reductions (sum, max, mean, ... over it or other
  // axes), matmul and movement that keeps it a dimension of its own work on it; pad, shrink or flip of it, a
  // reshape merging it, and operands narrowed by different variables are ShapeErrors.
  //   hcq::Variable n("n", 1, 64);
  //   Tensor rows = x.narrow(0, n.bind(12));   // x (64, 784): rows 0..11
  Tensor narrow(int axis, const Tensor& size) const;
  Tensor flip(std::vector<int> axes) const;
  Tensor flip(int axis) const { return flip(std::vector<int>{axis}); }
  Tensor squeeze() const;  // every size-1 axis
  Tensor squeeze(int axis) const;
  Tensor unsqueeze(int axis) const;
  Tensor flatten(int start = 0, int end = -1) const;
  Tensor repeat(std::vector<int64_t> repeats) const;
  // this, then others, joined along axis (tinygrad's x.cat(y, z, dim=axis)).
  Tensor cat(const std::vector<Tensor>& others, int axis = 0) const;
  static Tensor stack(const std::vector<Tensor>& tensors, int axis = 0);

  // ---- linear algebra: numpy's matmul (1-d operands, batched, broadcast batch dims)
  Tensor matmul(const Tensor& o) const;
  Tensor dot(const Tensor& o) const { return matmul(o); }

  // ---- realisation
  Tensor contiguous() const;
  // Computes this tensor now (one schedule); returns *this, now backed by a buffer.
  Tensor& realize();
  // Several tensors in one schedule: shared work is done once.
  static void realize(std::vector<Tensor> tensors);
  // Stores o's value (broadcast, cast to this dtype) into this tensor's buffer in place. This must be realized (or
  // made from host data, or by empty()), or itself the result of an assign. Reads of the old value scheduled in
  // the same realize happen first; other tensors that were computed into this buffer's old value keep theirs only
  // if they were realized into buffers of their own.
  Tensor& assign(const Tensor& o);
  Tensor to(const std::string& device) const;
  // ---- several devices (include/hcq/multi.hpp): this tensor split along `axis` over `devices`, or copied whole to
  // each of them. A braced list needs its type spelled (to(std::vector<std::string>{"CPU:0", "CPU:1"})): it would
  // also match to(const std::string&).
  MultiTensor shard(const std::vector<std::string>& devices, int axis) const;
  MultiTensor to(const std::vector<std::string>& devices) const;
  // Realizes and reads back. data<T>() needs T to be this dtype's host type (bool, int8_t, uint8_t, int32_t,
  // uint32_t, int64_t, float16_t, bfloat16_t, float); tolist() converts any dtype to double.
  template <class T>
  std::vector<T> data() const {
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> packs bits: read bytes, then convert
      std::vector<uint8_t> raw(static_cast<size_t>(bound_numel()));
      read_into(std::as_writable_bytes(std::span<uint8_t>(raw)), DType::bool_);
      return std::vector<bool>(raw.begin(), raw.end());
    } else {
      std::vector<T> out(static_cast<size_t>(bound_numel()));
      read_into(std::as_writable_bytes(std::span<T>(out)), host_dtype<T>());
      return out;
    }
  }
  std::vector<double> tolist() const;
  // The scalar of a one-element tensor, as double.
  double item() const;

  // ---- autograd (framework/autograd): gradients as rules on the graph, computed lazily like every other value.
  // Marks this tensor as one whose gradient backward() fills in (model parameters, usually). Shared by the copies
  // of this handle; results of ops on it do not report requires_grad, but gradients flow through them.
  Tensor& requires_grad_(bool on = true);
  bool requires_grad() const;
  // The gradient the backward() calls so far accumulated for this tensor (a lazy tensor of its shape and dtype), or
  // an empty tensor (defined() false) before the first and after zero_grad().
  Tensor grad() const;
  void zero_grad();
  // Replaces the accumulated gradient with g (this tensor's shape, dtype and device; ShapeError, DTypeError,
  // InvalidArgument otherwise): what data-parallel training does with the allreduced sum of its replicas'.
  void set_grad(const Tensor& g);
  // d(this)/d(t) added to t.grad() for every live tensor t with requires_grad that this depends on, through ops
  // that are not detached. This must be a float tensor of one element. InvalidArgument when no such tensor is
  // reached (a realize() between them cuts the graph, as a detach() does).
  void backward() const;
  // The same value, through which no gradient flows.
  Tensor detach() const;

  // The graph node (framework internals, tools).
  const std::shared_ptr<const fw::NodeData>& node() const;
  explicit Tensor(std::shared_ptr<const fw::NodeData> node);

  template <class T>
  static constexpr DType host_dtype();

 private:
  struct Impl;
  friend struct fw::TensorAccess;
  void read_into(std::span<std::byte> out, DType want) const;
  std::shared_ptr<Impl> impl_;
};

template <class T>
constexpr DType Tensor::host_dtype() {
  if constexpr (std::is_same_v<T, bool>) return DType::bool_;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::int8;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::uint8;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::int32;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::uint32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::int64;
  else if constexpr (std::is_same_v<T, float16_t>) return DType::float16;
  else if constexpr (std::is_same_v<T, bfloat16_t>) return DType::bfloat16;
  else if constexpr (std::is_same_v<T, float>) return DType::float32;
  else static_assert(sizeof(T) == 0, "no hcq dtype for this host type");
}

// A named integer with bounds, bound to a value per call (tinygrad's Variable): the value reaches the kernels as
// a 32-bit kernel argument, so a graph that uses it is scheduled and compiled once for every value, and a TinyJit
// that gets it as an input replays with each call's value without capturing again.
//
//   hcq::Variable steps("steps", 1, 1000);
//   hcq::TinyJit f([&](const std::vector<hcq::Tensor>& in) { return std::vector{in[0] * in[1]}; });
//   for (int k = 1; k <= 10; ++k) f({x, steps.bind(k)});   // one capture, ten values
//
// Equality is by name and bounds: two Variables that agree on both are the same variable.
class Variable {
 public:
  // InvalidArgument: an empty name, min > max, or bounds outside int32.
  Variable(std::string name, int64_t min, int64_t max);
  const std::string& name() const { return name_; }
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  // A 0-d int32 tensor holding `value` (InvalidArgument naming the variable and its bounds when outside them).
  // Usable like any int32 scalar tensor; in a TinyJit's inputs it is bound per call.
  Tensor bind(int64_t value, std::string device = {}) const;

 private:
  std::string name_;
  int64_t min_, max_;
};

// What the framework did since the process started (tests, tools; like tinygrad's GlobalCounters): kernels
// launched, device copies, schedules built (cache misses) and reused (hits), kernels compiled (not from a cache).
struct FrameworkCounters {
  uint64_t kernels = 0, copies = 0, schedule_misses = 0, schedule_hits = 0, compiles = 0;
};
FrameworkCounters framework_counters();

// While one lives, tensors made on this thread are detached (no gradient flows through them): optimiser updates,
// evaluation. Scopes nest.
class NoGrad {
 public:
  NoGrad();
  ~NoGrad();
  NoGrad(const NoGrad&) = delete;
  NoGrad& operator=(const NoGrad&) = delete;

 private:
  bool previous_;
};

// Operators, so expressions read as they do in tinygrad.
inline Tensor operator-(const Tensor& a) { return a.neg(); }
inline Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
inline Tensor operator+(const Tensor& a, Scalar b) { return a.add(b); }
inline Tensor operator-(const Tensor& a, Scalar b) { return a.sub(b); }
inline Tensor operator*(const Tensor& a, Scalar b) { return a.mul(b); }
inline Tensor operator/(const Tensor& a, Scalar b) { return a.div(b); }
Tensor operator+(Scalar a, const Tensor& b);
Tensor operator-(Scalar a, const Tensor& b);
Tensor operator*(Scalar a, const Tensor& b);
Tensor operator/(Scalar a, const Tensor& b);
inline Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
inline Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
inline Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
inline Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
inline Tensor operator<(const Tensor& a, Scalar b) { return a.lt(b); }
inline Tensor operator<=(const Tensor& a, Scalar b) { return a.le(b); }
inline Tensor operator>(const Tensor& a, Scalar b) { return a.gt(b); }
inline Tensor operator>=(const Tensor& a, Scalar b) { return a.ge(b); }

}  // namespace hcq
