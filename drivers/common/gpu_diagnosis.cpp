#include "common/gpu_diagnosis.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

#include "hcq/error.hpp"

namespace hcq {
namespace {

bool contains(const std::vector<uint32_t>& v, uint32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

template <class K>
NodeAccess access_of(const std::map<K, NodeAccess>& m, const K& key) {
  auto it = m.find(key);
  return it == m.end() ? NodeAccess{} : it->second;
}

// Why a node this backend needs is not usable, or nullopt when it opens. `absent_hint` says how it comes to exist.
std::optional<std::string> node_problem(const NodeAccess& a, const std::string& path, const std::string& absent_hint,
                                        const std::string& permission_hint) {
  switch (a.state) {
    case NodeAccess::State::ok: return std::nullopt;
    case NodeAccess::State::absent: return cat(path, " is absent (", absent_hint, ")");
    case NodeAccess::State::no_permission: return cat("no permission on ", path, " (", permission_hint, ")");
    case NodeAccess::State::error: return cat(path, " does not open: ", std::strerror(a.err));
  }
  return std::nullopt;
}

std::string other_driver(const std::string& driver, const std::string& wanted) {
  if (driver == "vfio-pci") return cat("bound to vfio-pci (reserved for a virtual machine), not ", wanted);
  if (driver == "radeon") return cat("bound to radeon, the legacy driver; KFD needs ", wanted);
  if (driver == "nouveau") return cat("bound to nouveau; the NV backend needs NVIDIA's kernel module (", wanted, ")");
  return cat("bound to ", driver, ", not ", wanted);
}

std::optional<std::string> amd_reason(const PciGpu& g, const GpuFacts& f, const BackendSupport& s) {
  if (g.kernel_driver.empty()) {
    if (!f.amdgpu_loaded) return "amdgpu not loaded (modprobe amdgpu)";
    return "amdgpu is loaded but not bound to it (this kernel does not support the GPU, or its probe failed: see "
           "dmesg)";
  }
  if (g.kernel_driver != "amdgpu") return other_driver(g.kernel_driver, "amdgpu");
  if (auto p = node_problem(f.kfd, "/dev/kfd", "a kernel built without CONFIG_HSA_AMD, or a container without it",
                            "join the render group, or video on older systems"))
    return p;
  if (f.kfd_version) {
    const KfdVersion& v = *f.kfd_version;
    if (v.major < s.kfd_major || (v.major == s.kfd_major && v.minor < s.kfd_min_minor))
      return cat("KFD too old: ioctl ABI ", v.major, ".", v.minor, ", the AMD backend needs ", s.kfd_major, ".",
                 s.kfd_min_minor, " or newer");
    if (v.major > s.kfd_major)
      return cat("KFD ioctl ABI ", v.major, ".", v.minor, " is newer than the AMD backend knows (", s.kfd_major, ".x)");
  }
  if (g.render_minors.empty()) return "amdgpu is bound but made no render node (see dmesg)";
  const uint32_t minor = g.render_minors.front();
  if (auto p = node_problem(access_of(f.render_nodes, minor), cat("/dev/dri/renderD", minor),
                            "udev did not create it, or a container without /dev/dri", "join the render group"))
    return p;
  if (!contains(f.kfd_render_minors, minor))
    return "the KFD topology does not list it (KFD does not support this GPU, or its init failed: see dmesg)";
  return std::nullopt;
}

std::optional<std::string> nv_reason(const PciGpu& g, const GpuFacts& f, const BackendSupport& s) {
  const std::optional<NvidiaModule>& module = f.nvidia_module;
  if (g.kernel_driver.empty()) {
    if (!f.nvidia_loaded) return "the nvidia kernel module is not loaded (modprobe nvidia)";
    // The proprietary module does not drive the newest generations (Blackwell on): only the open one does.
    if (module && !module->open)
      return cat("NVIDIA's proprietary kernel module ", module->version,
                 " is loaded but does not drive it; recent GPUs (Blackwell on) need the open one (nvidia-open)");
    return "the nvidia module is loaded but not bound to it (this driver does not support the GPU, or its probe "
           "failed: see dmesg)";
  }
  if (g.kernel_driver != "nvidia") return other_driver(g.kernel_driver, "nvidia-open");
  if (!f.nvidia_version_text) return "nvidia is bound but /proc/driver/nvidia/version cannot be read";
  if (!module) {
    const std::string& t = *f.nvidia_version_text;
    return cat("unrecognised /proc/driver/nvidia/version: '", t.substr(0, std::min(t.find('\n'), size_t{120})), "'");
  }
  if (s.nv_needs_open_module && !module->open)
    return cat("NVIDIA's proprietary kernel module ", module->version,
               " is loaded; the NV backend needs the open one (nvidia-open, Open Kernel Module)");
  if (!contains(s.nv_branches, module->major)) {
    std::string known;
    for (uint32_t b : s.nv_branches) known += cat(known.empty() ? "" : ", ", b);
    return cat("driver ", module->version, " is not supported (the NV backend knows branches ",
               known.empty() ? "none" : known, ")");
  }
  if (auto p = node_problem(f.nvidiactl, "/dev/nvidiactl", "nvidia-modprobe creates it; a container needs it passed in",
                            "check its mode and group"))
    return p;
  if (f.nvidia_uvm.state == NodeAccess::State::absent && !f.nvidia_uvm_loaded)
    return "nvidia_uvm is not loaded (modprobe nvidia-uvm)";
  if (auto p = node_problem(f.nvidia_uvm, "/dev/nvidia-uvm", "nvidia-modprobe -u -c 0 creates it",
                            "check its mode and group"))
    return p;
  auto minor = f.nvidia_minor_by_address.find(g.address);
  if (minor == f.nvidia_minor_by_address.end())
    return cat("the nvidia driver lists no device minor for it (/proc/driver/nvidia/gpus/", g.address, ")");
  if (auto p = node_problem(access_of(f.nvidia_nodes, minor->second), cat("/dev/nvidia", minor->second),
                            "nvidia-modprobe -c <minor> creates it", "check its mode and group"))
    return p;
  if (!s.nv_backend_built)
    return cat("the NV backend is not built (driver ", module->version, " and its nodes look usable)");
  return std::nullopt;
}

}  // namespace

NodeAccess NodeAccess::probe(Os& os, const std::string& path) {
  const int fd = os.open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd >= 0) {
    os.close(fd);
    return {State::ok, 0};
  }
  const int err = errno;
  if (err == ENOENT) return {State::absent, err};
  if (err == EACCES || err == EPERM) return {State::no_permission, err};
  return {State::error, err};
}

std::vector<GpuFinding> diagnose_gpus(const GpuFacts& facts, const BackendSupport& support) {
  std::vector<GpuFinding> out;
  for (const PciGpu& g : facts.pci.gpus) {
    std::optional<std::string> why;
    if (g.vendor_id == kPciVendorAmd) why = amd_reason(g, facts, support);
    if (g.vendor_id == kPciVendorNvidia) why = nv_reason(g, facts, support);
    if (why) out.push_back({g, *why});
  }
  return out;
}

GpuFacts gather_gpu_facts(Os& os, PciScan pci) {
  GpuFacts f;
  f.pci = std::move(pci);
  const auto has = [&](uint16_t vendor) {
    return std::any_of(f.pci.gpus.begin(), f.pci.gpus.end(), [&](const PciGpu& g) { return g.vendor_id == vendor; });
  };
  // A module, loadable or built in, has a /sys/module/<name> directory with entries.
  const auto loaded = [&](const char* module) { return !os.list_dir(cat("/sys/module/", module)).empty(); };
  if (has(kPciVendorAmd)) {
    f.amdgpu_loaded = loaded("amdgpu");
    f.kfd = NodeAccess::probe(os, "/dev/kfd");
    for (const PciGpu& g : f.pci.gpus)
      for (uint32_t m : g.render_minors) f.render_nodes[m] = NodeAccess::probe(os, cat("/dev/dri/renderD", m));
  }
  if (has(kPciVendorNvidia)) {
    f.nvidia_loaded = loaded("nvidia");
    f.nvidia_uvm_loaded = loaded("nvidia_uvm");
    f.nvidiactl = NodeAccess::probe(os, "/dev/nvidiactl");
    f.nvidia_uvm = NodeAccess::probe(os, "/dev/nvidia-uvm");
    f.nvidia_version_text = os.read_file("/proc/driver/nvidia/version");
    for (const PciGpu& g : f.pci.gpus) {
      if (g.vendor_id != kPciVendorNvidia) continue;
      // "Device Minor: \t 0" in the driver's per-GPU information file.
      const std::optional<std::string> info = os.read_file(cat("/proc/driver/nvidia/gpus/", g.address, "/information"));
      if (!info) continue;
      const size_t at = info->find("Device Minor:");
      if (at == std::string::npos) continue;
      const size_t digits = info->find_first_of("0123456789", at);
      if (digits == std::string::npos) continue;
      const uint32_t minor = static_cast<uint32_t>(std::stoul(info->substr(digits, 9)));
      f.nvidia_minor_by_address[g.address] = minor;
      f.nvidia_nodes[minor] = NodeAccess::probe(os, cat("/dev/nvidia", minor));
    }
  }
  return f;
}

}  // namespace hcq
