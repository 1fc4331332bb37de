// What the simulated KFD's files share: the uAPI limits and constants it checks against, and the objects behind its
// handles (buffer objects, GPUs, open files, events and their waiters, queues). Private to drivers/sim/kfd.
#pragma once

#include <linux/kfd_ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/common/gpu_view.hpp"
#include "sim/common/memfd_backing.hpp"
#include "sim/kfd/sim_kfd.hpp"

namespace hcq::sim {
namespace sim_kfd_detail {

inline constexpr uint64_t kUserVaTop = uint64_t{1} << 47;  // TASK_SIZE: access_ok() fails at or above it
inline constexpr uint64_t kGpuVmBase = uint64_t{1} << 16;  // AMDGPU_VA_RESERVED_BOTTOM
inline constexpr uint32_t kMaxQueuePercentage = 100, kMaxQueuePriority = 15, kMinRingSize = 1024;
inline constexpr uint32_t kMaxQueues = 1024;  // doorbell slots in a process's slice
inline constexpr int kENOTSUPP = 524;         // the kernel's internal ENOTSUPP, which CREATE_QUEUE lets reach userspace
// mmap offsets of /dev/kfd (kfd_priv.h): the type in bits 62-63, the gpu_id in bits 46-61.
inline constexpr uint64_t kMmapTypeShift = 62, kMmapTypeDoorbell = 3, kMmapTypeEvents = 2, kMmapTypeMmio = 0;
inline constexpr uint64_t kMmapGpuIdShift = 46;
inline constexpr uint32_t kEventTimeoutInfinite = 0xffffffffu;
inline constexpr unsigned kCommandEnd = 0x27;  // KFD 1.13: ... RUNTIME_ENABLE 0x25, DBG_TRAP 0x26

inline constexpr uint32_t kAllocTypeFlags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT |
                                            KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
                                            KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;
inline constexpr uint32_t kAllocKnownFlags =
    kAllocTypeFlags | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE |
    KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM |
    KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED | (1u << 24) /* EXT_COHERENT */;

inline bool access_ok(uint64_t addr, uint64_t size) { return addr <= kUserVaTop && size <= kUserVaTop - addr; }

}  // namespace sim_kfd_detail

// ---------------------------------------------------------------------------------------------------------------
struct SimKfd::Bo {
  enum class Kind { vram, gtt, userptr, doorbell, mmio };
  uint64_t handle = 0;
  uint32_t gpu_id = 0;
  size_t gpu_index = 0;
  Kind kind = Kind::gtt;
  uint64_t va = 0, size = 0;  // size page aligned
  uint32_t flags = 0;
  uint64_t mmap_offset = 0;  // render-node offset (userptr: the user address)
  int fd = -1;               // backing memfd, or the GPU's doorbell/MMIO memfd (not owned) for those kinds
  bool owns_fd = false;
  std::byte* host = nullptr;  // the simulator's pointer to byte 0
  // The process's own mapping of byte 0 (its render-node mmap) while it lasts, guarded by vm_mu_. translate()
  // prefers it: the simulated GPU then reads and writes the very addresses the host uses, so the host's release
  // stores (write pointers, signals) and the engines' acquire loads pair up for ThreadSanitizer as they do in
  // hardware's coherent view; the simulator's own mapping serves only bytes the process has not mapped.
  std::byte* process_view = nullptr;
  uint64_t process_view_bytes = 0;
  std::set<uint32_t> mapped_on;  // gpu ids
  ~Bo() {
    if (owns_fd) {
      ::munmap(host, size);
      ::close(fd);
    }
  }
};

struct SimKfd::Gpu {
  const SimGpuSpec* spec = nullptr;
  const amd::Target* target = nullptr;
  size_t index = 0;
  uint32_t gpu_id = 0, node = 0, render_minor = 0;
  MemfdBacking doorbells;  // the process's doorbell slice on this GPU
  MemfdBacking mmio;       // the MMIO remap page (HDP flush registers)
  uint64_t vram_used = 0;
  bool acquired = false;
  int drm_file = -1;
  std::map<uint64_t, Bo*> vm;     // GPU VA -> buffer mapped on this GPU (vm_mu_)
  std::unique_ptr<GpuView> view;  // vm as the GPU's kernels see it (gpu_view.hpp)
  uint32_t next_idr = 0;
  // The queue behind each doorbell slot of the slice (doorbell_mu_): what a doorbell write looks up, without the
  // process lock and a scan of every queue.
  std::array<std::shared_ptr<Queue>, sim_kfd_detail::kMaxQueues> by_slot{};
};

struct SimKfd::File {
  enum class Kind { kfd, render } kind;
  size_t gpu_index = 0;
};

// One WAIT_EVENTS caller's hold on one event (the kernel's kfd_event_waiter); lives on the waiting thread's stack.
struct SimKfd::Waiter {
  uint32_t event_id = 0;
  bool activated = false;  // the event fired for this waiter
  bool queued = false;     // in the event's waiter list
  bool gone = false;       // the event was destroyed while we waited
};

struct SimKfd::Event {
  uint32_t id = 0, type = 0;
  bool auto_reset = false, signaled = false;
  kfd_event_data data{};         // exception data handed to waiters
  std::vector<Waiter*> waiters;  // blocked in WAIT_EVENTS on it (mu_)
  EventCounters counters;
};

class SimKfd::Host final : public QueueHost {
 public:
  Host(SimKfd& kfd, uint32_t gpu_id, uint32_t queue_id) : kfd_(kfd), gpu_id_(gpu_id), queue_id_(queue_id) {}
  std::byte* translate(uint64_t va, uint64_t size) override { return kfd_.translate(gpu_id_, va, size); }
  uint64_t gpu_clock() override { return kfd_.gpu_clock(); }
  void interrupt(uint32_t context_id) override { kfd_.raise_interrupt(gpu_id_, context_id); }
  void fault(uint64_t address, bool is_memory_fault, const std::string& reason) override {
    kfd_.inject_fault(queue_id_, address, is_memory_fault, reason);
  }
  void memory_fault(uint64_t address, MemoryFailure failure, const std::string& reason) override {
    kfd_.inject_fault(queue_id_, address, true, reason, failure);
  }
  GpuView* view() override { return kfd_.view(gpu_id_); }
  void caches(uint8_t ops) override {
    if (ops & kCacheWriteback) kfd_.view(gpu_id_)->writeback();
  }

 private:
  SimKfd& kfd_;
  uint32_t gpu_id_, queue_id_;
};

struct SimKfd::Queue {
  SimQueueDesc desc;
  size_t gpu_index = 0;
  uint32_t slot = 0;
  std::atomic<uint64_t> doorbell_writes{0}, last_doorbell{0};
  bool faulted = false;
  std::string fault_reason;
  std::unique_ptr<Host> host;
  std::unique_ptr<QueueRunner> runner;  // destroyed before host
  ~Queue() { runner.reset(); }
};

}  // namespace hcq::sim
