// MultiTensor: one logical tensor spread over several devices (issue 18), either split along one axis (sharded) or
// copied whole to each (replicated). It holds one lazy Tensor per device; an op on it is the same op on each
// device's part, and the steps that need another device's data (a reduction over the split axis, a matmul whose
// inner dimension is split, gathering) are explicit cross-device copies in the graph, ordered on both devices'
// timelines by the engine.
//
//   hcq::Tensor x = hcq::Tensor::arange(0.0, 12.0).reshape({4, 3});
//   hcq::MultiTensor xs = x.shard({"CPU:0", "CPU:1"}, 0);   // rows 0-1 on CPU:0, rows 2-3 on CPU:1
//   hcq::MultiTensor s = (xs * 2).sum(0);                   // partial sums per device, then an allreduce
//   std::vector<float> v = s.data<float>();                 // [36, 44, 52] (replicated: any device's copy)
//
// Uneven shards are supported: an axis of n over N devices gives the first n % N devices one element more. An axis
// shorter than the device count is refused (a device would hold nothing). A device may appear more than once.
// Errors: ShapeError (the op and the shapes), InvalidArgument (devices that differ between operands, devices that
// cannot reach each other: both named, and what to do), and those of the per-device ops.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hcq/tensor.hpp"

namespace hcq {

// How allreduce combines the devices' values, element by element.
enum class ReduceOp : uint8_t { sum, prod, max, min };

// Which algorithm allreduce uses. automatic: the ring over three or more devices from allreduce_ring_threshold()
// bytes (when the tensor has at least one element per device), direct otherwise (over two devices both move the
// whole tensor into each device, and the direct one does it in one step).
enum class AllreduceAlgo : uint8_t { automatic, direct, ring };

// The element-wise `op` of the tensors (one per device, equal shapes and dtypes), as one tensor per device, each on
// its input's device. Lazy like every op: realize the results (together: Tensor::realize(vector)) to run it.
//   direct: every device copies every other device's whole tensor and combines them (N-1 copies into each device;
//           the fewest steps, for small tensors);
//   ring:   the flattened tensor is cut into N chunks; N-1 reduce-scatter steps (device i sends one chunk to device
//           i+1, which combines it with its own), then N-1 allgather steps (the finished chunks travel on round the
//           ring): each device sends and receives 2(N-1)/N of the tensor, whatever N is.
std::vector<Tensor> allreduce(const std::vector<Tensor>& per_device, ReduceOp op = ReduceOp::sum,
                              AllreduceAlgo algo = AllreduceAlgo::automatic);
// Bytes from which automatic picks the ring.
uint64_t allreduce_ring_threshold();

// Throws InvalidArgument naming both devices and what to do when any two of `devices` cannot copy to each other
// (GPUs of different drivers, without a peer mapping). Each pair is probed once per process with a real copy.
void check_devices_reach(const std::vector<std::string>& devices);

class MultiTensor {
 public:
  static constexpr int replicated = -1;

  // t split along `axis` (negative counts from the end) over `devices`.
  static MultiTensor shard(const Tensor& t, const std::vector<std::string>& devices, int axis);
  // t copied to each of `devices`.
  static MultiTensor replicate(const Tensor& t, const std::vector<std::string>& devices);
  // From parts already on their devices: `axis` replicated (each part is the whole) or the axis they are split on.
  static MultiTensor from_parts(std::vector<Tensor> parts, int axis);

  MultiTensor() = default;

  // ---- what it is
  const Shape& shape() const { return shape_; }  // the logical shape
  size_t ndim() const { return shape_.size(); }
  DType dtype() const;
  int axis() const { return axis_; }  // the split axis, or `replicated`
  bool is_replicated() const { return axis_ == replicated; }
  const std::vector<std::string>& devices() const { return devices_; }
  const std::vector<Tensor>& parts() const { return parts_; }
  // [start, end) of the split axis that each device holds (sharded only).
  std::vector<std::pair<int64_t, int64_t>> bounds() const;

  // ---- elementwise. Both operands on the same devices. numpy broadcasting; operands split on different axes are
  // gathered first (the second to replicated), a replicated operand against a sharded one is cut locally.
  MultiTensor add(const MultiTensor& o) const;
  MultiTensor sub(const MultiTensor& o) const;
  MultiTensor mul(const MultiTensor& o) const;
  MultiTensor div(const MultiTensor& o) const;
  MultiTensor maximum(const MultiTensor& o) const;
  MultiTensor minimum(const MultiTensor& o) const;
  MultiTensor lt(const MultiTensor& o) const;
  MultiTensor eq(const MultiTensor& o) const;
  MultiTensor where(const MultiTensor& a, const MultiTensor& b) const;
  // Any binary elementwise Tensor op (f(a, b) must broadcast as numpy does and keep the broadcast shape).
  MultiTensor binary(const MultiTensor& o, const std::function<Tensor(const Tensor&, const Tensor&)>& f) const;
  MultiTensor add(Scalar s) const;
  MultiTensor sub(Scalar s) const;
  MultiTensor mul(Scalar s) const;
  MultiTensor div(Scalar s) const;
  MultiTensor neg() const;
  MultiTensor exp() const;
  MultiTensor log() const;
  MultiTensor sqrt() const;
  MultiTensor relu() const;
  MultiTensor sigmoid() const;
  MultiTensor tanh() const;
  MultiTensor abs() const;
  MultiTensor cast(DType t) const;
  // Any elementwise, shape-keeping unary Tensor op.
  MultiTensor unary(const std::function<Tensor(const Tensor&)>& f) const;

  // ---- reductions. Over the split axis: each device reduces its part, then an allreduce combines them (the result
  // is replicated). Over other axes: per device, the result stays split.
  MultiTensor sum(std::vector<int> axes = {}, bool keepdim = false) const;
  MultiTensor sum(int axis, bool keepdim = false) const { return sum(std::vector<int>{axis}, keepdim); }
  MultiTensor max(std::vector<int> axes = {}, bool keepdim = false) const;
  MultiTensor max(int axis, bool keepdim = false) const { return max(std::vector<int>{axis}, keepdim); }
  MultiTensor min(std::vector<int> axes = {}, bool keepdim = false) const;
  MultiTensor min(int axis, bool keepdim = false) const { return min(std::vector<int>{axis}, keepdim); }
  MultiTensor prod(std::vector<int> axes = {}, bool keepdim = false) const;
  MultiTensor mean(std::vector<int> axes = {}, bool keepdim = false) const;
  MultiTensor mean(int axis, bool keepdim = false) const { return mean(std::vector<int>{axis}, keepdim); }

  // ---- movement. The split axis must survive: reshape keeps it when it stays one axis of the same size with the
  // same elements before it (ShapeError with both shapes otherwise); pad, shrink, slice and flip act on other
  // axes only (the split axis: ShapeError); expand and permute keep it wherever it goes.
  MultiTensor reshape(Shape shape) const;
  MultiTensor permute(std::vector<int> order) const;
  MultiTensor transpose(int a = 1, int b = 0) const;
  MultiTensor expand(Shape shape) const;
  MultiTensor pad(std::vector<std::pair<int64_t, int64_t>> before_after, Scalar value = 0.0) const;
  MultiTensor shrink(std::vector<std::pair<int64_t, int64_t>> start_end) const;
  MultiTensor slice(int axis, int64_t start, int64_t stop, int64_t step = 1) const;
  MultiTensor flip(int axis) const;
  MultiTensor unsqueeze(int axis) const;
  MultiTensor squeeze(int axis) const;
  MultiTensor flatten(int start = 0, int end = -1) const;

  // ---- matmul (both at least 2-d, batch dimensions broadcast). Split rows of this or columns of o: per device,
  // the result split the same way. Split inner dimension (either operand, or both with the same bounds): per-device
  // partial products, then an allreduce (replicated result). Other splits are gathered to replicated first.
  MultiTensor matmul(const MultiTensor& o) const;

  // ---- moving between layouts
  // Every device gets the whole tensor (an allgather: N-1 copies into each device). Replicated: itself.
  MultiTensor to_replicated() const;
  // Split along `axis` (from replicated: each device cuts its part locally; from another split: gathered first).
  MultiTensor reshard(int axis) const;
  // The whole tensor on one device.
  Tensor gather(const std::string& device) const;

  // ---- realisation: every device's part in one schedule.
  MultiTensor& realize();
  template <class T>
  std::vector<T> data() const {
    return gather(devices_.front()).data<T>();
  }
  std::vector<double> tolist() const { return gather(devices_.front()).tolist(); }

 private:
  MultiTensor(std::vector<Tensor> parts, std::vector<std::string> devices, int axis, Shape shape)
      : parts_(std::move(parts)), devices_(std::move(devices)), axis_(axis), shape_(std::move(shape)) {}
  MultiTensor per_part(const std::function<Tensor(const Tensor&)>& f, int new_axis, Shape new_shape) const;
  MultiTensor reduce(ReduceOp op, std::vector<int> axes, bool keepdim, const char* what) const;

  std::vector<Tensor> parts_;
  std::vector<std::string> devices_;  // canonical names, one per part
  int axis_ = replicated;
  Shape shape_;
};

inline MultiTensor operator-(const MultiTensor& a) { return a.neg(); }
inline MultiTensor operator+(const MultiTensor& a, const MultiTensor& b) { return a.add(b); }
inline MultiTensor operator-(const MultiTensor& a, const MultiTensor& b) { return a.sub(b); }
inline MultiTensor operator*(const MultiTensor& a, const MultiTensor& b) { return a.mul(b); }
inline MultiTensor operator/(const MultiTensor& a, const MultiTensor& b) { return a.div(b); }
inline MultiTensor operator+(const MultiTensor& a, Scalar b) { return a.add(b); }
inline MultiTensor operator-(const MultiTensor& a, Scalar b) { return a.sub(b); }
inline MultiTensor operator*(const MultiTensor& a, Scalar b) { return a.mul(b); }
inline MultiTensor operator/(const MultiTensor& a, Scalar b) { return a.div(b); }

}  // namespace hcq
