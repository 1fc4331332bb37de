// Device: one GPU (or CPU) behind the HCQ interface. Owns the timeline, the allocator, and its hardware queues.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hcq/backend/thread_annotations.hpp"
#include "hcq/completion.hpp"
#include "hcq/cpu_features.hpp"
#include "hcq/hw_queue.hpp"
#include "hcq/matrix_unit.hpp"
#include "hcq/memory.hpp"
#include "hcq/program.hpp"
#include "hcq/signal.hpp"

namespace hcq {

class Allocator;
class Compiler;

namespace capture {
class Recent;
struct Submission;
struct RingDump;
}  // namespace capture

struct DeviceInfo {
  std::string name;       // "CPU:0", "AMD:1", "SIM-NV:hopper"
  std::string interface;  // "cpu", "kfd", "rm", "sim-kfd", ...
  std::string arch;       // "x86_64", "gfx1100", "sm_90"
  uint64_t memory_bytes = 0;
  uint32_t compute_queues = 0;
  uint32_t copy_queues = 0;
  std::string driver_version;
  // The GPU's 16-byte UUID as its kernel driver gives it, so a tool can find the same GPU through another API.
  // NVIDIA: RM's GPU_GET_GID_INFO bytes (what nvidia-smi prints as "GPU-..." and cuDeviceGetUuid returns). AMD: the
  // 16 lowercase hex digits of KFD's 64-bit unique_id, the characters ROCr writes after "GPU-". std::nullopt when
  // there is none: the CPU device, and an AMD GPU whose kernel reports no unique_id (0).
  std::optional<std::array<uint8_t, 16>> uuid = std::nullopt;
  // The largest launch this device's programs accept: every Program::limits() lies within it. An NV program may
  // allow fewer threads per group (its registers must fit the SM), never more.
  LaunchLimits launch_limits = {};
  // What the framework's code generator sizes kernels by (framework/codegen/target.cpp), each from the backend's own
  // vendor data. wave_size: the threads that run in lockstep, an AMD wavefront (KFD topology's wave_front_size: 64
  // on CDNA, 32 on RDNA, as the compiler builds for it) or an NVIDIA warp (32); 1 on the CPU device, whose threads of
  // a workgroup run one after another. shared_memory_bytes: the shared memory one workgroup may use (AMD: the LDS,
  // KFD's lds_size_in_kb; NVIDIA: the architecture's shared memory per block, opted in; CPU: the thread runner's
  // per-workgroup arena). compute_units: the units that run workgroups at once (AMD compute units, NVIDIA SMs, the
  // CPU device's worker threads).
  uint32_t wave_size = 1;
  uint32_t shared_memory_bytes = 0;
  uint32_t compute_units = 1;
  // Whether HWQueue::copy runs on a compute queue; when false, copies go on copy_queue() (AMD's PM4/AQL and NV's
  // compute engines have no copy command hcq encodes).
  bool copies_on_compute = false;
  // The CPU device: the instruction-set features its kernels may use and the bf16 matmul path they give
  // (hcq/cpu_features.hpp, drivers/cpu/cpu_features.cpp); std::nullopt on GPUs.
  std::optional<CpuIsa> cpu_isa = std::nullopt;
  // GPUs: the matrix instruction the code generator may use for half-type products (hcq/matrix_unit.hpp), from the
  // backend's per-generation data (AMD: amd::Target; NVIDIA: the SM version); none on the CPU device.
  MatrixUnit matrix_unit = MatrixUnit::none;
};

// Ownership: the registry opens devices and shares them (std::shared_ptr): each Buffer and Program made on a device
// keeps it open, so closing the registry (close_all_devices, or the process exiting) closes a device only once the
// last of them is gone. A device made outside the registry (a backend's open function, in tests) is owned by its
// maker alone, who keeps it open while anything made from it lives. Queues (HWQueue) and graphs do not keep
// their device open: destroy them first.
// Threads: a Device may be used from any number of threads: submissions (submit, reserve_timeline, launches,
// copies), waits, allocation and synchronize are thread-safe. Building one HWQueue is not: each thread builds its
// own.
class Device : public std::enable_shared_from_this<Device> {
 public:
  virtual ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const std::string& name() const { return name_; }
  virtual DeviceInfo info() const = 0;

  // ---- queues
  virtual std::unique_ptr<HWQueue> new_queue(QueueKind kind) = 0;
  std::unique_ptr<HWQueue> compute_queue() { return new_queue(QueueKind::compute); }
  std::unique_ptr<HWQueue> copy_queue() { return new_queue(QueueKind::copy); }

  // Bytes of the unified VA, and a wait for a signal to reach a value: what peer copies are ordered by (below).
  struct MemRange {
    uint64_t va = 0;
    uint64_t size = 0;
    bool overlaps(const MemRange& o) const { return va < o.va + o.size && o.va < va + size; }
  };
  struct Wait {
    const Signal* signal;
    uint64_t value;
  };

  // ---- timeline: every submission waits for the previous one (value v-1) and signals its own (v), on the device's
  // timeline signal; timeline_value() is the next v.
  //
  // submit() is the one call that does it: `queue` gets wait(timeline, v-1), then `build(queue)` appends the work,
  // then signal(timeline, v); the queue is submitted and the timeline advances only when all of that succeeded (a
  // command that fails to encode leaves no value that nothing would ever signal). Returns the completion {this, v}.
  //
  // Threads: any thread may submit. Submissions are serialised by the device's submission lock, held from the
  // reservation of v to the submit, so values reach the hardware in the order they were handed out. `build` runs
  // under that lock: it must not submit on this device itself.
  template <class Build>
  Completion submit(HWQueue& queue, Build&& build);

  // The same protocol for queues that carry the timeline values as variables (a bound queue resubmitted, a graph):
  // reserve a slot, patch wait_value()/signal_value() into the queue, submit it, then commit(). A slot holds the
  // device's submission lock until it is committed or destroyed (destroyed uncommitted, the value is not used).
  class TimelineSlot {
   public:
    TimelineSlot(TimelineSlot&& o) noexcept
        : dev_(o.dev_), value_(o.value_), peer_reads_(o.peer_reads_), joins_(std::move(o.joins_)) {
      o.dev_ = nullptr;
    }
    TimelineSlot& operator=(TimelineSlot&&) = delete;
    ~TimelineSlot();
    const Signal& signal() const;
    uint64_t wait_value() const { return value_ - 1; }
    uint64_t signal_value() const { return value_; }
    // The queue carrying signal_value() was submitted: advance the timeline, release the lock.
    Completion commit();

   private:
    friend class Device;
    TimelineSlot(Device& dev, uint64_t value) : dev_(&dev), value_(value) {}
    Device* dev_;
    uint64_t value_;
    std::optional<MemRange> peer_reads_;  // set for submit_touching: recorded as a peer copy at commit
    std::vector<Wait> joins_;             // submit_touching: the pending joins it must wait for
  };
  TimelineSlot reserve_timeline() HCQ_EXCLUDES(submit_mu_) HCQ_HANDS_OFF_LOCK;

  // ---- peer copies (HCQAllocator::transfer): ordered by the memory they touch, not by whole timelines.
  // A peer copy runs on the timeline of the device that drives it, but touches memory of another device too. Joining
  // it to that other device's timeline at once would order everything later there after it, the copy the other way
  // included: two devices exchanging tensors would copy one direction after the other. So the join stays pending
  // (defer_join): the other device's next submission waits for it first, unless that submission is itself a peer copy
  // that says which of the device's memory it reads (submit_touching) and misses the pending copy's bytes.
  // synchronize() waits for pending joins too; timeline values alone (last_submission(), timeline_value()) do not
  // include them.
  //
  // What a peer copy touching `r` (memory of this device) must wait for: the last submission here that may touch it
  // (anything but a peer copy that said it reads other bytes) and the pending joins of copies that touch it.
  std::vector<Wait> waits_touching(MemRange r) HCQ_EXCLUDES(submit_mu_);
  // `copied` (a copy another device drives) touches `r` of this device's memory: work here waits for it from the next
  // submission on, or, for a peer copy that misses `r`, not at all.
  void defer_join(const Completion& copied, MemRange r) HCQ_EXCLUDES(submit_mu_);
  // submit() for a peer copy driven here that reads `reads` of this device's memory and writes none: it waits only
  // for the pending joins that touch `reads`, and a later peer copy into other bytes here need not wait for it.
  template <class Build>
  Completion submit_touching(HWQueue& queue, MemRange reads, Build&& build);
  // From the host: waits for the pending copies into `r` (a read of this device's memory in place).
  void wait_for_copies_into(MemRange r) HCQ_EXCLUDES(submit_mu_);

  const Signal& timeline_signal() const { return timeline_.get(); }
  // The next value to signal. A snapshot when another thread may be submitting.
  uint64_t timeline_value() const { return timeline_value_.load(std::memory_order_acquire); }
  // Everything submitted on this device until now.
  Completion last_submission() const;
  // Waits for everything submitted so far (timeline_value()-1), re-raises a sticky error, frees side memory the
  // device is done with, and past 2^31 swaps to the shadow timeline signal and restarts at 1 (32-bit compares on
  // some GPUs). Any thread; submissions from other threads during it are not waited for.
  void synchronize() HCQ_EXCLUDES(submit_mu_);
  // For bring-up and tests: after a synchronize, restart the timeline at `next` (signal set to next-1).
  void set_timeline_value(uint64_t next) HCQ_EXCLUDES(submit_mu_);
  // Called after a timeline swap (e.g. the allocator resets its staging stamps).
  void on_timeline_reset(std::function<void()> fn);

  // ---- sticky error: the first fault the device reports; synchronize() rethrows it every time.
  void record_error(std::exception_ptr e);
  bool has_error() const;

  // ---- memory
  // Map fresh device memory at a new VA of the unified space. Throws OutOfMemory when the device has none.
  virtual Allocation alloc_memory(uint64_t size, const BufferSpec& spec) = 0;
  virtual void free_memory(const Allocation& a) = 0;
  // Make `a` (owned by another device, or host memory) accessible from this device at the same VA.
  virtual void map_memory(const Allocation& a);
  // Bytes allocated through alloc_memory and not freed.
  uint64_t bytes_in_use() const { return bytes_in_use_; }
  Allocator& allocator() { return *allocator_; }

  // Side memory for queues (kernargs, ...): see SideBlock.
  SideBlock alloc_side(uint64_t size, uint64_t align = 16);
  void free_side(const SideBlock& b);

  // ---- programs
  virtual Compiler& compiler() = 0;
  // Loads a binary produced by compiler(); throws InvalidArgument (unknown kernel) or CompileError (bad image).
  virtual std::unique_ptr<Program> load_program(const std::string& name, std::span<const uint8_t> binary) = 0;

  // ---- clocks: what a signal's timestamp counts
  virtual double ticks_to_us(uint64_t ticks) const = 0;

  // Called by Signal waits that time out on this device: appends queue positions and similar to a message.
  virtual std::string describe_state() const { return {}; }
  // Waits on a signal this device writes; a timeout error is enriched with describe_state().
  void wait_signal(const Signal& s, uint64_t value) const;
  // As above with an explicit timeout instead of HCQ_WAIT_TIMEOUT_MS.
  void wait_signal(const Signal& s, uint64_t value, std::chrono::milliseconds timeout) const;

  // ---- capture (include/hcq/backend/capture.hpp): this device's last submissions, kept always for hang bundles, and its
  // architecture name as the decoders take it (info().arch, read once).
  capture::Recent& recent_ring() const { return *recent_; }
  // The last submissions, oldest first, with device name and arch filled in.
  std::vector<capture::Submission> recent_submissions() const;
  const std::string& capture_arch() const;
  // For hang bundles: what each hardware ring holds between its read and write pointers (see capture::RingDump;
  // device and arch are filled in by the caller). Called on the error path while queues may still submit; must
  // not throw for a ring it cannot read (say so in an empty dump instead) and must not wait.
  virtual std::vector<capture::RingDump> pending_rings() const;

 protected:
  explicit Device(std::string name);
  // Subclasses call this at the end of their constructor (it allocates through the backend). A null allocator is
  // allowed for minimal devices (tests); allocator() must not be used then.
  void init_runtime(std::unique_ptr<Allocator> allocator);
  // Subclasses call this first in their destructor, while the hardware still runs and free_memory() still works:
  // it synchronizes (errors ignored), empties the allocator's cache and gives side memory back. ~Device cannot do
  // it: by then the subclass's free_memory() is gone. Idempotent.
  void shutdown_runtime() noexcept;
  void note_alloc(int64_t delta) { bytes_in_use_ += static_cast<uint64_t>(delta); }
  // For backends that learn of faults by looking (a channel's error notifier) rather than by an event: called while
  // a wait on this device sleeps (about every millisecond), when it times out, and by synchronize(). A non-null
  // result becomes the sticky error (record_error) and ends the wait. Must be cheap and thread-safe.
  virtual std::exception_ptr poll_fault() const { return nullptr; }
  // For backends whose device can wake a host waiter (an interrupt): blocks until `s` may have reached `target` or
  // `limit` passed and returns true, or returns false at once when the device does not wake waiters of `s` (the wait
  // then yields and backs off). Spurious wake-ups are fine. Called by wait_signal after a short spin; thread-safe.
  virtual bool sleep_on_signal(const Signal& /*s*/, uint64_t /*target*/, std::chrono::microseconds /*limit*/) const {
    return false;
  }

 private:
  friend class HWQueue;
  struct SidePool;
  // Keeps a signal the device may still write (a queue's completion signal) until the timeline passes the value
  // current now, then releases it: its slot must not go to a new owner while a late write can land there.
  void release_after_timeline(OwnedSignal s);
  void wait_signal_for(const Signal& s, uint64_t value, std::optional<std::chrono::milliseconds> timeout) const;
  TimelineSlot reserve_peer_copy(MemRange reads) HCQ_EXCLUDES(submit_mu_) HCQ_HANDS_OFF_LOCK;
  // Puts every pending join on the timeline: a compute-queue submission that waits for them.
  void flush_joins_locked() HCQ_REQUIRES(submit_mu_);
  void forget_peer_copies_locked() HCQ_REQUIRES(submit_mu_);
  // Appends the waits for the pending joins that touch `r`.
  void pending_waits_locked(MemRange r, std::vector<Wait>& out) const HCQ_REQUIRES(submit_mu_);
  friend class Completion;
  uint64_t epoch() const { return timeline_epoch_.load(std::memory_order_acquire); }
  std::string name_;
  const uint64_t serial_;  // unique in the process, never reused (pending joins name their driver by it)
  OwnedSignal timeline_, shadow_;
  // Serialises submissions on the timeline (see submit()); guards every change of the timeline's value and signal.
  Mutex submit_mu_;
  std::atomic<uint64_t> timeline_value_{1};  // written under submit_mu_, read by anyone
  std::atomic<uint64_t> timeline_epoch_{0};  // +1 at each restart of the timeline (swap, set_timeline_value)
  // Peer-copy ordering (see defer_join). The last submission that was not a peer copy, and the peer copies after it.
  struct PeerCopy {
    uint64_t value;
    MemRange reads;
  };
  struct PendingJoin {
    Completion copied;
    uint64_t driver_serial;  // copied.device(), while it is up
    MemRange range;
    // The wait for it, or none when it is over: its driver was shut down or its timeline restarted since.
    std::optional<Wait> wait() const;
  };
  // Past this many, the lists fall back to whole-timeline order: a flush, or the peer copies counted as untracked.
  static constexpr size_t kMaxPeerEntries = 64;
  uint64_t last_untracked_ HCQ_GUARDED_BY(submit_mu_) = 0;
  std::vector<PeerCopy> peer_copies_ HCQ_GUARDED_BY(submit_mu_);
  std::vector<PendingJoin> pending_joins_ HCQ_GUARDED_BY(submit_mu_);
  mutable Mutex err_mu_;
  std::exception_ptr error_ HCQ_GUARDED_BY(err_mu_);
  std::vector<std::function<void()>> on_reset_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<SidePool> side_;
  uint64_t bytes_in_use_ = 0;
  std::unique_ptr<capture::Recent> recent_;  // never null
  mutable std::once_flag arch_once_;
  mutable std::string arch_;
};

template <class Build>
Completion Device::submit(HWQueue& queue, Build&& build) {
  TimelineSlot slot = reserve_timeline();
  queue.wait(slot.signal(), slot.wait_value());
  build(queue);
  queue.signal(slot.signal(), slot.signal_value()).submit();
  return slot.commit();
}

template <class Build>
Completion Device::submit_touching(HWQueue& queue, MemRange reads, Build&& build) {
  TimelineSlot slot = reserve_peer_copy(reads);
  queue.wait(slot.signal(), slot.wait_value());
  for (const Wait& w : slot.joins_) queue.wait(*w.signal, w.value);
  build(queue);
  queue.signal(slot.signal(), slot.signal_value()).submit();
  return slot.commit();
}

}  // namespace hcq
