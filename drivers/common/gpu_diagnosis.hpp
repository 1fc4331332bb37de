// Why a GPU on the PCI bus is not usable: a pure function from facts (the PCI scan, the device nodes and their
// permissions, the kernel modules, the driver versions) and from what the backends support, to one line per GPU
// that no backend exposes. Gathering the facts is separate (gather_gpu_facts), so every reason can be tested with
// fabricated facts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/pci_scan.hpp"
#include "hcq/backend/os.hpp"

namespace hcq {

// A /dev node as this process sees it.
struct NodeAccess {
  enum class State { absent, no_permission, ok, error };
  State state = State::absent;
  int err = 0;  // the errno of the failed open, for State::error

  static NodeAccess probe(Os& os, const std::string& path);  // opens it read-write through the seam, then closes
};

struct KfdVersion {
  uint32_t major = 0, minor = 0;
};

// The loaded NVIDIA kernel module, as /proc/driver/nvidia/version describes it (parsed by the NV backend).
struct NvidiaModule {
  std::string version;  // "580.65.06"
  uint32_t major = 0;   // 580: the driver branch
  bool open = false;    // NVIDIA's open kernel module ("Open Kernel Module"), not the proprietary one
};

struct GpuFacts {
  PciScan pci;
  // AMD: the amdgpu module, /dev/kfd, the KFD ioctl version (nullopt: not asked, or /dev/kfd did not open), the
  // render minors of the GPUs the KFD topology lists, and each render node's access. The AMD backend supplies
  // kfd_version and kfd_render_minors (it owns the KFD ioctls and the topology parser).
  bool amdgpu_loaded = false;
  NodeAccess kfd;
  std::optional<KfdVersion> kfd_version;
  std::vector<uint32_t> kfd_render_minors;
  std::map<uint32_t, NodeAccess> render_nodes;  // by render minor
  // NVIDIA: the nvidia and nvidia_uvm modules, the control and UVM nodes, each GPU's /dev/nvidia<minor> (its minor
  // from /proc/driver/nvidia/gpus/<address>/information), the text of /proc/driver/nvidia/version and what it says
  // (nvidia_module: the NV backend's parser supplies it; nullopt when the text is absent or not understood).
  bool nvidia_loaded = false;
  bool nvidia_uvm_loaded = false;
  NodeAccess nvidiactl, nvidia_uvm;
  std::map<std::string, uint32_t> nvidia_minor_by_address;
  std::map<uint32_t, NodeAccess> nvidia_nodes;  // by device minor
  std::optional<std::string> nvidia_version_text;
  std::optional<NvidiaModule> nvidia_module;
};

// What the backends accept. The registry fills it from the backends.
struct BackendSupport {
  uint32_t kfd_major = 1;      // the KFD ioctl ABI major the AMD backend speaks
  uint32_t kfd_min_minor = 0;  // the oldest minor it works with
  bool nv_backend_built = false;
  std::vector<uint32_t> nv_branches;  // driver branches with RM layouts (570, 580)
  bool nv_needs_open_module = false;  // whether the NV backend refuses NVIDIA's proprietary module
};

struct GpuFinding {
  PciGpu gpu;
  std::string reason;  // "amdgpu not loaded (modprobe amdgpu)"
};

// One finding per AMD or NVIDIA GPU that no backend exposes, in PCI order. A GPU whose path to a backend is clear
// (driver bound, nodes accessible, version supported, listed by KFD) yields nothing: the device list shows it, or
// the probe report says why its open failed.
std::vector<GpuFinding> diagnose_gpus(const GpuFacts& facts, const BackendSupport& support);

// Everything but kfd_version, kfd_render_minors and nvidia_module: sysfs, /dev and /proc through the seam. Only the nodes of vendors
// present on the bus are opened.
GpuFacts gather_gpu_facts(Os& os, PciScan pci);

}  // namespace hcq
