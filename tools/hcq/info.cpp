// `hcq info`: every device that opens, with what it is, and every known kind that does not, with the reason; then
// every GPU on the PCI bus that no backend exposes, with why.
#include <array>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "commands.hpp"
#include "format.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "json_writer.hpp"

namespace hcq::tool {
namespace {

constexpr const char* kInfoHelp =
    "usage: hcq info [--json]\n"
    "\n"
    "Opens every device the registry knows and lists those that open: name, interface, architecture, memory,\n"
    "queues, driver version; then, per device, its launch limits (threads per group, group and grid dims),\n"
    "whether copies run on the compute queue, and the GPU's UUID as the vendor's tools write it (nvidia-smi's\n"
    "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, ROCr's GPU-<16 hex digits>; none for the CPU). Device kinds\n"
    "absent here are listed with the reason. AMD and NVIDIA GPUs found on the PCI bus (libpciaccess) that no\n"
    "backend exposes are listed with why (driver not loaded, no permission on a device node, unsupported driver\n"
    "version, ...). A device whose driver refused calls the way a sandbox's driver proxy does (gVisor's nvproxy\n"
    "without the graphics capability) says so at the end of its driver text (\"; sandboxed: ...\": what was\n"
    "refused) and is listed again under \"sandboxed\".\n"
    "A third table gives what the framework sizes kernels by: the wave (AMD wavefront, NVIDIA warp; 1 on the CPU),\n"
    "the shared memory one workgroup may use, and the compute units (AMD CUs, NVIDIA SMs, CPU worker threads).\n"
    "A CPU device also lists the instruction-set features its kernels may use (CPUID, enabled by the OS, less\n"
    "HCQ_CPU_FEATURES, AMX only with Linux's tile-data permission), the bf16 matmul path they give (amx,\n"
    "avx512_bf16, avx512, avx2, scalar) and why a feature the CPU has is not used.\n"
    "\n"
    "  --json   one JSON document: {\"devices\": [...], \"unavailable\": [{\"device\", \"reason\"}],\n"
    "           a device: {\"name\", \"interface\", \"arch\", \"memory_bytes\", \"compute_queues\",\n"
    "                      \"copy_queues\", \"driver_version\", \"uuid\" (text as above, or null),\n"
    "                      \"launch_limits\": {\"max_threads_per_group\", \"max_local\": [x, y, z],\n"
    "                                        \"max_global\": [x, y, z]}, \"copies_on_compute\",\n"
    "                      \"wave_size\", \"shared_memory_bytes\", \"compute_units\",\n"
    "                      CPU devices: \"cpu_features\": [names], \"bf16_matmul\", \"cpu_features_note\"},\n"
    "           \"pci\": {\"scan_problem\": null or why the bus could not be scanned,\n"
    "                   \"unusable\": [{\"pci_address\", \"vendor\", \"vendor_id\", \"device_id\",\n"
    "                                 \"kernel_driver\", \"reason\"}]}}\n"
    "\n"
    "exit status: 0 when at least one device opened, 1 when none did, 2 bad command line.\n";

struct Unavailable {
  std::string device;  // a name, or a name pattern from the registry
  std::string reason;
};

// "1002:744c": the PCI ids as lspci -n writes them.
std::string pci_ids(const UnusableGpu& g) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04x:%04x", g.vendor_id, g.device_id);
  return buf;
}

// The UUID as the vendor's own tools print it, so it can be matched against them: ROCr's "GPU-" then the 16 hex
// digits DeviceInfo holds as characters (AMD, interfaces "kfd" and "sim-kfd"), nvidia-smi's "GPU-" then the 16 bytes
// in hex grouped 8-4-4-4-12 (everything else). Empty when the device has none.
std::string uuid_text(const DeviceInfo& d) {
  if (!d.uuid) return {};
  const std::array<uint8_t, 16>& u = *d.uuid;
  if (d.interface.ends_with("kfd")) return "GPU-" + std::string(u.begin(), u.end());
  std::string s = "GPU-";
  char byte[3];
  for (size_t i = 0; i < u.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(byte, sizeof byte, "%02x", u[i]);
    s += byte;
  }
  return s;
}

// "1024 x 1024 x 64"
std::string dims_text(const uint32_t (&d)[3]) {
  return std::to_string(d[0]) + " x " + std::to_string(d[1]) + " x " + std::to_string(d[2]);
}

void dims_json(JsonWriter& w, const uint32_t (&d)[3]) {
  w.begin_array().value(d[0]).value(d[1]).value(d[2]).end_array();
}

void print_json(const std::vector<DeviceInfo>& devices, const std::vector<Unavailable>& unavailable,
                const PciGpuReport& pci) {
  JsonWriter w;
  w.begin_object().key("devices").begin_array();
  for (const DeviceInfo& d : devices) {
    w.begin_object()
        .field("name", d.name)
        .field("interface", d.interface)
        .field("arch", d.arch)
        .field("memory_bytes", d.memory_bytes)
        .field("compute_queues", d.compute_queues)
        .field("copy_queues", d.copy_queues)
        .field("driver_version", d.driver_version)
        .key("uuid");
    if (d.uuid) {
      w.value(uuid_text(d));
    } else {
      w.null();
    }
    const LaunchLimits& l = d.launch_limits;
    w.key("launch_limits").begin_object().field("max_threads_per_group", l.max_threads_per_group).key("max_local");
    dims_json(w, l.max_local);
    w.key("max_global");
    dims_json(w, l.max_global);
    w.end_object()
        .field("copies_on_compute", d.copies_on_compute)
        .field("wave_size", d.wave_size)
        .field("shared_memory_bytes", d.shared_memory_bytes)
        .field("compute_units", d.compute_units)
        .field("matrix_unit", std::string(to_string(d.matrix_unit)));
    if (d.cpu_isa) {
      w.key("cpu_features").begin_array();
      for (size_t f = 0; f < kCpuFeatureCount; ++f)
        if (d.cpu_isa->features.has(static_cast<CpuFeature>(f))) w.value(std::string(kCpuFeatureNames[f]));
      w.end_array()
          .field("bf16_matmul", std::string(to_string(d.cpu_isa->bf16_matmul)))
          .field("cpu_features_note", d.cpu_isa->note);
    }
    w.end_object();
  }
  w.end_array().key("unavailable").begin_array();
  for (const Unavailable& u : unavailable)
    w.begin_object().field("device", u.device).field("reason", u.reason).end_object();
  w.end_array().key("pci").begin_object().key("scan_problem");
  if (pci.scan_problem.empty()) {
    w.null();
  } else {
    w.value(pci.scan_problem);
  }
  w.key("unusable").begin_array();
  for (const UnusableGpu& g : pci.unusable) {
    w.begin_object()
        .field("pci_address", g.pci_address)
        .field("vendor", g.vendor)
        .field("vendor_id", uint32_t{g.vendor_id})
        .field("device_id", uint32_t{g.device_id})
        .field("kernel_driver", g.kernel_driver)
        .field("reason", g.reason)
        .end_object();
  }
  w.end_array().end_object().end_object();
  std::printf("%s\n", w.str().c_str());
}

void print_table(const std::vector<DeviceInfo>& devices, const std::vector<Unavailable>& unavailable,
                 const PciGpuReport& pci) {
  if (devices.empty()) {
    std::printf("no device opened\n");
  } else {
    std::printf("%s%s%s%s%s%s\n", pad("NAME", 18).c_str(), pad("INTERFACE", 11).c_str(), pad("ARCH", 16).c_str(),
                pad("MEMORY", 12).c_str(), pad("QUEUES", 22).c_str(), "DRIVER");
    for (const DeviceInfo& d : devices) {
      std::string queues = std::to_string(d.compute_queues) + " compute, " + std::to_string(d.copy_queues) + " copy";
      std::printf("%s%s%s%s%s%s\n", pad(d.name, 18).c_str(), pad(d.interface, 11).c_str(), pad(d.arch, 16).c_str(),
                  pad(human_bytes(d.memory_bytes), 12).c_str(), pad(queues, 22).c_str(),
                  d.driver_version.empty() ? "-" : d.driver_version.c_str());
    }
    // What a launch may ask and where copies go, apart: the first table stays one screen wide.
    std::printf("\n%s%s%s%s%s%s\n", pad("NAME", 18).c_str(), pad("THREADS", 9).c_str(), pad("GROUP DIMS", 20).c_str(),
                pad("GRID DIMS", 38).c_str(), pad("COPIES", 12).c_str(), "UUID");
    for (const DeviceInfo& d : devices) {
      const LaunchLimits& l = d.launch_limits;
      const std::string uuid = uuid_text(d);
      std::printf("%s%s%s%s%s%s\n", pad(d.name, 18).c_str(), pad(std::to_string(l.max_threads_per_group), 9).c_str(),
                  pad(dims_text(l.max_local), 20).c_str(), pad(dims_text(l.max_global), 38).c_str(),
                  pad(d.copies_on_compute ? "any queue" : "copy queue", 12).c_str(), uuid.empty() ? "-" : uuid.c_str());
    }
    // What the framework's code generator sizes kernels by (DeviceInfo, framework/codegen/target.cpp).
    std::printf("\n%s%s%s%s%s\n", pad("NAME", 18).c_str(), pad("WAVE", 6).c_str(), pad("SHARED/GROUP", 14).c_str(),
                pad("COMPUTE UNITS", 15).c_str(), "MATRIX UNIT");
    for (const DeviceInfo& d : devices)
      std::printf("%s%s%s%s%s\n", pad(d.name, 18).c_str(), pad(std::to_string(d.wave_size), 6).c_str(),
                  pad(human_bytes(d.shared_memory_bytes), 14).c_str(), pad(std::to_string(d.compute_units), 15).c_str(),
                  std::string(to_string(d.matrix_unit)).c_str());
    // The CPU device's instruction set: what the code generator may use and the bf16 matmul path it picks.
    bool cpu_heading = false;
    for (const DeviceInfo& d : devices) {
      if (!d.cpu_isa) continue;
      if (!cpu_heading)
        std::printf("\n%s%s%s\n", pad("NAME", 18).c_str(), pad("BF16 MATMUL", 13).c_str(), "CPU FEATURES");
      cpu_heading = true;
      std::printf("%s%s%s\n", pad(d.name, 18).c_str(), pad(std::string(to_string(d.cpu_isa->bf16_matmul)), 13).c_str(),
                  d.cpu_isa->features.names().c_str());
      if (!d.cpu_isa->note.empty()) std::printf("  %s%s\n", pad("", 29).c_str(), d.cpu_isa->note.c_str());
    }
  }
  // The backend appends this to a device's driver text when the driver refused what it always offers itself: the
  // evidence of a proxy between us and the driver (the NV backend under gVisor). Repeated here, where it is seen.
  constexpr std::string_view kSandboxed = "; sandboxed: ";
  bool sandbox_heading = false;
  for (const DeviceInfo& d : devices) {
    const size_t at = d.driver_version.find(kSandboxed);
    if (at == std::string::npos) continue;
    if (!sandbox_heading) std::printf("\nsandboxed (features the driver proxy refused were replaced):\n");
    sandbox_heading = true;
    std::printf("  %s%s\n", pad(d.name, 22).c_str(), d.driver_version.substr(at + kSandboxed.size()).c_str());
  }
  if (!unavailable.empty()) {
    std::printf("\nnot available:\n");
    for (const Unavailable& u : unavailable) std::printf("  %s%s\n", pad(u.device, 22).c_str(), u.reason.c_str());
  }
  if (!pci.scan_problem.empty()) std::printf("\nPCI scan: %s\n", pci.scan_problem.c_str());
  if (!pci.unusable.empty()) {
    std::printf("\nfound on PCI, not usable:\n");
    for (const UnusableGpu& g : pci.unusable) {
      const std::string what = g.pci_address + " " + g.vendor + " " + pci_ids(g);
      std::printf("  %s%s\n", pad(what, 32).c_str(), g.reason.c_str());
    }
  }
}

}  // namespace

int run_info(std::span<const std::string_view> args) {
  bool json = false;
  for (std::string_view a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      std::fputs(kInfoHelp, stdout);
      return kExitOk;
    } else {
      return usage_error("info: unknown option '" + std::string(a) + "'", "info");
    }
  }

  std::vector<DeviceInfo> devices;
  std::vector<Unavailable> unavailable;
  std::vector<std::string> names = available_devices();
  for (std::string& sim : simulated_devices()) names.push_back(std::move(sim));
  for (const std::string& name : names) {
    // A device that opened for the probe can still fail to describe itself; that is reported, not fatal.
    try {
      devices.push_back(open_device(name).info());
    } catch (const std::exception& e) {
      unavailable.push_back({name, e.what()});
    }
  }
  for (auto& [pattern, reason] : probe_report()) {
    if (!reason.empty()) unavailable.push_back({pattern, reason});
  }

  const PciGpuReport pci = pci_gpu_report();

  if (json) {
    print_json(devices, unavailable, pci);
  } else {
    print_table(devices, unavailable, pci);
  }
  return devices.empty() ? kExitFailure : kExitOk;
}

}  // namespace hcq::tool
