// The seam between the simulated KFD driver (drivers/sim/kfd) and the simulated GPU's packet engines
// (drivers/sim/amd_engine). The driver owns queues, memory and events; an engine executes one queue's packets.
//
// Lifetime: the driver creates one QueueRunner per CREATE_QUEUE (through the QueueRunnerFactory it was given) and
// destroys it on DESTROY_QUEUE or when the process's /dev/kfd is closed. The QueueHost and everything reachable
// from it outlive the runner. A runner must not call into its host after its destructor has returned; the
// destructor must stop any thread the runner started.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sim/common/cache_ops.hpp"

namespace hcq::amd {
struct Target;
}

namespace hcq::sim {

class GpuView;

// Why the GPU's MMU refused an access (kfd_memory_exception_failure: NotPresent, ReadOnly, NoExecute).
enum class MemoryFailure : uint8_t { not_present, read_only, no_execute };

// What CREATE_QUEUE asked for, after validation. All addresses are GPU VAs (the same as host VAs in this process).
enum class SimQueueType : uint8_t {
  compute_pm4,  // KFD_IOC_QUEUE_TYPE_COMPUTE: PM4 ring; write pointer in dwords
  sdma,         // KFD_IOC_QUEUE_TYPE_SDMA (and SDMA_XGMI): SDMA ring; write pointer in bytes
  compute_aql,  // KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: AQL ring of 64-byte packets; write pointer in packets
};

const char* to_string(SimQueueType t);

struct SimQueueDesc {
  uint32_t queue_id = 0;                // as returned to the process
  uint32_t gpu_id = 0;                  // the topology gpu_id of the GPU the queue runs on
  const amd::Target* target = nullptr;  // the GPU's packet dialects and registers (drivers/amd/target.hpp)
  uint32_t num_xcc = 1;                 // gfx942: 6 (or as the partition mode says); others 1
  uint32_t lds_bytes = 64 * 1024;       // LDS a workgroup may allocate (the topology's lds_size_in_kb)
  SimQueueType type = SimQueueType::compute_pm4;
  uint64_t ring_va = 0;          // ring_base_address
  uint64_t ring_size = 0;        // bytes, a power of two
  uint64_t rptr_va = 0;          // read_pointer_address: the runner stores its read pointer here (same units as wptr)
  uint64_t wptr_va = 0;          // write_pointer_address: the process stores its write pointer here (64-bit)
  uint64_t doorbell_offset = 0;  // the doorbell's byte offset in the process's doorbell page (what mmap used)
  uint64_t eop_va = 0, eop_size = 0;            // PM4/AQL end-of-pipe buffer (0 for SDMA)
  uint64_t ctx_save_va = 0, ctx_save_size = 0;  // CWSR area (0 if none)
  uint32_t queue_percentage = 100, queue_priority = 7;
};

// Services the driver gives a runner. All methods are thread-safe and may be called from the runner's threads.
class QueueHost {
 public:
  virtual ~QueueHost() = default;
  // A host pointer for [va, va+size) of GPU memory mapped on this queue's GPU, or nullptr if any byte of the range
  // lies outside every mapping (a GPU page fault: the runner then calls fault()). The pointer stays valid until the
  // process frees that buffer; a runner must not keep it across packets.
  virtual std::byte* translate(uint64_t va, uint64_t size) = 0;
  // The GPU's free-running timestamp counter (100 MHz, like the RLC/SMU reference clock real parts report).
  virtual uint64_t gpu_clock() = 0;
  // A RELEASE_MEM/AQL completion that asked for an interrupt: KFD semantics (kfd_signal_event_interrupt):
  // `context_id` names an event whose slot in the event page was written, or 0 to scan the whole event page.
  virtual void interrupt(uint32_t context_id) = 0;
  // The queue faulted (unknown opcode, malformed packet, unmapped address). The driver marks the queue faulted,
  // records the reason and fires the process's memory-exception (if `address` is set) or HW-exception events.
  // The runner must stop fetching packets from this queue after calling it.
  virtual void fault(uint64_t address, bool is_memory_fault, const std::string& reason) = 0;
  // A page fault (is_memory_fault) with what the GPU's MMU found (KFD's memory-exception failure bits). The default
  // (test hosts) reports it as not present.
  virtual void memory_fault(uint64_t address, MemoryFailure failure, const std::string& reason) {
    (void)failure;
    fault(address, true, reason);
  }
  // A command asked for cache maintenance (CacheOps bits, sim/common/cache_ops.hpp), in order with the queue's
  // other work: everything before it has completed. The default (test hosts) has no caches.
  virtual void caches(uint8_t ops) { (void)ops; }
  // The GPU's mirror of its page tables (sim/common/gpu_view.hpp), where kernels run; null: none (test hosts), then
  // kernels reach memory through translate().
  virtual GpuView* view() { return nullptr; }
};

// Executes one queue. The driver calls doorbell() from the thread that wrote the doorbell (through
// Os::write_doorbell*), with the value written: the new write pointer in the queue type's units. The runner reads
// the ring from its read pointer up to that value (it may also re-read *wptr_va), executes what it finds and
// stores its read pointer at rptr_va as it consumes packets. doorbell() must not block on the GPU work.
class QueueRunner {
 public:
  virtual ~QueueRunner() = default;
  virtual void doorbell(uint64_t value) = 0;
  // One line for hang reports: read/write pointers, the state the queue is in (idle, waiting on WAIT_REG_MEM at
  // ..., faulted: ...).
  virtual std::string describe() const = 0;
};

// Makes a runner for a newly created queue. The returned runner's lifetime is bounded by `host`'s.
using QueueRunnerFactory = std::function<std::unique_ptr<QueueRunner>(const SimQueueDesc&, QueueHost& host)>;

}  // namespace hcq::sim
