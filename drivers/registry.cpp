// The device registry: the only place that knows every driver. It parses device names, opens each device once (on
// first use), picks the default by HCQ_DEVICE or by probing, and closes everything at exit.
#include "hcq/registry.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "amd/kfd/amd_device.hpp"
#include "cpu/cpu_device.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "hcq/process.hpp"
#include "sim/kfd/sim_amd_device.hpp"
#include "sim/kfd/sim_kfd.hpp"

namespace hcq {
namespace {

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
    {Kind::sim_amd, "SIM-AMD", "SIM-AMD:<gfx target>", false},
    {Kind::sim_nv, "SIM-NV", "SIM-NV:<arch>", false},
    {Kind::cuda, "CUDA", "CUDA[:n]", true},
};

// The default device is the first of these that opens.
constexpr Kind kProbeOrder[] = {Kind::amd, Kind::nv, Kind::cuda, Kind::cpu};

const KindInfo& info_of(Kind k) {
  for (const KindInfo& i : kKinds)
    if (i.kind == k) return i;
  return kKinds[0];
}

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
    const bool valid_target = !suffix.empty() && std::all_of(suffix.begin(), suffix.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
    if (!valid_target) unknown_name(name, cat(k.pattern, " needs a target"));
    return {k.kind, cat(k.prefix, ":", suffix)};
  }
  unknown_name(name, "no such kind");
}

bool path_exists(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0;
}

std::unique_ptr<Device> open_new(const ParsedName& p) {
  switch (p.kind) {
    case Kind::cpu:
      return std::make_unique<cpu::CpuDevice>(p.canonical);
    case Kind::amd:
      return amd::open_kfd_device(p.canonical, static_cast<unsigned>(std::stoul(p.canonical.substr(4))));
    case Kind::nv:
      throw UnsupportedDriver(cat(p.canonical, ": the NV (RM/UVM) backend is not built yet (/dev/nvidiactl ",
                                  path_exists("/dev/nvidiactl") ? "is present" : "is absent", ")"));
    case Kind::cuda:
      throw UnsupportedDriver(cat(p.canonical, ": the CUDA backend is not built yet"));
    case Kind::sim_amd:
      return sim::open_sim_amd_gpu(p.canonical, p.canonical.substr(p.canonical.find(':') + 1));
    case Kind::sim_nv:
      throw UnsupportedDriver(cat(p.canonical, ": the simulated NV GPU is not built yet"));
  }
  throw UnsupportedDriver(cat(p.canonical, ": no backend"));
}

// The open devices. Destroyed at exit, before the process state (created first, see registry()).
class Registry {
 public:
  ~Registry() { close_all(); }

  Device& open(const ParsedName& p) {
    std::lock_guard lock(mu_);
    for (const auto& [name, dev] : open_)
      if (name == p.canonical) return *dev;
    auto dev = open_new(p);
    Device& ref = *dev;
    open_.emplace_back(p.canonical, std::move(dev));
    return ref;
  }

  void close_all() noexcept {
    std::vector<std::pair<std::string, std::unique_ptr<Device>>> closing;
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
    while (!closing.empty()) closing.pop_back();  // reverse order of opening
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, std::unique_ptr<Device>>> open_;  // in order of opening
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
  for (const std::string& gfx : sim::SimGpuSpec::names()) names.push_back("SIM-AMD:" + gfx);
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
      // SIM-AMD:<target> opens on request (no probe: it is a simulator); SIM-NV does not exist yet.
      if (k.kind != Kind::sim_amd) reason = "the simulated NV GPU is not built yet";
    }
    report.emplace_back(std::string(k.pattern), reason);
  }
  return report;
}

void close_all_devices() { registry().close_all(); }

}  // namespace hcq
