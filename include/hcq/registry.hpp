// The device registry: devices by name, opened lazily, closed at exit. The only place that knows every driver.
// Names: CPU[:n], AMD[:n], NV[:n], SIM-AMD:<gfx target>, SIM-NV:<arch>, CUDA[:n].
// Ownership: the registry owns the devices it opens (shared with their buffers and programs: see Device) until
// close_all_devices() or exit. Threads: every call is thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hcq {

class Device;

// Opens (once) and returns the named device; the registry keeps it open until close_all_devices() (see Device for
// what else keeps it open). An empty name means HCQ_DEVICE, or else the first device that opens
// in the fixed probe order (AMD, NV, CUDA, CPU). Throws InvalidArgument for an unknown name (listing the known
// ones) and the driver's error (UnsupportedDriver, OsError, ...) when the device cannot open.
Device& open_device(std::string_view name = {});

// Name patterns the registry knows, for messages and `hcq info`.
std::vector<std::string> known_device_patterns();

// Every device name that opens on this machine (opening them). Order: probe order.
std::vector<std::string> available_devices();

// The simulated GPUs this build can open (SIM-AMD:<target>, ...): real drivers/ code over a simulated kernel
// driver. Not part of the default probe: a simulator is never picked by accident.
std::vector<std::string> simulated_devices();

// Why a known device kind is absent here: {name pattern, reason}. Empty reason means it opened.
std::vector<std::pair<std::string, std::string>> probe_report();

// A GPU on the PCI bus that no backend exposes, and why ("amdgpu not loaded (modprobe amdgpu)").
struct UnusableGpu {
  std::string pci_address;  // "0000:03:00.0"
  std::string vendor;       // "AMD", "NVIDIA"
  uint16_t vendor_id = 0, device_id = 0;
  std::string kernel_driver;  // the driver bound to it; empty: none
  std::string reason;
};
struct PciGpuReport {
  std::vector<UnusableGpu> unusable;  // in PCI order
  std::string scan_problem;           // non-empty: the PCI bus could not be enumerated here (libpciaccess), so
                                      // `unusable` being empty says nothing
};
// Scans the PCI bus for AMD and NVIDIA GPUs and says, for each that no backend exposes, why. Opens nothing but
// the device nodes it checks (and closes them). For `hcq info`.
PciGpuReport pci_gpu_report();

// Closes every open device (synchronizing first) and forgets it: the next open_device opens it anew. A device that
// buffers or programs still hold stays open for them until the last of them goes (see Device). Called at exit;
// callable by tests.
void close_all_devices();

}  // namespace hcq
