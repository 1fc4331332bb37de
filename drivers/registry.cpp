// The device registry: the only place that knows every driver. It parses device names, opens each device once (on
// first use), picks the default by HCQ_DEVICE or by probing, and closes everything at exit. It reaches each backend
// through the backend's entry, which is null when the program does not link that backend (drivers/backend_entry.hpp).
#include "hcq/registry.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "backend_entry.hpp"
#include "common/gpu_diagnosis.hpp"
#include "common/pci_scan.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

// Weak: a backend that is not linked in leaves its entry's address null.
#pragma weak hcq_backend_cpu
#pragma weak hcq_backend_amd
#pragma weak hcq_backend_nv
#pragma weak hcq_backend_cuda
#pragma weak hcq_backend_sim_amd
#pragma weak hcq_backend_sim_nv

namespace hcq {
namespace {

// The entry of the backend that opens `device`, or UnsupportedDriver when this program does not link it.
template <class Entry>
const Entry& linked(const Entry* entry, std::string_view device, std::string_view backend) {
  if (entry == nullptr)
    throw UnsupportedDriver(cat(device, ": the ", backend, " backend is not linked into this program"));
  return *entry;
}

enum class Kind { cpu, amd, nv, cuda, sim_amd, sim_nv };

struct KindInfo {
  Kind kind;
  std::string_view prefix;   // upper case, as canonical names spell it
  std::string_view pattern;  // for messages and `hcq info`
  bool indexed;              // NAME[:n]; otherwise NAME:<target>
};

constexpr KindInfo kKinds[] = {
    {Kind::cpu, "CPU", "CPU[:n]", true},
    {Kind::amd, "AMD", "AMD[:n]", true},
    {Kind::nv, "NV", "NV[:n]", true},
    {Kind::sim_amd, "SIM-AMD", "SIM-AMD:<gfx target>[:n]", false},
    {Kind::sim_nv, "SIM-NV", "SIM-NV:<arch>[:n]", false},
    {Kind::cuda, "CUDA", "CUDA[:n]", true},
};

// The default device is the first of these that opens.
constexpr Kind kProbeOrder[] = {Kind::amd, Kind::nv, Kind::cuda, Kind::cpu};

const KindInfo& info_of(Kind k) {
  for (const KindInfo& i : kKinds)
    if (i.kind == k) return i;
  return kKinds[0];
}

// SIM-AMD:<target> opens a simulated machine of this many GPUs; SIM-AMD:<target>:<n> is its GPU n (a peer).
constexpr unsigned kSimAmdGpus = 2;
// SIM-NV:<arch> likewise opens a simulated machine of this many GPUs; SIM-NV:<arch>:<n> is its GPU n.
constexpr unsigned kSimNvGpus = 2;

struct ParsedName {
  Kind kind;
  std::string canonical;  // "CPU:0", "SIM-AMD:gfx1100": one instance per canonical name
};

std::string upper(std::string_view s) {
  std::string u(s);
  for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

std::string patterns_text() {
  std::string s;
  for (const KindInfo& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.pattern);
  return s;
}

[[noreturn]] void unknown_name(std::string_view name, std::string_view why) {
  throw InvalidArgument(cat("unknown device name '", name, "' (", why, "); known devices: ", patterns_text()));
}

// "CPU" -> CPU:0, "cpu:3" -> CPU:3, "SIM-AMD:gfx1100" -> SIM-AMD:gfx1100. Throws InvalidArgument otherwise.
ParsedName parse_name(std::string_view name) {
  const size_t colon = name.find(':');
  const std::string prefix = upper(name.substr(0, colon));
  const bool has_suffix = colon != std::string_view::npos;
  const std::string_view suffix = has_suffix ? name.substr(colon + 1) : std::string_view();
  for (const KindInfo& k : kKinds) {
    if (prefix != k.prefix) continue;
    if (k.indexed) {
      unsigned index = 0;
      if (has_suffix) {
        const char* begin = suffix.data();
        const char* end = begin + suffix.size();
        auto [ptr, ec] = std::from_chars(begin, end, index);
        if (suffix.empty() || ec != std::errc() || ptr != end || index > 1023)
          unknown_name(name, cat("'", suffix, "' is not a device index 0..1023"));
      }
      return {k.kind, cat(k.prefix, ":", index)};
    }
    std::string_view target = suffix;
    unsigned gpu = 0;  // SIM-AMD:<target>:<n>: GPU n of the simulated machine SIM-AMD:<target> opens
    if (const size_t c2 = suffix.find(':');
        (k.kind == Kind::sim_amd || k.kind == Kind::sim_nv) && c2 != std::string_view::npos) {
      const std::string_view n = suffix.substr(c2 + 1);
      auto [ptr, ec] = std::from_chars(n.data(), n.data() + n.size(), gpu);
      if (n.empty() || ec != std::errc() || ptr != n.data() + n.size() || gpu > 1023)
        unknown_name(name, cat("'", n, "' is not a GPU index 0..1023"));
      target = suffix.substr(0, c2);
    }
    const bool valid_target = !target.empty() && std::all_of(target.begin(), target.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    if (!valid_target) unknown_name(name, cat(k.pattern, " needs a target"));
    return {k.kind, gpu == 0 ? cat(k.prefix, ":", target) : cat(k.prefix, ":", target, ":", gpu)};
  }
  unknown_name(name, "no such kind");
}

std::unique_ptr<Device> open_new(const ParsedName& p) {
  switch (p.kind) {
    case Kind::cpu: return linked(&hcq_backend_cpu, p.canonical, "CPU").open(p.canonical);
    case Kind::amd:
      return linked(&hcq_backend_amd, p.canonical, "AMD")
          .open(p.canonical, static_cast<unsigned>(std::stoul(p.canonical.substr(4))));
    case Kind::nv:
      return linked(&hcq_backend_nv, p.canonical, "NV")
          .open(p.canonical, static_cast<unsigned>(std::stoul(p.canonical.substr(3))));
    case Kind::cuda:
      return linked(&hcq_backend_cuda, p.canonical, "CUDA")
          .open(p.canonical, static_cast<unsigned>(std::stoul(p.canonical.substr(5))));
    case Kind::sim_amd:  // GPU 0 of a simulated machine of kSimAmdGpus (peers: see Registry::open)
      return linked(&hcq_backend_sim_amd, p.canonical, "SIM-AMD")
          .open(p.canonical, p.canonical.substr(p.canonical.find(':') + 1), kSimAmdGpus);
    case Kind::sim_nv:
      return linked(&hcq_backend_sim_nv, p.canonical, "SIM-NV")
          .open(p.canonical, p.canonical.substr(p.canonical.find(':') + 1), kSimNvGpus);
  }
  throw UnsupportedDriver(cat(p.canonical, ": no backend"));
}

// The open devices. Destroyed at exit, before the process state (created first, see registry()).
class Registry {
 public:
  ~Registry() { close_all(); }

  Device& open(const ParsedName& p) {
    std::lock_guard lock(mu_);
    return open_locked(p);
  }

  void close_all() noexcept {
    std::vector<std::pair<std::string, std::shared_ptr<Device>>> closing;
    {
      std::lock_guard lock(mu_);
      closing.swap(open_);
    }
    // Synchronize everything before destroying anything: a device may be waiting on another's signal.
    for (auto& [name, dev] : closing) {
      try {
        dev->synchronize();
      } catch (...) {
      }
    }
    // Reverse order of opening. A device that buffers or programs still hold closes when the last of them goes.
    while (!closing.empty()) closing.pop_back();
  }

 private:
  Device& open_locked(const ParsedName& p) {
    for (const auto& [name, dev] : open_)
      if (name == p.canonical) return *dev;
    std::unique_ptr<Device> dev;
    if (const size_t c2 = p.canonical.find(':', p.canonical.find(':') + 1);
        p.kind == Kind::sim_amd && c2 != std::string::npos) {
      // SIM-AMD:<target>:<n>: another GPU of the machine SIM-AMD:<target> opened (opening it first if need be).
      Device& first = open_locked({p.kind, p.canonical.substr(0, c2)});
      dev = linked(&hcq_backend_sim_amd, p.canonical, "SIM-AMD")
                .open_peer(p.canonical, first, static_cast<unsigned>(std::stoul(p.canonical.substr(c2 + 1))));
    } else if (const size_t n2 = p.canonical.find(':', p.canonical.find(':') + 1);
               p.kind == Kind::sim_nv && n2 != std::string::npos) {
      // SIM-NV:<arch>:<n>: another GPU of the machine SIM-NV:<arch> opened (opening it first if need be).
      Device& first = open_locked({p.kind, p.canonical.substr(0, n2)});
      dev = linked(&hcq_backend_sim_nv, p.canonical, "SIM-NV")
                .open_peer(p.canonical, first, static_cast<unsigned>(std::stoul(p.canonical.substr(n2 + 1))));
    } else {
      dev = open_new(p);
    }
    Device& ref = *dev;
    open_.emplace_back(p.canonical, std::shared_ptr<Device>(std::move(dev)));
    return ref;
  }

  std::mutex mu_;
  std::vector<std::pair<std::string, std::shared_ptr<Device>>> open_;  // in order of opening; shared with buffers
};

Registry& registry() {
  process();  // constructed first, so it outlives the registry's exit-time destructor
  static Registry r;
  return r;
}

std::string default_name_of(Kind k) {
  const KindInfo& i = info_of(k);
  return cat(i.prefix, i.indexed ? ":0" : "");
}

}  // namespace

Device& open_device(std::string_view name) {
  if (name.empty()) {
    if (const std::optional<std::string> chosen = knobs::device(); chosen && !chosen->empty())
      return registry().open(parse_name(*chosen));
    std::string why;
    for (Kind k : kProbeOrder) {
      try {
        return registry().open(parse_name(default_name_of(k)));
      } catch (const Error& e) {
        why += cat("\n  ", default_name_of(k), ": ", e.what());
      }
    }
    throw UnsupportedDriver(cat("no device opens:", why));
  }
  return registry().open(parse_name(name));
}

std::vector<std::string> known_device_patterns() {
  std::vector<std::string> v;
  for (const KindInfo& k : kKinds) v.emplace_back(k.pattern);
  return v;
}

std::vector<std::string> available_devices() {
  std::vector<std::string> names;
  for (Kind k : kProbeOrder) {
    try {
      names.push_back(registry().open(parse_name(default_name_of(k))).name());
    } catch (const Error&) {
    }
  }
  return names;
}

std::vector<std::string> simulated_devices() {
  std::vector<std::string> names;
  if (&hcq_backend_sim_amd != nullptr)
    for (const std::string& gfx : hcq_backend_sim_amd.targets()) names.push_back("SIM-AMD:" + gfx);
  if (&hcq_backend_sim_nv != nullptr)
    for (const std::string& gpu : hcq_backend_sim_nv.targets()) names.push_back("SIM-NV:" + gpu);
  return names;
}

std::vector<std::pair<std::string, std::string>> probe_report() {
  std::vector<std::pair<std::string, std::string>> report;
  for (const KindInfo& k : kKinds) {
    std::string reason;
    if (k.indexed) {
      try {
        registry().open(parse_name(default_name_of(k.kind)));
      } catch (const Error& e) {
        reason = e.what();
        if (reason.empty()) reason = "failed to open";
      }
    } else {
      // SIM-AMD:<target> and SIM-NV:<gpu> open on request (no probe: they are simulators).
    }
    report.emplace_back(std::string(k.pattern), reason);
  }
  return report;
}

PciGpuReport pci_gpu_report() {
  Os& os = real_os();
  GpuFacts facts = gather_gpu_facts(os, scan_pci_gpus(os));
  // Each linked GPU backend's own view: what it asks of its kernel driver, and what the driver says.
  BackendSupport support;
  if (&hcq_backend_amd != nullptr) hcq_backend_amd.describe_support(os, facts, support);
  if (&hcq_backend_nv != nullptr) hcq_backend_nv.describe_support(os, facts, support);
  PciGpuReport report;
  report.scan_problem = facts.pci.problem;
  for (const GpuFinding& f : diagnose_gpus(facts, support))
    report.unusable.push_back(
        {f.gpu.address, f.gpu.vendor_name(), f.gpu.vendor_id, f.gpu.device_id, f.gpu.kernel_driver, f.reason});
  return report;
}

void close_all_devices() { registry().close_all(); }

}  // namespace hcq
