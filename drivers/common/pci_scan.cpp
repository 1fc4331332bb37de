#include "common/pci_scan.hpp"

#include <pciaccess.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string_view>

#include "hcq/error.hpp"

namespace hcq {
namespace {

// libpciaccess keeps its device list in library-global state: one scan at a time.
std::mutex& pci_mutex() {
  static std::mutex m;
  return m;
}

constexpr std::string_view kRenderPrefix = "renderD";

}  // namespace

std::string PciGpu::vendor_name() const {
  switch (vendor_id) {
    case kPciVendorAmd: return "AMD";
    case kPciVendorNvidia: return "NVIDIA";
  }
  return cat("vendor ", hex(vendor_id));
}

bool is_gpu_class(uint32_t class_code) {
  const uint32_t base = (class_code >> 16) & 0xff;
  return base == 0x03 || base == 0x12;
}

std::string pci_address(uint32_t domain, uint32_t bus, uint32_t device, uint32_t function) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain & 0xffff, bus & 0xff, device & 0x1f, function & 7);
  return buf;
}

void read_pci_sysfs(Os& os, PciGpu& gpu) {
  const std::string dir = "/sys/bus/pci/devices/" + gpu.address;
  gpu.kernel_driver.clear();
  gpu.render_minors.clear();
  // uevent carries DRIVER=<name> exactly when a driver is bound; it is the text form of the driver symlink.
  if (const std::optional<std::string> uevent = os.read_file(dir + "/uevent")) {
    std::string_view rest(*uevent);
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      const std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      if (line.substr(0, 7) == "DRIVER=") gpu.kernel_driver = std::string(line.substr(7));
    }
  }
  for (const std::string& name : os.list_dir(dir + "/drm")) {
    if (name.compare(0, kRenderPrefix.size(), kRenderPrefix) != 0) continue;
    uint32_t minor = 0;
    const char* begin = name.data() + kRenderPrefix.size();
    const char* end = name.data() + name.size();
    auto [ptr, ec] = std::from_chars(begin, end, minor);
    if (ec == std::errc() && ptr == end && begin != end) gpu.render_minors.push_back(minor);
  }
  std::sort(gpu.render_minors.begin(), gpu.render_minors.end());
}

PciScan scan_pci_gpus(Os& os) {
  PciScan scan;
  {
    std::lock_guard lock(pci_mutex());
    if (const int err = pci_system_init(); err != 0) {
      scan.problem = cat("libpciaccess could not initialise (", std::strerror(err),
                         "): the PCI bus is not visible here (a container without /sys/bus/pci?)");
      pci_system_cleanup();
      return scan;
    }
    for (uint16_t vendor : {kPciVendorAmd, kPciVendorNvidia}) {
      pci_id_match match{};
      match.vendor_id = vendor;
      match.device_id = PCI_MATCH_ANY;
      match.subvendor_id = PCI_MATCH_ANY;
      match.subdevice_id = PCI_MATCH_ANY;
      match.device_class = 0;  // class filtered below: two base classes
      match.device_class_mask = 0;
      pci_device_iterator* it = pci_id_match_iterator_create(&match);
      if (it == nullptr) continue;
      while (pci_device* d = pci_device_next(it)) {
        if (!is_gpu_class(d->device_class)) continue;  // audio functions, USB-C controllers on the same card
        PciGpu g;
        g.address = pci_address(d->domain, d->bus, d->dev, d->func);
        g.vendor_id = d->vendor_id;
        g.device_id = d->device_id;
        g.class_code = d->device_class;
        g.revision = d->revision;
        scan.gpus.push_back(std::move(g));
      }
      pci_iterator_destroy(it);
    }
    pci_system_cleanup();
  }
  std::sort(scan.gpus.begin(), scan.gpus.end(), [](const PciGpu& a, const PciGpu& b) { return a.address < b.address; });
  for (PciGpu& g : scan.gpus) read_pci_sysfs(os, g);
  return scan;
}

}  // namespace hcq
