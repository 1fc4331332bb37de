// The seam between the simulated RM + UVM kernel driver (drivers/sim/nv) and the simulated GPU's GPFIFO executor
// (drivers/sim/nv_engine). The driver owns the object tree, memory, VA spaces and channels; a runner executes one
// channel's GPFIFO entries and pushbuffer methods.
//
// Lifetime: the driver creates one ChannelRunner per GPFIFO channel object (through the ChannelRunnerFactory it was
// given) when the channel is allocated, and destroys it when the channel (or an ancestor: channel group, device,
// client) is freed or the process's last /dev/nvidiactl is closed. The ChannelHost and everything reachable from it
// outlive the runner. A runner must not call into its host after its destructor has returned; the destructor must
// stop any thread the runner started.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nv/facts/arch.hpp"
#include "sim/common/cache_ops.hpp"

namespace hcq::sim {

class GpuView;

// The engine a channel was allocated for (NV_CHANNEL_ALLOC_PARAMS.engineType: GR0 -> compute, COPYn -> copy).
enum class NvEngineKind : uint8_t { compute, copy };

const char* to_string(NvEngineKind k);

// What a GPFIFO channel allocation asked for, after validation. All addresses are GPU VAs in the channel's VA
// space; with UVM they equal the host addresses of the memory in this process.
struct ChannelDesc {
  nv::NvArch arch{};          // the GPU's architecture (drivers/nv/facts/arch.hpp)
  uint32_t gpu_index = 0;     // /dev/nvidia<gpu_index>
  uint32_t channel_id = 0;    // the channel's id on its GPU (ChID), unique per GPU while the channel lives
  uint32_t gpfifo_class = 0;  // the channel class the process allocated (0xc56f AMPERE_CHANNEL_GPFIFO_A, ...)
  NvEngineKind engine = NvEngineKind::compute;
  uint32_t engine_instance = 0;  // COPYn: n; GR: 0
  uint64_t gpfifo_va = 0;        // gpFifoOffset: the ring of 8-byte GPFIFO entries
  uint32_t gpfifo_entries = 0;   // gpFifoEntries (a power of two)
  // The channel's USERD (the class's control struct, GPGet/GPPut at its offsets). RM finds USERD through the memory
  // handle and offset the process gave, not through a GPU mapping, so this is an address in a driver-private
  // aperture that translate() resolves to those bytes (the same the process sees through its CPU mapping).
  uint64_t userd_va = 0;
  uint32_t work_submit_token = 0;  // what the process writes to the usermode doorbell to wake this channel
};

// How a channel went wrong; the driver turns it into the RM error code it writes to the channel's error notifier
// (nverror.h ROBUST_CHANNEL_*), so the backend sees it as it would on hardware.
enum class ChannelFaultKind : uint8_t {
  mmu_fault,     // an unmapped or protected GPU VA (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, 31)
  pbdma_error,   // a bad GPFIFO entry, method or method data the host (PBDMA) rejects (ROBUST_CHANNEL_PBDMA_ERROR, 32)
  gr_exception,  // a compute-class error: bad QMD, launch the SMs refuse, SM error (ROBUST_CHANNEL_GR_EXCEPTION, 13)
  ce_error,      // a copy-engine error (ROBUST_CHANNEL_CE_ERROR(engine_instance))
};

const char* to_string(ChannelFaultKind k);

// The access an MMU fault was taken on (NV_PFAULT_ACCESS_TYPE_VIRT_*).
enum class MmuAccess : uint8_t { read, write, atomic, prefetch };

const char* to_string(MmuAccess a);

// The unit of an SM that made a faulting access; RM's fault record names it as the GPC client.
enum class SmClient : uint8_t {
  none,            // not an SM: the host (PBDMA), the front end or a copy engine
  constant_cache,  // instruction fetch and constant banks (the GPC constant cache, GCC)
  l1,              // the kernel's own loads, stores and atomics (the SM's L1/texture unit, a T1 client)
};

struct ChannelFault {
  ChannelFaultKind kind = ChannelFaultKind::pbdma_error;
  uint64_t address = 0;                // the faulting VA (mmu_fault), or 0
  uint64_t gpfifo_position = 0;        // GPGet of the entry being executed when it happened
  std::string reason;                  // one line for people: method, subchannel, class, what was expected vs found
  MmuAccess access = MmuAccess::read;  // mmu_fault: the access that faulted
  // mmu_fault: whether an SM made the access (a kernel's instruction fetch, constant bank or data), so the fault
  // comes from a GPC client of GR. RM records only those for the compute context (GT200_DEBUGGER's
  // READ_MMU_FAULT_INFO); the host's, the front end's and the copy engines' it reports through the notifier and the
  // kernel log only.
  SmClient sm = SmClient::none;
  // The copy engine made the access or raised the error. RM's notifier names the engine that faulted (COPYn), which
  // for a copy channel in a graphics channel group is not the group's engine.
  bool by_copy_engine = false;
};

// Services the driver gives a runner. All methods are thread-safe and may be called from the runner's threads.
class ChannelHost {
 public:
  virtual ~ChannelHost() = default;
  // A host pointer for [va, va+size) of memory mapped in the channel's VA space, or nullptr if any byte of the
  // range lies outside every mapping (the runner then reports an mmu_fault). Where the process has the bytes mapped
  // it is the process's own address for them. The pointer stays valid until the process frees or unmaps that
  // memory; a runner must not keep it across GPFIFO entries.
  virtual std::byte* translate(uint64_t va, uint64_t size) = 0;
  // The GPU's globaltimer in nanoseconds (what semaphore-release timestamps and %globaltimer read).
  virtual uint64_t gpu_time_ns() = 0;
  // The object classes the process allocated under this channel so far (compute, copy: the classes a SET_OBJECT
  // may bind to a subchannel). The list can grow after the runner is created: RM lets engine objects be allocated
  // on a channel at any time before work uses them.
  virtual std::vector<uint32_t> engine_classes() = 0;
  // A semaphore release or launch that asked for a non-stall interrupt: the driver signals the OS events the
  // process registered for it.
  virtual void nonstall_interrupt() = 0;
  // The channel faulted. The driver marks it faulted (ChannelState), writes the RM error code to the channel's
  // error notifier (NvNotification: timestamp, info32 = code, status = 0xffff) and refuses further doorbells to it.
  // The runner must stop fetching GPFIFO entries from this channel after calling it.
  virtual void fault(const ChannelFault& f) = 0;
  // A fault on another channel of this one's channel group stopped it too: RM recovers the whole group (TSG) and
  // writes every member's error notifier. Then true, with that channel's fault in `why`; the runner stops at its
  // next method without a fault report of its own. Called before every method: cheap while nothing has faulted.
  virtual bool stopped_by_group(ChannelFault& why) = 0;
  // A method asked for cache maintenance (CacheOps bits, sim/common/cache_ops.hpp), in order with the channel's
  // other work: everything before it has completed. The default (test hosts) has no caches.
  virtual void caches(uint8_t ops) { (void)ops; }
  // The GPU's mirror of its page tables (sim/common/gpu_view.hpp), where kernels run; null: none (test hosts), then
  // kernels reach memory through translate().
  virtual GpuView* view() { return nullptr; }
};

// Executes one channel. The driver calls doorbell() from the thread that stored the channel's work submit token to
// the usermode doorbell (through Os::write_doorbell32). The runner reads GPPut from USERD, executes the entries from
// its GPGet up to it and stores GPGet back to USERD as it consumes them. doorbell() must not block on GPU work.
class ChannelRunner {
 public:
  virtual ~ChannelRunner() = default;
  virtual void doorbell() = 0;
  // One line for hang reports: GPGet/GPPut, the state the channel is in (idle, waiting on a semaphore acquire at
  // ..., faulted: ...).
  virtual std::string describe() const = 0;
};

// Makes a runner for a newly allocated channel. The returned runner's lifetime is bounded by `host`'s.
using ChannelRunnerFactory = std::function<std::unique_ptr<ChannelRunner>(const ChannelDesc&, ChannelHost& host)>;

}  // namespace hcq::sim
