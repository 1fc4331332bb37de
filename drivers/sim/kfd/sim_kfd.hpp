// The simulated amdgpu KFD kernel driver: /dev/kfd with the kernel's ioctl validation and errnos, the render nodes
// of its GPUs, their sysfs topology, memory (host memory of the simulator, mapped on the host at the GPU VA),
// queues (handed to a QueueRunner from the engine) and events.
//
// One SimKfd is one simulated machine with one or more GPUs. Every open of /dev/kfd shares one KFD process, as in
// the kernel (the KFD process is per address space). Thread-safe.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sim/kfd/queue_runner.hpp"
#include "sim/sim_os.hpp"

namespace hcq::sim {

// What sysfs reports for one simulated GPU (the values real parts report).
struct SimGpuSpec {
  std::string_view gfx;         // "gfx1100"
  uint32_t gfx_target_version;  // 110000
  uint32_t device_id, simd_count, simd_per_cu, cu_per_simd_array, simd_arrays_per_engine, array_count;
  uint32_t max_waves_per_simd, wave_front_size, lds_size_in_kb, num_xcc;
  uint32_t num_sdma_engines, num_sdma_xgmi_engines, num_sdma_queues_per_engine, num_cp_queues;
  uint32_t max_engine_clk_fcompute, fw_version, sdma_fw_version;
  uint64_t vram_bytes;
  // The spec of a simulated target; throws hcq::InvalidArgument naming the simulated targets otherwise.
  static const SimGpuSpec& of(std::string_view gfx);
  static std::string known_names();
  static std::vector<std::string> names();  // the simulated gfx targets, in table order
};

class SimKfd final : public SimDriver {
 public:
  static constexpr uint64_t kPage = 4096;
  static constexpr uint64_t kDoorbellSliceBytes = 8192;  // 1024 queues x 8 bytes, per process and GPU
  static constexpr uint64_t kEventPageBytes = 4096 * 8;  // KFD_SIGNAL_EVENT_LIMIT slots of 8 bytes
  static constexpr uint64_t kUnsignaledSlot = ~uint64_t{0};
  // The uAPI simulated: 1.13 (the debugger API, whose RUNTIME_ENABLE the runtime calls at start). Commands past
  // this build's <linux/kfd_ioctl.h> (1.11 on Debian) come from drivers/amd/kfd/compat.
  static constexpr uint32_t kKfdMajor = 1, kKfdMinor = 13;

  // `targets`: one GPU per entry, topology nodes 1.. (node 0 is the CPU), render minors 128... `runner_factory`
  // makes the engine for each created queue; without one, queues only record their doorbells.
  explicit SimKfd(const std::vector<std::string>& targets, QueueRunnerFactory runner_factory = {});
  ~SimKfd() override;

  // ---- SimDriver
  void attach(SimOs& os) override { os_ = &os; }
  bool handles_path(std::string_view path) const override;
  int open(const std::string& path, int flags) override;
  void close(int file) override;
  int ioctl(int file, unsigned long request, void* arg) override;
  void* mmap(int file, void* addr, size_t length, int prot, int flags, off_t offset, int* err) override;
  void on_munmap(void* addr, size_t length) override;
  std::optional<std::string> read_file(const std::string& path) override;
  std::vector<std::string> list_dir(const std::string& path) override;
  bool write_doorbell(volatile void* where, uint64_t value, unsigned bytes) override;

  // ---- for the engine and tests
  size_t gpu_count() const { return gpus_.size(); }
  uint32_t gpu_id(size_t index) const;
  // Host pointer for [va, va+size) if that range lies in one buffer mapped on GPU `gpu_id`; nullptr otherwise.
  std::byte* translate(uint32_t gpu_id, uint64_t va, uint64_t size);
  // What the driver knows of a live queue.
  struct QueueState {
    SimQueueDesc desc;
    uint64_t doorbell_writes = 0;
    uint64_t last_doorbell = 0;
    bool faulted = false;
    std::string fault_reason;
  };
  std::optional<QueueState> queue_state(uint32_t queue_id) const;
  std::vector<uint32_t> queue_ids() const;
  // Simulates a GPU page fault on a queue (what an engine reports through QueueHost::fault; a memory fault's
  // failure as QueueHost::memory_fault reports it).
  void inject_fault(uint32_t queue_id, uint64_t address, bool memory_fault, const std::string& reason,
                    MemoryFailure failure = MemoryFailure::not_present);
  // GPU `gpu_id`'s mirror of its page tables (gpu_view.hpp), or null for an unknown id.
  GpuView* view(uint32_t gpu_id) const;
  // Simulates an end-of-pipe interrupt (what an engine reports through QueueHost::interrupt), as the kernel's
  // kfd_signal_event_interrupt handles it: the signal event the context id names, if its event page slot was
  // written; otherwise every signal event whose slot was written (a bad or stale id costs a scan, not an error).
  void raise_interrupt(uint32_t gpu_id, uint32_t context_id);
  // What happened to a live event, for tests: WAIT_EVENTS calls that named it, interrupts that signaled it, and
  // waiters that were blocked on it when an interrupt signaled it (a host that slept in the ioctl and was woken by
  // the GPU). An interrupt that lands between two of a host's sleep slices signals the event with no one blocked on
  // it, so `interrupts` is the exact count and `woken_by_interrupt` at most that. nullopt: no such event.
  struct EventCounters {
    uint64_t waits = 0;
    uint64_t interrupts = 0;
    uint64_t woken_by_interrupt = 0;
  };
  std::optional<EventCounters> event_counters(uint32_t event_id) const;
  uint64_t gpu_clock() const;

 private:
  struct Gpu;
  struct Bo;
  struct Queue;
  struct Event;
  struct Waiter;
  struct File;
  class Host;

  // ioctl handlers: 0 or -errno. `a` is the kernel's copy of the argument.
  int get_version(void* a);
  int acquire_vm(void* a);
  int get_apertures_new(void* a);
  int alloc_memory(void* a);
  int free_memory(void* a);
  int map_memory(void* a, bool map);
  int create_queue(void* a);
  int destroy_queue(void* a);
  int create_event(void* a);
  int destroy_event(void* a);
  int set_event(void* a, bool set);
  int wait_events(void* a);
  int get_clock_counters(void* a);
  int runtime_enable(void* a);

  Gpu* gpu_by_id(uint32_t gpu_id);
  // Forgets the process views (Bo::process_view) that overlap [addr, addr + length); mu_ and vm_mu_ held.
  void forget_process_views(void* addr, size_t length);
  Gpu* gpu_by_minor(uint32_t minor);
  std::shared_ptr<Bo> bo_by_handle(uint64_t handle);
  bool range_mapped(const Gpu& g, uint64_t va, uint64_t size) const;
  // set_event(): wakes every waiter blocked on `e`; an auto-reset event with waiters stays reset.
  void signal_event_locked(Event& e, bool by_interrupt = false);
  // The event goes (DESTROY_EVENT, process teardown): its waiters end their wait with EIO.
  void forget_waiters_locked(Event& e);
  void fire_exception_events(uint32_t type, uint32_t gpu_id, uint64_t va,
                             MemoryFailure failure = MemoryFailure::not_present);

  void teardown_process_locked(std::vector<std::shared_ptr<Queue>>& dying);

  std::vector<std::unique_ptr<Gpu>> gpus_;
  QueueRunnerFactory factory_;
  SimOs* os_ = nullptr;

  mutable std::mutex mu_;  // the process state below
  std::condition_variable events_cv_;
  std::map<int, File> files_;
  int next_file_ = 0;
  std::map<uint64_t, std::shared_ptr<Bo>> bos_;  // handle -> buffer
  std::map<uint32_t, std::shared_ptr<Queue>> queues_;
  uint32_t next_queue_id_ = 0;
  std::map<uint32_t, Event> events_;
  bool runtime_enabled_ = false;  // RUNTIME_ENABLE, per process
  uint32_t next_nonsignal_event_ = 4096;
  uint64_t* event_page_ = nullptr;     // kEventPageBytes, host pointer of the event page buffer
  std::shared_ptr<Bo> event_page_bo_;  // the buffer given by the process, or one the driver made (kept while used)
  uint64_t next_mmap_offset_ = uint64_t{1} << 32;  // fake DRM mmap offsets of buffers
  // Doorbell pages mapped on the host: address -> gpu index, and each GPU's queue per doorbell slot (Gpu::by_slot).
  // Read on every doorbell write. Taken after mu_ (create and destroy a queue), never before it.
  mutable std::shared_mutex doorbell_mu_;
  std::map<uintptr_t, size_t> doorbell_maps_;
  // Buffers mapped on each GPU, for translate(): va -> buffer (guarded by vm_mu_).
  mutable std::shared_mutex vm_mu_;
};

}  // namespace hcq::sim
