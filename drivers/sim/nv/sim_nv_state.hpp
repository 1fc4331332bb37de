// The simulated NVIDIA driver's state and the handlers of its escapes, shared by sim_nv*.cpp. Private to
// drivers/sim/nv: nothing outside includes it.
//
// Locks, in order: mu (files, the RM object tree, UVM state, channels), then vm_mu (every GPU's mappings and the
// process's mappings of memory objects: read by translate() from runner threads), then doorbell_mu (usermode pages
// mapped on the host, the channels their doorbells reach). Runners are created and destroyed with no lock held,
// since they call back into the driver.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <vector>

#include "nv/rm/abi/branch.hpp"
#include "nv/rm/abi/uvm.hpp"
#include "sim/common/gpu_view.hpp"
#include "sim/common/memfd_backing.hpp"
#include "sim/nv/sim_nv.hpp"

namespace hcq::sim {

// A memfd and the simulator's own shared mapping of it: the simulated GPU's memory ("VRAM", "sysmem", usermode).
using NvBacking = MemfdBacking;

// NV01_MEMORY_LOCAL_USER / NV01_MEMORY_SYSTEM / NV01_MEMORY_SYSTEM_OS_DESCRIPTOR.
struct NvMemory final : RmPayload {
  enum class Where : uint8_t { vram, sysmem, os_descriptor };
  Where where = Where::vram;
  size_t gpu = 0;
  uint64_t size = 0;       // bytes, rounded to the page size
  uint64_t page_size = 0;  // 4 KiB, 64 KiB or 2 MiB
  NvBacking backing;       // vram/sysmem; for os_descriptor only `host` is set (the process's own pages)
  // The process's mappings of this memory (its mmap of what RM_MAP_MEMORY prepared), until it unmaps them
  // (State::vm_mu). They show the same bytes as `backing.host`; translate() hands the simulated GPU these addresses
  // instead, so the GPU's accesses land where the process's own do (see State::host_view).
  struct CpuView {
    std::byte* addr = nullptr;
    uint64_t offset = 0, length = 0;  // the bytes of this memory it shows
  };
  std::vector<CpuView> cpu_views;
  ~NvMemory() override {
    if (where != Where::os_descriptor) backing.release();
  }
};

// NV01_MEMORY_VIRTUAL: a GPU VA range RM_MAP_MEMORY_DMA maps memory into. FERMI_VASPACE_A: a VA space.
struct NvVirtualRange final : RmPayload {
  size_t gpu = 0;
  uint64_t base = 0, limit = 0;  // inclusive limit
};

struct NvChannelGroup final : RmPayload {
  uint32_t engine_type = 0;
  bool scheduled = false;
};

// What RM keeps of MMU faults an SM made in a channel's graphics context (kgrctxRecordMmuFault): the first fault's
// NV_PFB_PRI_MMU_FAULT_INFO word and a ring of 4 slots holding the latest 3 (address, fault type, access type).
// Read through GT200_DEBUGGER (sim_nv_ctrl.cpp). State::mu.
struct NvGrFaultRecord {
  bool valid = false;
  uint32_t fault_info = 0;
  struct Entry {
    uint64_t address = 0;
    uint32_t fault_type = 0, access_type = 0;
  };
  Entry ring[4];
  uint32_t head = 0, tail = 0;
};

// A GPFIFO channel. Reached from the RM object (payload), from State::channels and from State::doorbell_channels;
// freed when all let go. The runner is destroyed before the host (its destructor stops its threads).
struct NvChannel final : RmPayload {
  size_t gpu = 0;
  RmHandle client = 0, handle = 0, group = 0;  // group: the channel group object, or 0 (under the device)
  ChannelDesc desc;
  std::shared_ptr<NvMemory> userd;  // the USERD memory (kept alive while the channel lives)
  uint64_t userd_offset = 0;
  std::shared_ptr<NvMemory> error_notifier;  // may be null
  std::vector<uint32_t> engine_classes;      // compute/copy objects allocated on it (State::mu)
  // Written under State::mu; doorbells read them without it.
  std::atomic<bool> scheduled{false};
  std::atomic<bool> faulted{false};
  ChannelFault fault;  // State::mu
  // Stopped by another member's fault (RM recovers the whole channel group); set after `fault` is, read by the
  // runner's thread before each step without State::mu.
  std::atomic<bool> stopped_by_group{false};
  NvGrFaultRecord gr_faults;  // State::mu: the SMs' MMU faults (compute channels)
  std::atomic<uint64_t> doorbells{0};
  std::mutex runner_mu;               // held around runner calls and while the runner is replaced
  std::unique_ptr<ChannelHost> host;  // an NvChannelHost (sim_nv_channels.cpp)
  std::unique_ptr<ChannelRunner> runner;
  ~NvChannel() override;
};

// A compute or copy object on a channel: freeing it takes its class off the channel's list.
struct NvEngineObject final : RmPayload {
  std::weak_ptr<NvChannel> channel;
  uint32_t class_id = 0;
};

// GT200_DEBUGGER: the compute object it was allocated for, on the channel whose context it reads.
struct NvDebugger final : RmPayload {
  RmHandle app_client = 0, compute_object = 0, channel_handle = 0;
  std::weak_ptr<NvChannel> channel;
};

// One GPU mapping: [va, va + size) of a GPU's VA space shows `memory` from `offset` on.
struct NvGpuMapping {
  std::shared_ptr<NvMemory> memory;
  uint64_t va = 0, size = 0, offset = 0;
  int uvm_file = -1;             // made by UVM_MAP_EXTERNAL_ALLOCATION on this UVM file, or -1
  RmHandle client = 0, dma = 0;  // made by RM_MAP_MEMORY_DMA into this NV01_MEMORY_VIRTUAL object
};

struct NvGpu {
  const SimNvGpuSpec* spec = nullptr;
  size_t index = 0;
  uint32_t gpu_id = 0;           // what CARD_INFO reports and GPU_GET_ID_INFO_V2 takes
  nv::abi::Uuid uuid{};          // what GID_INFO reports and UVM registers by
  NvBacking usermode;            // the usermode page (doorbell at NOTIFY_CHANNEL_PENDING)
  uint64_t vram_used = 0;        // State::mu
  uint32_t next_channel_id = 0;  // State::mu
  // va -> mapping (State::vm_mu). The backend maps a buffer both ways at one VA (RM's view through
  // RM_MAP_MEMORY_DMA, the GPU's through UVM), so the two are kept apart; translate() looks at UVM's first.
  std::map<uint64_t, NvGpuMapping> uvm_vm, dma_vm;
  std::unique_ptr<GpuView> view;  // uvm_vm and dma_vm as the GPU's kernels see them (State::sync_view)
  std::atomic<uint64_t> nonstall{0};
};

// A UVM file's VA space (after UVM_INITIALIZE).
struct NvUvmSpace {
  struct Range {
    uint64_t base = 0, length = 0;
    bool external = true;  // UVM_CREATE_EXTERNAL_RANGE; false: a channel's range (REGISTER_CHANNEL)
    size_t gpu = 0;        // channel ranges: their GPU
    RmHandle client = 0, channel = 0;
  };
  std::set<size_t> gpus;                                     // registered GPUs
  std::map<size_t, std::pair<RmHandle, RmHandle>> vaspaces;  // gpu -> (client, vaspace) registered
  std::map<uint64_t, Range> ranges;                          // base -> range
  uint64_t flags = 0;
};

struct NvFile {
  enum class Kind : uint8_t { ctl, gpu, uvm };
  Kind kind = Kind::ctl;
  size_t gpu = 0;  // Kind::gpu
  int ctl = -1;    // Kind::gpu: the control file REGISTER_FD tied it to
  // What RM_MAP_MEMORY prepared on this file for the next mmap (rm_create_mmap_context).
  struct MmapContext {
    std::shared_ptr<NvMemory> memory;  // or null for the usermode page
    size_t usermode_gpu = 0;
    uint64_t offset = 0, length = 0;
  };
  std::optional<MmapContext> mmap_context;
  // Kind::uvm
  enum class Uvm : uint8_t { uninitialized, va_space, mm } uvm = Uvm::uninitialized;
  std::unique_ptr<NvUvmSpace> uvm_space;
};

struct SimNv::State {
  std::vector<std::unique_ptr<NvGpu>> gpus;
  ChannelRunnerFactory factory;
  std::string version;
  const nv::abi::BranchAbi* branch = nullptr;  // the layouts of the branch `version` belongs to (null: unknown)
  std::atomic<bool> nvproxy_refusals{false};   // answer as gVisor's nvproxy does (SimNv::refuse_as_nvproxy)
  SimOs* os = nullptr;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  mutable std::mutex mu;
  RmObjectTree tree;
  std::map<int, NvFile> files;
  int next_file = 0;
  std::map<std::pair<size_t, uint32_t>, std::shared_ptr<NvChannel>> channels;  // (gpu, channel id)

  mutable std::shared_mutex vm_mu;
  mutable std::shared_mutex doorbell_mu;
  std::map<uintptr_t, std::pair<size_t, uint64_t>> usermode_maps;  // host address -> (gpu, length)
  // (gpu, work submit token) -> channel, beside `channels` for doorbells, which thus never take mu: the runners take
  // it for every USERD read (translate), and a doorbell waiting for it cost the host's submission about 300 cycles.
  std::map<std::pair<size_t, uint32_t>, std::shared_ptr<NvChannel>> doorbell_channels;
  // The process's mappings of memory objects: address -> the memory whose cpu_views hold it (vm_mu).
  std::map<uintptr_t, std::weak_ptr<NvMemory>> cpu_maps;

  // ---- sim_nv_rm.cpp: RM escapes (the parameter block is the kernel's copy; `file` the caller's file id)
  int rm_alloc(int file, void* arg, size_t size);
  int rm_free(void* arg, std::vector<RmObject>& freed);
  int rm_alloc_memory(void* arg);
  int rm_map_memory(void* arg);
  int rm_unmap_memory(void* arg);
  int rm_map_memory_dma(void* arg, size_t size);
  int rm_unmap_memory_dma(void* arg);
  RmStatus alloc_channel(RmHandle client, const RmObject& parent, RmObject& obj, void* params);
  // ---- sim_nv_ctrl.cpp
  int rm_control(void* arg);
  // ---- sim_nv_uvm.cpp
  int uvm_ioctl(int file, unsigned long request, void* arg);
  // Drops everything a UVM file made (mappings, ranges); with mu held.
  void uvm_file_closed(int id);
  // ---- sim_nv_channels.cpp
  std::byte* translate(size_t gpu, uint64_t va, uint64_t size);
  // Makes g's mirror show its mappings again after they changed (UVM's first where both map a VA, as translate()
  // looks); with vm_mu held.
  void sync_view(NvGpu& g);
  // Where bytes [offset, offset + size) of `m` are for the simulated GPU: the process's own mapping of them (the
  // one at `want`, when it maps them there), else the simulator's. With vm_mu held.
  std::byte* host_view(const NvMemory& m, uint64_t offset, uint64_t size, uintptr_t want) const;
  // The process mapped [addr, addr + length) to `m` from `offset` on / unmapped a range (forgets views in it).
  void add_cpu_view(const std::shared_ptr<NvMemory>& m, std::byte* addr, uint64_t offset, uint64_t length);
  void drop_cpu_views(uintptr_t lo, uint64_t length);
  void drop_cpu_views_locked(uintptr_t lo, uint64_t length);
  uint64_t time_ns() const;
  void fault_channel(size_t gpu, uint32_t channel_id, const ChannelFault& f);
  void fault_channel_locked(NvChannel& ch, const ChannelFault& f);
  bool doorbell(volatile void* where, uint64_t value, unsigned bytes);
  // Starts the runner of a channel just created (no lock held).
  void start_runner(const std::shared_ptr<NvChannel>& ch);
  // Drops freed objects' state that lives outside the tree (channels, mappings); call with mu held. The returned
  // channels are released by the caller with no lock held.
  void forget_freed_locked(const std::vector<RmObject>& freed, std::vector<std::shared_ptr<NvChannel>>& dying);

  // Helpers
  NvFile* file(int id);
  // The file of this driver behind a process fd, or nullopt when it is not one of ours. Call with no lock held.
  std::optional<int> own_file(int fd) const;
  SimDriver* self = nullptr;
  // Channels allocated by the escape in progress, whose runners start once the lock is dropped (mu).
  std::vector<std::shared_ptr<NvChannel>> to_start;
};

}  // namespace hcq::sim
