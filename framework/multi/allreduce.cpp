// allreduce (include/hcq/multi.hpp): the element-wise sum (product, max, min) of one tensor per device, left on
// every device. Built from the graph's own pieces: COPY nodes (Tensor::to), which the engine runs as copies ordered
// on both devices' timelines, and elementwise ops on each device. Both algorithms combine the devices' values in
// one fixed order for each element, so every device ends with the same bits.
#include <algorithm>

#include "framework/multi/layout.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/multi.hpp"

namespace hcq {

using fw::shape_str;

namespace {

Tensor combine(const Tensor& a, const Tensor& b, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return a + b;
    case ReduceOp::prod: return a * b;
    case ReduceOp::max: return a.maximum(b);
    case ReduceOp::min: return a.minimum(b);
  }
  throw InvalidArgument("allreduce: unknown op");
}

// Device j copies every device's tensor and combines them in device order: N-1 copies into each device, one step.
std::vector<Tensor> direct(const std::vector<Tensor>& x, ReduceOp op) {
  std::vector<Tensor> out;
  for (const Tensor& mine : x) {
    Tensor acc = x.front().to(mine.device());
    for (size_t i = 1; i < x.size(); ++i) acc = combine(acc, x[i].to(mine.device()), op);
    out.push_back(acc);
  }
  return out;
}

// The flattened tensor in N chunks. Reduce-scatter: in step s device i sends chunk (i - s) mod N to device i + 1,
// which combines it with its own; after N-1 steps device i holds chunk i + 1 complete. Allgather: in step s device i
// sends chunk (i + 1 - s) mod N on to device i + 1, which keeps it. Each device sends and receives 2(N-1) chunks.
std::vector<Tensor> ring(const std::vector<Tensor>& x, ReduceOp op) {
  const size_t N = x.size();
  const int64_t n = x.front().numel();
  const multi::Bounds b = multi::split_bounds(n, N);
  std::vector<std::vector<Tensor>> chunk(N);  // chunk[device][c]
  for (size_t i = 0; i < N; ++i) chunk[i] = multi::cut(x[i].reshape({n}), 0, b);
  for (size_t s = 0; s + 1 < N; ++s) {
    for (size_t i = 0; i < N; ++i) {
      const size_t c = (i + N - s) % N, dst = (i + 1) % N;
      // Reads chunk (i - s) of device i, writes chunk (i - s) of device i + 1: no step reads what it writes.
      chunk[dst][c] = combine(chunk[i][c].to(x[dst].device()), chunk[dst][c], op);
    }
  }
  for (size_t s = 0; s + 1 < N; ++s) {
    for (size_t i = 0; i < N; ++i) {
      const size_t c = (i + 1 + N - s) % N, dst = (i + 1) % N;
      chunk[dst][c] = chunk[i][c].to(x[dst].device());
    }
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < N; ++i) {
    std::vector<Tensor> rest(chunk[i].begin() + 1, chunk[i].end());
    out.push_back(chunk[i].front().cat(rest, 0).reshape(x[i].shape()));
  }
  return out;
}

}  // namespace

uint64_t allreduce_ring_threshold() { return uint64_t{256} << 10; }

std::vector<Tensor> allreduce(const std::vector<Tensor>& per_device, ReduceOp op, AllreduceAlgo algo) {
  if (per_device.empty()) throw InvalidArgument("allreduce: no tensors");
  const Tensor& first = per_device.front();
  std::vector<std::string> devices;
  for (const Tensor& t : per_device) {
    if (!t.defined()) throw InvalidArgument("allreduce: an empty tensor");
    if (t.shape() != first.shape())
      throw ShapeError(cat("allreduce: tensors of ", shape_str(first.shape()), " on ", first.device(), " and ",
                           shape_str(t.shape()), " on ", t.device(), " (all must be equal)"));
    if (t.dtype() != first.dtype())
      throw DTypeError(cat("allreduce: tensors of ", dtype_name(first.dtype()), " on ", first.device(), " and ",
                           dtype_name(t.dtype()), " on ", t.device()));
    devices.push_back(t.device());
  }
  if (per_device.size() == 1) return per_device;
  check_devices_reach(devices);
  const uint64_t bytes = static_cast<uint64_t>(first.numel()) * dtype_size(first.dtype());
  // A ring needs a chunk per device. Over two devices it moves the same bytes into each device as the direct one
  // (the whole tensor) in two dependent steps, plus a kernel that gathers each sent chunk and one that joins the
  // chunks: measured slower (hcq bench framework.multi). From three devices up the direct one moves N-1 tensors
  // into each device against the ring's 2(N-1)/N, and below the threshold the ring's 2(N-1) steps cost more than
  // the bytes they save.
  const bool can_ring = first.numel() >= static_cast<int64_t>(per_device.size());
  if (algo == AllreduceAlgo::ring && !can_ring)
    throw ShapeError(cat("allreduce: a ring over ", per_device.size(), " devices needs at least as many elements, ",
                         shape_str(first.shape()), " has ", first.numel()));
  const bool use_ring = algo == AllreduceAlgo::ring || (algo == AllreduceAlgo::automatic && can_ring &&
                                                        per_device.size() > 2 && bytes >= allreduce_ring_threshold());
  return use_ring ? ring(per_device, op) : direct(per_device, op);
}

}  // namespace hcq
