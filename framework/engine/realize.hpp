// The engine's entry points for the Tensor layer: make buffers, realize roots (callify, schedule cache, run),
// read back, and the counters.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "framework/ir/node.hpp"

#pragma once

namespace hcq {
class Buffer;
class Device;
}  // namespace hcq

namespace hcq::fw {

struct Schedule;

// A BUFFER node of n elements with fresh (lazily allocated) memory on `device`; n may be 0 (no memory).
Node new_buffer_node(const std::string& device, DType dtype, int64_t n);
// The same on a device already open, `name` its canonical name (TinyJit's per-call outputs: no registry lookup).
Node new_buffer_node(Device& device, const std::string& name, DType dtype, int64_t n);
// Another BUFFER node (a new id) over the same memory as `buffer`: graphs built on it share no node with graphs
// built on `buffer` (the JIT's capture, so what it realizes is not what the caller's lazy tensors read).
Node alias_buffer_node(const Node& buffer);
// A BUFFER, or a RESHAPE of one with the same element count: a realized tensor.
bool is_buffer_view(const Node& n);
// The BUFFER under a realized value: a buffer view, under the NARROWs of its symbolic dimensions when it has some.
const Node& buffer_of(const Node& value);
// The buffer view an assign chain (ASSIGN(ASSIGN(view, v1), v2)...) writes, or null when it ends elsewhere.
const Node* assign_base(const Node& n);
// Realizes the roots in one schedule; returns, for each, its realized node (a buffer view of the root's shape).
std::vector<Node> realize_nodes(const std::vector<Node>& roots);
// Copies a realized buffer view's elements to the host (waits for the kernels that write it).
void read_buffer_view(const Node& view, std::span<std::byte> out);

// Only the scheduling half of realize_nodes (callify, then the schedule cache, building on a miss), for
// benchmarks of its cost: returns the number of kernels and sets *hit. Runs nothing. The roots must not be
// realized already.
size_t schedule_only(const std::vector<Node>& roots, bool* hit);

// TinyJit's capture hook (framework/jit/capture.hpp): while a sink is installed on this thread, realize_nodes binds
// each schedule's slots as usual but hands the schedule and its bound buffers (per slot; null for an empty one) to
// the sink instead of launching the steps, and read_buffer_view asks the sink first (a host read during capture
// is an error: the replay would not read again).
class CaptureSink {
 public:
  virtual ~CaptureSink() = default;
  // `bound`: the BIND node that gave each of the call's variables (Schedule::vars) its value, by number;
  // `params`: the BUFFER node of each of the call's parameters (the first slots).
  virtual void record(std::shared_ptr<const Schedule> schedule, std::vector<std::shared_ptr<Buffer>> bufs,
                      std::vector<Node> bound, const std::vector<Node>& params) = 0;
  virtual void host_read() = 0;
  // A random tensor built during the capture: its key (framework/tensor/rng.hpp) is bound to variable `key` (a
  // DEFINE_VAR), drawn as the k-th.
  virtual void rng_draw(const Node& key, uint64_t k) = 0;
};
// This thread's sink (null: none). set_capture_sink returns the previous one.
CaptureSink* capture_sink();
CaptureSink* set_capture_sink(CaptureSink* sink);
// The engine's copy between buffers of any two devices (through the host when a CPU device's memory is not mapped
// on the destination), ordered on both devices' timelines: the JIT replays captured cross-device copies with it.
void copy_buffers(Buffer& dst, const Buffer& src);

// Per-kernel timing for profiling tools (hcq bench --step-kernels): while a timer is installed on this thread,
// realize_nodes runs each kernel alone, waited for and timed (as HCQ_DEBUG=2 does, without printing), and hands
// the kernel's name, opts, flops, bytes and seconds to the timer. A TinyJit capture runs nothing, so it reports
// nothing; an eager realize of the same graph runs the same kernels.
struct KernelTime {
  std::string name, opts, what;
  double flops = 0, bytes = 0, seconds = 0;
  uint32_t groups = 1;
};
class KernelTimer {
 public:
  virtual ~KernelTimer() = default;
  virtual void kernel(const KernelTime& t) = 0;
};
// This thread's timer (null: none). set_kernel_timer returns the previous one.
KernelTimer* set_kernel_timer(KernelTimer* timer);

FrameworkCounters counters();
// Forget every cached schedule (benchmarks of the miss path; tests).
void clear_schedule_cache();

}  // namespace hcq::fw
