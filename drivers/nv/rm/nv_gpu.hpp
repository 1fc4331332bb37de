// The NVIDIA backend's kernel objects over RM and UVM, through the OS seam only (the same code runs on a real
// /dev/nvidiactl and on the simulated one): the per-process driver context (RM client + UVM), an opened GPU (device,
// subdevice, usermode doorbell page, VA space, UVM registration) and its memory, each an RAII object that gives
// back what it took, in reverse order. Channels are in nv_channel.hpp.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hcq/backend/os.hpp"
#include "nv/facts/arch.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/ioctl.hpp"
#include "nv/rm/abi/uvm.hpp"
#include "nv/rm/rm_client.hpp"
#include "nv/rm/uvm.hpp"

namespace hcq::nv {

// What a process has open on one NVIDIA driver: the RM client and the UVM context. Every GPU opened on the same Os
// shares it, because UVM keeps one VA space per context and all our GPUs map into the one process VA.
class NvDriver {
 public:
  // The context of `os`, opened on first use and kept while any GPU uses it. Throws UnsupportedDriver when the
  // driver is missing or of an unsupported version.
  static std::shared_ptr<NvDriver> get(std::shared_ptr<Os> os);
  explicit NvDriver(std::shared_ptr<Os> os);
  Os& os() const { return *os_; }
  RmClient& rm() { return rm_; }
  Uvm& uvm() { return uvm_; }

 private:
  std::shared_ptr<Os> os_;
  RmClient rm_;
  Uvm uvm_;
};

// What bring-up learned about a GPU.
struct NvGpuFacts {
  abi::CardInfo card{};
  uint32_t device_instance = 0;
  abi::Uuid uuid{};
  std::string name;         // "NVIDIA H200"
  uint32_t sm_version = 0;  // GR info: 0x0900
  uint32_t sm = 0;          // 90
  uint32_t sm_count = 0;    // enabled TPCs x SMs per TPC
  uint32_t sms_per_tpc = 0;
  uint32_t max_tpcs = 0;  // GPCs x TPCs per GPC as the chip was designed (LITTER_*), floorswept ones too
  uint32_t max_warps_per_sm = 0;
  uint64_t vram_bytes = 0;
  const NvArchInfo* arch = nullptr;
  uint32_t usermode_class = 0;                // the one allocated: the first of usermode_candidates not refused
  std::vector<uint32_t> usermode_candidates;  // the usermode classes we know that the GPU offers, newest first
  // What the driver refused at bring-up that a fallback replaced ("NV01_MEMORY_VIRTUAL", "usermode class 0xc561"):
  // RM itself offers all of these, so a refusal means a proxy between us and RM (gVisor's nvproxy refuses exactly
  // these under its default compute,utility capabilities). Empty on a plain driver.
  std::vector<std::string> refused;
  std::vector<uint32_t> classes;  // what the device reports
  std::string arch_name() const { return cat("sm_", sm); }
};

class NvGpu;

// Memory of a GPU at a VA of hcq::process().va, mapped on the GPU at that same VA through UVM (an external range),
// and on the host at that VA when host_mapped(). Host memory (ours or another device's) is described to RM by
// address and mapped the same way. The destructor undoes each step that was done, in reverse.
class NvMemory {
 public:
  enum class Kind { vram, host, rm_sysmem, external_host };
  NvMemory(const NvMemory&) = delete;
  NvMemory& operator=(const NvMemory&) = delete;
  ~NvMemory();
  Kind kind() const { return kind_; }
  uint64_t va() const { return va_; }
  uint64_t size() const { return size_; }
  abi::Handle handle() const { return handle_; }
  bool host_mapped() const { return host_mapped_; }
  void* host() const { return host_mapped_ ? reinterpret_cast<void*>(va_) : nullptr; }

 private:
  friend class NvGpu;
  explicit NvMemory(NvGpu& gpu) : gpu_(gpu) {}
  NvGpu& gpu_;
  Kind kind_ = Kind::vram;
  uint64_t va_ = 0, size_ = 0;
  abi::Handle handle_ = 0;
  uint64_t cpu_cookie_ = 0;
  bool va_from_space_ = false, anon_mapped_ = false, host_mapped_ = false, cpu_mapped_by_rm_ = false;
  bool gpu_mapped_ = false, dma_mapped_ = false;
  std::vector<abi::Uuid> peers_;  // other GPUs of the same driver context this memory is also mapped on
};

struct NvAllocOptions {
  enum class Where {
    vram,       // NV01_MEMORY_LOCAL_USER
    host,       // our own anonymous pages at the VA, described to RM (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR)
    rm_sysmem,  // system memory RM allocates (NV01_MEMORY_SYSTEM, uncached): what channel error notifiers take
  };
  Where where = Where::vram;
  // VRAM and RM system memory: also map it on the host at the VA (RM_MAP_MEMORY, then mmap of the device file).
  // Host memory always is.
  bool cpu_access = false;
  bool contiguous = false;  // VRAM: physically contiguous (channel rings)
};

// One opened GPU. Opens /dev/nvidia<minor>, allocates device, subdevice, the usermode page (mapped: the doorbell),
// a virtual-memory object and a VA space, and registers the GPU and the VA space with UVM. Behind a proxy that
// refuses the virtual-memory object (gVisor's, without the graphics capability), memory is mapped by UVM alone.
class NvGpu {
 public:
  NvGpu(std::shared_ptr<NvDriver> driver, const abi::CardInfo& card);
  ~NvGpu();
  NvGpu(const NvGpu&) = delete;
  NvGpu& operator=(const NvGpu&) = delete;

  const NvGpuFacts& facts() const { return facts_; }
  NvDriver& driver() const { return *driver_; }
  RmClient& rm() const { return driver_->rm(); }
  Uvm& uvm() const { return driver_->uvm(); }
  Os& os() const { return driver_->os(); }
  abi::Handle device() const { return device_.handle(); }
  abi::Handle subdevice() const { return subdevice_.handle(); }
  abi::Handle vaspace() const { return vaspace_.handle(); }
  // The usermode page: a store of a channel's work-submit token at NOTIFY_CHANNEL_PENDING rings that channel.
  volatile uint32_t* doorbell() const;
  // "sm_90 NVIDIA H200 (/dev/nvidia0, driver 580.126.20)"
  std::string describe() const;

  std::unique_ptr<NvMemory> alloc(uint64_t size, const NvAllocOptions& opts);
  // Host memory at `addr` that someone else owns (a signal page, a CPU device's buffer), mapped at the same VA.
  std::unique_ptr<NvMemory> map_host(void* addr, uint64_t size);

  // Peer access: maps `m` (memory of this GPU) on `peer`, another GPU of the same driver context, at the same VA
  // (a UVM external mapping of this GPU's RM memory, as UVM does for peer-capable GPUs). Undone when `m` is freed.
  void map_on_peer(NvMemory& m, const NvGpu& peer);

  // A /dev/nvidia<minor> fd registered with the control fd: what RM_MAP_MEMORY prepares for mmap.
  UniqueFd open_device_fd();

 private:
  friend class NvMemory;
  void query_facts();
  RmObject alloc_usermode();
  void map_on_gpu(NvMemory& m);
  std::shared_ptr<NvDriver> driver_;
  NvGpuFacts facts_;
  UniqueFd dev_fd_;
  RmObject device_, subdevice_, usermode_, virtmem_, vaspace_;
  Mapping usermode_page_;
  uint64_t usermode_cookie_ = 0;
  bool usermode_rm_mapped_ = false;
  bool uvm_gpu_ = false, uvm_vaspace_ = false;
};

// The GPUs a driver reports, in minor-number order.
std::vector<abi::CardInfo> nv_cards(NvDriver& driver);

}  // namespace hcq::nv
