// GPUs on the PCI bus, whether or not a kernel driver exposes them: what `hcq info` needs to say "this GPU is here,
// and here is why no backend can use it". libpciaccess enumerates the bus; the kernel driver bound to each device
// and its DRM render nodes come from sysfs, read through the OS seam.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hcq/backend/os.hpp"

namespace hcq {

inline constexpr uint16_t kPciVendorAmd = 0x1002;
inline constexpr uint16_t kPciVendorNvidia = 0x10de;

struct PciGpu {
  std::string address;     // "0000:03:00.0" (domain:bus:device.function), as sysfs names it
  uint16_t vendor_id = 0;  // kPciVendorAmd or kPciVendorNvidia
  uint16_t device_id = 0;
  uint32_t class_code = 0;  // 24-bit: base class, subclass, programming interface (0x030000 = VGA)
  uint8_t revision = 0;
  std::string kernel_driver;  // the driver bound to it ("amdgpu", "nvidia", "nouveau", "vfio-pci"); empty: none
  std::vector<uint32_t> render_minors;  // /dev/dri/renderD<minor> nodes its driver created, ascending

  std::string vendor_name() const;  // "AMD", "NVIDIA"
};

// The outcome of one scan. `problem` is non-empty when the bus could not be enumerated (libpciaccess failed to
// initialise, as in many containers); `gpus` is then empty, which does not mean there is no GPU.
struct PciScan {
  std::vector<PciGpu> gpus;  // in bus order
  std::string problem;
};

// True for the classes GPUs use: display controllers (0x03xxxx: VGA, 3D, other) and processing accelerators
// (0x12xxxx, which is how datacenter parts such as AMD Instinct MI300 present themselves).
bool is_gpu_class(uint32_t class_code);

// "0000:03:00.0".
std::string pci_address(uint32_t domain, uint32_t bus, uint32_t device, uint32_t function);

// Every AMD and NVIDIA GPU on the bus, each with its kernel driver and render nodes. Never throws for a missing
// or unreadable bus: that is reported in PciScan::problem.
PciScan scan_pci_gpus(Os& os);

// Fills gpu.kernel_driver and gpu.render_minors from /sys/bus/pci/devices/<address>/ (uevent's DRIVER= line and
// the drm/ directory). Separate from the scan so it can be checked over a fabricated sysfs.
void read_pci_sysfs(Os& os, PciGpu& gpu);

}  // namespace hcq
