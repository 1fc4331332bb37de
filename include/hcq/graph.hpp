// Graph: an ordered list of kernel launches and copies over one or several devices, built once into patchable,
// bound hardware queues and replayed for a few nanoseconds of host time per call.
//
// Build: each device gets one compute queue (and one copy queue when it has copy calls and a copy engine). Calls
// that touch overlapping bytes, one of them writing, are ordered; a cross-queue wait is encoded only where the
// in-order queues and the waits already placed do not imply it (see GraphSchedule).
// Replay: the caller's variables (input buffer addresses, launch dims, scalars) plus, per device, the timeline
// signal's address and value are patched (only what changed), every queue is submitted, and one host write of a
// kick-off signal releases them all.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "hcq/completion.hpp"
#include "hcq/device.hpp"
#include "hcq/hw_queue.hpp"
#include "hcq/signal.hpp"
#include "hcq/sym.hpp"

namespace hcq {

class Buffer;
class Device;
class Program;

enum class Access : uint8_t { read = 1, write = 2, read_write = 3 };

// Bytes a call touches: [addr, addr + size). The address is a constant or a variable (+ offset).
// Aliasing contract: ranges based on different variables, or on a variable and a constant, are taken to be
// disjoint, so the input buffers of a replay must not overlap each other or the graph's constant buffers.
struct BufferUse {
  Sym addr;
  uint64_t size = 0;
  Access access = Access::read_write;
};

// The whole of `buffer` (allocated now if it was not), at its constant address.
BufferUse use(const Buffer& buffer, Access access = Access::read_write);

// A kernel launch. The Program must outlive the Graph; it runs on program->device().
struct KernelCall {
  const Program* program = nullptr;
  std::vector<BufferUse> bufs;  // the kernel's buffers, in order; their addresses are its arguments
  std::vector<Sym> vals;        // its 32-bit values
  Dims global{1, 1, 1}, local{1, 1, 1};
};

// A copy of `size` bytes, run by `device` (its copy queue when it has one, else its compute queue). Both ranges
// must be mapped on that device (unified VA: the same addresses everywhere).
struct CopyCall {
  Device* device = nullptr;
  Sym dst, src;
  uint64_t size = 0;
};

using GraphCall = std::variant<KernelCall, CopyCall>;

// The dependency layout of a graph, computed from queues and byte ranges alone (no device needed, so it is
// tested on its own). Queues 0..num_devices-1 are the devices' compute queues, which also hold each device's
// entry (wait for the device's timeline) and exit (signal it). Each queue has a progress signal; it reaches
// 1 after the entry (compute queues only) and `call index + 2` after a call that signals.
struct GraphSchedule {
  struct Range {
    int32_t var = -1;         // the address variable, or -1 for a constant address
    uint64_t lo = 0, hi = 0;  // [lo, hi): offsets from the variable (or absolute addresses)
    bool write = false;
  };
  struct Input {
    uint32_t num_devices = 0;
    std::vector<uint32_t> queue_device;  // per queue: its device; queue d < num_devices is device d's compute queue
    struct Call {
      uint32_t queue = 0;
      std::vector<Range> ranges;
    };
    std::vector<Call> calls;
  };
  struct Wait {
    uint32_t queue = 0;
    uint64_t value = 0;  // until that queue's progress signal >= value
  };
  struct Step {
    uint32_t queue = 0;
    std::vector<Wait> waits;  // encoded before the call
    bool signals = false;     // a later wait needs this call's progress value
  };

  std::vector<Step> steps;                    // one per call, in call order
  std::vector<std::vector<Wait>> exit_waits;  // per device: what its compute queue waits before the exit
  std::vector<uint8_t> entry_signals;         // per device: whether some queue waits for the entry
  std::vector<uint64_t> last_value;           // per queue: the progress value after its last call (1: none)

  static uint64_t value_of(size_t call) { return call + 2; }
  static constexpr uint64_t kEntryValue = 1;
  // Throws InvalidArgument for a queue or device index out of range.
  static GraphSchedule build(const Input& in);
  size_t num_waits() const;
};

struct GraphOptions {
  // Copies of every queue (with their own kernargs and progress signals), used in turn: a replay patches one set
  // while the previous replay may still run on another. A replay waits only for the last run of its own set.
  uint32_t sets = 2;
  bool bind = true;  // bind queues into device memory (where the backend supports it)
  // The kick-off counter restarts at 1 (after waiting for every set) once it reaches this: devices with 32-bit
  // compares would misread it past 2^31. Tests lower it to see the restart.
  uint64_t kick_limit = uint64_t{1} << 31;
};

// Ownership: the Graph owns its queues and signals; the devices and programs it names must outlive it. Destroying it
// waits for its last replay.
// Threads: one thread at a time replays a given graph (it patches its own queues); replays of different graphs and
// other submissions from other threads are ordered on the devices' timelines.
class Graph {
 public:
  explicit Graph(std::vector<GraphCall> calls, GraphOptions opts = {});
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Runs every call once, in the order given (as the dependencies require), after all work submitted earlier to
  // the graph's devices. vars[i] is the value of Var{i}; at least num_vars() values. Symbolic launch dims are
  // checked before anything is submitted (InvalidArgument). Returns without waiting for the device: one completion
  // per device of devices(), in that order, valid until the next replay (copy them to keep them).
  std::span<const Completion> replay(std::span<const uint64_t> vars);
  // Waits until every replay submitted so far has finished on every device.
  void wait();

  // The number of caller variables the calls use (highest Var id + 1).
  size_t num_vars() const { return user_vars_; }
  const std::vector<Device*>& devices() const { return devices_; }
  const GraphSchedule& schedule() const { return schedule_; }
  size_t num_queues() const { return queue_kinds_.size(); }
  size_t num_calls() const { return calls_.size(); }
  uint64_t kick_value() const { return kick_; }

 private:
  struct Set;
  void check_calls();
  void plan_queues(GraphSchedule::Input& in);
  void build_set(Set& s);
  void wait_set(Set& s);
  void check_dims(std::span<const uint64_t> vars) const;

  std::vector<GraphCall> calls_;
  GraphOptions opts_;
  std::vector<Device*> devices_;
  std::vector<uint32_t> call_queue_;    // per call: its queue
  std::vector<uint32_t> queue_device_;  // per queue: device index
  std::vector<QueueKind> queue_kinds_;
  GraphSchedule schedule_;
  std::vector<std::unique_ptr<Set>> sets_;
  std::vector<size_t> dim_checks_;  // kernel calls with symbolic dims
  size_t user_vars_ = 0;
  uint16_t kick_var_ = 0;             // then per device: timeline address, timeline value
  std::vector<uint64_t> vars_;        // caller's values + the graph's own, reused by every replay
  std::vector<uint32_t> lock_order_;  // device indices by address: the order timeline slots are taken in
  std::vector<std::optional<Device::TimelineSlot>> slots_;  // per device, held during one replay
  std::vector<Completion> completions_;                     // per device, from the last replay
  OwnedSignal kick_signal_;
  uint64_t kick_ = 0;
  uint64_t runs_ = 0;
  bool broken_ = false;  // a replay failed half-way: some queues wait a kick that never came
};

}  // namespace hcq
