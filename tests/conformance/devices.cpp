// The device list and per-kind kernels of the conformance suite. Later backends add themselves here:
//   - the simulated GPUs (SIM-AMD:<gfx>, SIM-NV:<arch>) append their names to kDevices and their interfaces
//     ("sim-kfd", "sim-rm") to device_kind(), with kernels in the form their compiler takes;
//   - hw-tests/ instantiates the same suites on real GPUs ("AMD", "NV") through the same two functions.
#include "conformance/devices.hpp"

#include <cstdlib>
#include <map>
#include <stdexcept>
#include <string_view>

namespace hcq::conformance {
namespace {

// CPU kernels use the ABI of include/hcq/kernel_abi.h (the CPU compiler prepends it): one HCQ_KERNEL call per
// workgroup, HCQ_FOR_EACH_THREAD looping over the workgroup's threads.
ConformanceKernels cpu_kernels() {
  ConformanceKernels k;
  k.add_one_f32 = {"add_one_f32", R"(
HCQ_KERNEL(add_one_f32, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(float, 1)[i] + 1.0f;
  }
}
)"};
  k.add_one_u8 = {"add_one_u8", R"(
HCQ_KERNEL(add_one_u8, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint8_t, 0)[i] = (uint8_t)(HCQ_BUF(uint8_t, 1)[i] + 1u);
  }
}
)"};
  k.add_value_u32 = {"add_value_u32", R"(
HCQ_KERNEL(add_value_u32, 2, 2) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[i] = HCQ_BUF(uint32_t, 1)[i] + HCQ_VAL(1);
  }
}
)"};
  k.mark_threads = {"mark_threads", R"(
HCQ_KERNEL(mark_threads, 1, 1) {
  uint32_t width = HCQ_NUM_GROUPS(0) * HCQ_LOCAL_SIZE(0);
  uint32_t height = HCQ_NUM_GROUPS(1) * HCQ_LOCAL_SIZE(1);
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint64_t id = ((uint64_t)HCQ_GLOBAL_ID(2, z) * height + HCQ_GLOBAL_ID(1, y)) * width + HCQ_GLOBAL_ID(0, x);
    if (id < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[id] += 1u;
  }
}
)"};
  return k;
}

const std::vector<ConformanceDevice> kDevices = {
    // The CPU device always exists; CPU:1 is a second instance of it for the cross-device tests.
    {"CPU:0", "CPU:1"},
    // SIM-AMD:<target> opens a simulated machine of two GPUs; SIM-AMD:<target>:1 is the second, its peer.
    {"SIM-AMD:gfx1100", "SIM-AMD:gfx1100:1"},
    {"SIM-AMD:gfx942", "SIM-AMD:gfx942:1"},
    {"SIM-AMD:gfx1201", "SIM-AMD:gfx1201:1"},
    // SIM-NV:<gpu> opens a simulated machine of two GPUs; SIM-NV:<gpu>:1 is the second, its peer.
    {"SIM-NV:ampere", "SIM-NV:ampere:1"},
    {"SIM-NV:ga100", "SIM-NV:ga100:1"},  // AMPERE_DMA_COPY_A: copy signals through the host's semaphore
    {"SIM-NV:hopper", "SIM-NV:hopper:1"},
    {"SIM-NV:blackwell", "SIM-NV:blackwell:1"},
    // An Ampere behind gVisor's NVIDIA proxy: the backend's fallbacks (usermode class, UVM-only mappings) under the
    // same conformance suite.
    {"SIM-NV:ampere-gvisor", "SIM-NV:ampere-gvisor:1"},
};

// Real GPUs are opt-in (hw-tests/): HCQ_CONFORMANCE_DEVICES="NV:0,AMD:0+AMD:1" adds NV:0, and AMD:0 with AMD:1 as
// its peer. A test knob, not a library one, so it is read here rather than in hcq/knobs.cpp. A named device is
// instantiated whether or not it opens: one that does not fails every test with the reason (never a skip), so a
// machine that lost its GPU cannot pass. A malformed entry (an empty name beside '+') throws, which ends the test
// binary before any test runs.
std::vector<ConformanceDevice> requested_devices() {
  const char* env = std::getenv("HCQ_CONFORMANCE_DEVICES");
  std::vector<ConformanceDevice> out;
  if (env == nullptr) return out;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return std::string(s);
  };
  std::string_view rest(env);
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (entry.empty()) continue;  // "NV:0," or ", ": nothing named
    const size_t plus = entry.find('+');
    ConformanceDevice d{trim(std::string_view(entry).substr(0, plus)), std::nullopt};
    if (plus != std::string::npos) d.peer = trim(std::string_view(entry).substr(plus + 1));
    if (d.name.empty() || (d.peer && d.peer->empty()))
      throw std::invalid_argument("HCQ_CONFORMANCE_DEVICES=\"" + std::string(env) + "\": entry \"" + entry +
                                  "\" needs a device name on each side of '+'");
    out.push_back(std::move(d));
  }
  return out;
}

// The built-in list, then each requested device that is not already in it.
const std::vector<ConformanceDevice>& all_devices() {
  static const std::vector<ConformanceDevice> all = [] {
    std::vector<ConformanceDevice> v = kDevices;
    for (ConformanceDevice& d : requested_devices()) {
      bool known = false;
      for (const auto& k : v) known = known || k.name == d.name;
      if (!known) v.push_back(std::move(d));
    }
    return v;
  }();
  return all;
}

}  // namespace

const std::vector<ConformanceDevice>& conformance_devices() { return all_devices(); }

std::vector<std::string> conformance_device_names() {
  std::vector<std::string> names;
  for (const auto& d : all_devices()) names.push_back(d.name);
  return names;
}

const ConformanceDevice& conformance_device(const std::string& name) {
  for (const auto& d : all_devices())
    if (d.name == name) return d;
  throw std::out_of_range("conformance: device \"" + name + "\" is not in conformance_devices()");
}

const DeviceKind& device_kind(const std::string& interface) {
  static const std::map<std::string, DeviceKind> kinds = {
      {"cpu", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/true}},
      // AMD GPUs (real KFD and the simulated one): the AMD compiler takes the same C source as the CPU device
      // (include/hcq/kernel_abi.h has an AMDGPU section). WAIT_REG_MEM/POLL_REGMEM compare 32 bits.
      {"kfd", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/false}},
      {"sim-kfd", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/false}},
      // NVIDIA GPUs (real RM and the simulated one): NvCompiler takes the same C source through NVRTC
      // (include/hcq/kernel_abi.h has an NVRTC section). Host semaphore acquires compare 64 bits.
      {"rm", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/true}},
      {"sim-rm", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/true}},
      // The CUDA adapter (drivers/cuda): the same NvCompiler cubins; cuStreamWaitValue64 compares 64 bits.
      {"cuda", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/true}},
  };
  auto it = kinds.find(interface);
  if (it == kinds.end())
    throw std::out_of_range("conformance: no kernels for device interface \"" + interface +
                            "\"; add them to tests/conformance/devices.cpp");
  return it->second;
}

}  // namespace hcq::conformance
