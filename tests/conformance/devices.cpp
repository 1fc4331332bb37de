// The device list and per-kind kernels of the conformance suite. Later backends add themselves here:
//   - the simulated GPUs (SIM-AMD:<gfx>, SIM-NV:<arch>) append their names to kDevices and their interfaces
//     ("sim-kfd", "sim-rm") to device_kind(), with kernels in the form their compiler takes;
//   - hw-tests/ instantiates the same suites on real GPUs ("AMD", "NV") through the same two functions.
#include "conformance/devices.hpp"

#include <map>
#include <stdexcept>

namespace hcq::conformance {
namespace {

// CPU kernels use the ABI of drivers/cpu/kernel_abi.h (the CPU compiler prepends it): one HCQ_KERNEL call per
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
    {"SIM-AMD:gfx1100", std::nullopt},
    {"SIM-AMD:gfx942", std::nullopt},
    {"SIM-AMD:gfx1201", std::nullopt},
    // Later: {"SIM-AMD:gfx1100", ...}, {"SIM-NV:ampere", ...} (a peer once the simulator opens two of a kind).
};

}  // namespace

const std::vector<ConformanceDevice>& conformance_devices() { return kDevices; }

std::vector<std::string> conformance_device_names() {
  std::vector<std::string> names;
  for (const auto& d : kDevices) names.push_back(d.name);
  return names;
}

const ConformanceDevice& conformance_device(const std::string& name) {
  for (const auto& d : kDevices)
    if (d.name == name) return d;
  throw std::out_of_range("conformance: device \"" + name + "\" is not in conformance_devices()");
}

const DeviceKind& device_kind(const std::string& interface) {
  static const std::map<std::string, DeviceKind> kinds = {
      {"cpu", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/true}},
      // AMD GPUs (real KFD and the simulated one): the AMD compiler takes the same C source as the CPU device
      // (drivers/amd/compiler/amd_kernel_abi.h defines the same macros). WAIT_REG_MEM/POLL_REGMEM compare 32 bits.
      {"kfd", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/false}},
      {"sim-kfd", DeviceKind{cpu_kernels(), /*wide_signal_compares=*/false}},
  };
  auto it = kinds.find(interface);
  if (it == kinds.end())
    throw std::out_of_range("conformance: no kernels for device interface \"" + interface +
                            "\"; add them to tests/conformance/devices.cpp");
  return it->second;
}

}  // namespace hcq::conformance
