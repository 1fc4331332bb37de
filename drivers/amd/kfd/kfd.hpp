// The AMD backend's kernel objects over KFD, through the OS seam only (the same code runs on a real /dev/kfd and on
// the simulated one): the topology, an opened GPU (kfd fd, render node, VM, event page), memory buffers and user
// queues, each an RAII object that gives back what it took, in reverse order.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hcq/backend/os.hpp"

namespace hcq::amd {

// One GPU node of /sys/devices/virtual/kfd/kfd/topology/nodes/<node>.
struct KfdNode {
  uint32_t node = 0, gpu_id = 0, render_minor = 0;
  uint32_t gfx_target_version = 0;  // 110000
  std::string gfx;                  // "gfx1100", derived from gfx_target_version
  uint32_t simd_count = 0, simd_per_cu = 0, max_waves_per_simd = 0, wave_front_size = 0, lds_size_in_kb = 0;
  uint32_t array_count = 0, cu_per_simd_array = 0, num_xcc = 1;
  uint32_t num_cp_queues = 0, num_sdma_engines = 0, num_sdma_xgmi_engines = 0, num_sdma_queues_per_engine = 0;
  uint32_t device_id = 0;
  uint64_t vram_bytes = 0;  // sum of the node's mem_banks
  uint64_t unique_id = 0;   // the GPU's serial as the kernel reports it; 0: none (older kernels, some parts)
  uint32_t cu_count() const { return simd_per_cu ? simd_count / simd_per_cu : 0; }
  // DeviceInfo::uuid: unique_id's 16 lowercase hex digits, as ROCr names the agent ("GPU-" then these); none when
  // unique_id is 0.
  std::optional<std::array<uint8_t, 16>> uuid() const;
};

// "gfx" + major + minor and stepping in hex: 90402 -> gfx942, 110000 -> gfx1100, 120001 -> gfx1201.
std::string gfx_name(uint32_t gfx_target_version);
// The GPU nodes (gpu_id != 0), in node order. Empty when there is no KFD topology.
std::vector<KfdNode> kfd_topology(Os& os);

class KfdGpu;

// GPU memory: allocated at `va`, mapped on the owning GPU (and any peers it was mapped to), mapped on the host at
// the same VA when host_visible. The destructor unmaps from every GPU, frees, and gives the VA back.
class KfdBuffer {
 public:
  enum class Kind { vram, gtt, userptr };
  KfdBuffer(const KfdBuffer&) = delete;
  KfdBuffer& operator=(const KfdBuffer&) = delete;
  ~KfdBuffer();
  uint64_t va() const { return va_; }
  uint64_t size() const { return size_; }
  uint64_t handle() const { return handle_; }
  bool host_visible() const { return host_mapped_; }
  void* host() const { return host_mapped_ ? reinterpret_cast<void*>(va_) : nullptr; }
  // Maps the buffer on another GPU of the same KFD process (peer access at the same VA).
  void map_on(uint32_t gpu_id);

 private:
  friend class KfdGpu;
  explicit KfdBuffer(KfdGpu& gpu) : gpu_(&gpu) {}
  KfdGpu* gpu_;  // whose /dev/kfd frees it: the event page moves to another GPU of the process (kfd.cpp)
  Kind kind_ = Kind::gtt;
  uint64_t va_ = 0, size_ = 0, handle_ = 0;
  bool va_from_space_ = false, host_mapped_ = false, allocated_ = false;
  std::vector<uint32_t> mapped_on_;
};

struct KfdAllocOptions {
  bool uncached = false;      // KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED (signals, rings)
  bool host_visible = false;  // map on the host at the VA
  bool executable = false;
};

// A user-mode queue: ring, read/write pointers, EOP and context-save areas, and the doorbell mapping.
class KfdQueue {
 public:
  enum class Type { compute_pm4, sdma, compute_aql };
  KfdQueue(const KfdQueue&) = delete;
  KfdQueue& operator=(const KfdQueue&) = delete;
  ~KfdQueue();
  Type type() const { return type_; }
  uint32_t queue_id() const { return queue_id_; }
  void* ring() const { return ring_->host(); }
  uint64_t ring_va() const { return ring_->va(); }
  uint32_t ring_bytes() const { return ring_bytes_; }
  // Written by the GPU / by us. Units: dwords for PM4, bytes for SDMA, 64-byte packets for AQL.
  volatile uint64_t* read_ptr() const;
  volatile uint64_t* write_ptr() const;
  // AQL: the queue's amd_queue_t (aql_facts.hpp kAmdQueue), which holds both pointers and the scratch setup the CP
  // reads at each dispatch; null for PM4 and SDMA queues.
  std::byte* amd_queue() const;
  // Stores the write pointer and rings the doorbell with it (release ordering before the doorbell).
  void submit(uint64_t new_wptr);

 private:
  friend class KfdGpu;
  KfdQueue(KfdGpu& gpu, Type type) : gpu_(gpu), type_(type) {}
  // Byte offsets of the read and write pointers in the pointer page (AQL: where amd_queue_t keeps them).
  uint32_t read_offset() const;
  uint32_t write_offset() const;
  KfdGpu& gpu_;
  Type type_;
  uint32_t queue_id_ = 0, ring_bytes_ = 0;
  bool created_ = false;
  std::unique_ptr<KfdBuffer> ring_, ptrs_, eop_, ctx_save_;
  Mapping doorbell_page_;
  volatile uint64_t* doorbell_ = nullptr;
};

// What KFD reported through a memory-exception or HW-exception event (kfd_hsa_memory_exception_data,
// kfd_hsa_hw_exception_data). KFD delivers these to every such event of the process: gpu_id says which GPU.
struct KfdException {
  enum class Kind { memory, hardware } kind = Kind::memory;
  uint32_t gpu_id = 0;
  uint64_t va = 0;                                                                     // memory: the faulting address
  bool not_present = false, read_only = false, no_execute = false, imprecise = false;  // memory: why
  uint32_t reset_type = 0, reset_cause = 0;                                            // hardware
  bool memory_lost = false;
  // "GPU memory fault at 0x7f00 (page not present)", "GPU hardware exception (hang, engine reset)".
  std::string describe() const;
};

// One opened GPU. Opens /dev/kfd and the render node, checks the KFD version, acquires the VM, reads the apertures
// and sets up the event page with a signal event and the memory/HW exception events.
class KfdGpu {
 public:
  KfdGpu(Os& os, const KfdNode& node);
  ~KfdGpu();
  KfdGpu(const KfdGpu&) = delete;
  KfdGpu& operator=(const KfdGpu&) = delete;

  Os& os() const { return os_; }
  const KfdNode& node() const { return node_; }
  uint32_t gpu_id() const { return node_.gpu_id; }
  int kfd_fd() const { return kfd_.get(); }
  uint32_t version_major() const { return major_; }
  uint32_t version_minor() const { return minor_; }
  // Whether bring-up told KFD the runtime is enabled (KFD 1.13 and later).
  bool runtime_enabled() const { return runtime_enabled_; }
  std::string describe() const;  // "gfx1100 (gpu_id 0x4a2c, node 1, KFD 1.11)"

  // Memory at a fresh VA of hcq::process().va.
  std::unique_ptr<KfdBuffer> alloc(uint64_t size, KfdBuffer::Kind kind, const KfdAllocOptions& opts);
  // Host memory the caller owns, mapped on the GPU at its own address (USERPTR). Page-aligned.
  std::unique_ptr<KfdBuffer> map_user(void* addr, uint64_t size);
  // PM4/AQL compute or SDMA queue with a ring of `ring_bytes` (a power of two).
  std::unique_ptr<KfdQueue> create_queue(KfdQueue::Type type, uint32_t ring_bytes);

  // The signal event: its id is what RELEASE_MEM's interrupt names; its mailbox, the event page slot the GPU
  // writes the id into before the interrupt (KFD only signals an event whose slot was written). KFD keeps one
  // event page per process: the first GPU of the process gives it, the others take slots in it and map it on their
  // GPU. 0 when the page is one we do not know (another runtime of the process gave it): no interrupts then.
  uint32_t signal_event_id() const { return signal_event_; }
  uint64_t event_slot_va() const { return event_slot_va_; }
  // WAIT_EVENTS on the signal event alone, for up to `timeout_ms` (0: a poll). True when it fired (the event is
  // auto-reset: the wait consumed it), false on timeout.
  bool wait_signal_event(uint32_t timeout_ms);
  // SET_EVENT on the signal event: wakes every thread blocked in wait_signal_event (e.g. when the GPU faulted).
  void set_signal_event();
  // Waits up to `timeout_ms` (kWaitForever: no limit) for the memory or HW exception event, or for
  // wake_exception_waiter(). Returns what KFD reported, or nullopt on timeout or wake. The events reset when a
  // wait returns them: each exception is delivered once per waiter of this GPU.
  static constexpr uint32_t kWaitForever = 0xffffffffu;
  std::optional<KfdException> wait_exception(uint32_t timeout_ms);
  // Ends a wait_exception() in progress on another thread (SET_EVENT on a signal event of our own).
  void wake_exception_waiter();
  // wait_exception(0), as a message naming this GPU; nullopt when no exception is pending.
  std::optional<std::string> poll_exception();

  // ioctl that throws OsError naming the command and this GPU.
  void kfd_ioctl(unsigned long request, void* arg, const char* what);

 private:
  friend class KfdBuffer;
  friend class KfdQueue;
  Os& os_;
  KfdNode node_;
  UniqueFd kfd_, render_;
  uint32_t major_ = 0, minor_ = 0;
  // Sets up the event page (or a slot in the process's) and the events; registers this GPU as a user of the page.
  void create_events();
  std::unique_ptr<KfdBuffer> event_page_;  // the process's event page, while this GPU holds it
  uint64_t event_slot_va_ = 0;
  uint32_t signal_event_ = 0, memory_event_ = 0, hw_event_ = 0, wake_event_ = 0;
  std::vector<uint32_t> events_;  // created, destroyed in reverse
  std::atomic<bool> wake_requested_{false};
  bool runtime_enabled_ = false;
  std::mutex mu_;
};

}  // namespace hcq::amd
