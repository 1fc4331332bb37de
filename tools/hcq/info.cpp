// `hcq info`: every device that opens, with what it is, and every known kind that does not, with the reason; then
// every GPU on the PCI bus that no backend exposes, with why.
#include <cstdio>
#include <exception>
#include <string>
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
    "queues, driver version. Device kinds absent here are listed with the reason. AMD and NVIDIA GPUs found on the\n"
    "PCI bus (libpciaccess) that no backend exposes are listed with why (driver not loaded, no permission on a\n"
    "device node, unsupported driver version, ...).\n"
    "\n"
    "  --json   one JSON document: {\"devices\": [...], \"unavailable\": [{\"device\", \"reason\"}],\n"
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
        .end_object();
  }
  w.end_array().key("unavailable").begin_array();
  for (const Unavailable& u : unavailable) w.begin_object().field("device", u.device).field("reason", u.reason).end_object();
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
