// The simulated GPUs the tests of tests/sim_gpus run on, each opened as a machine of its own (a fault leaves a device
// faulted, so tests open fresh ones rather than the registry's shared devices), and the kernel they poke memory with.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>

#include "hcq/device.hpp"
#include "sim/kfd/sim_amd_device.hpp"
#include "sim/nv/sim_nv_device.hpp"

namespace hcq::test {

struct SimGpu {
  std::string vendor;  // "SIM-AMD" or "SIM-NV"
  std::string target;  // gfx1100, hopper, ...
  std::string name() const { return vendor + ":" + target; }
  bool amd() const { return vendor == "SIM-AMD"; }
  // gfx942's compute queues are AQL (PM4 elsewhere).
  bool aql() const { return target == "gfx942"; }
};
inline void PrintTo(const SimGpu& g, std::ostream* os) { *os << g.name(); }

// A machine of `gpus` simulated GPUs; the device is its first.
inline std::unique_ptr<Device> open_machine(const SimGpu& g, unsigned gpus = 1) {
  if (g.amd()) return sim::open_sim_amd_gpu(g.name(), g.target, sim::amd_engine::Scheduling::threaded, gpus);
  return sim::open_sim_nv_gpu(g.name(), g.target, sim::nv_engine::Scheduling::threaded, gpus);
}
// The second GPU of the machine `first` belongs to.
inline std::unique_ptr<Device> open_peer(const SimGpu& g, Device& first) {
  if (g.amd()) return sim::open_sim_amd_peer(g.name() + ":1", first, 1);
  return sim::open_sim_nv_peer(g.name() + ":1", first, 1);
}

// Every simulated GPU kind, with gtest names that the scripts' filters recognise (SIM_AMD_*, SIM_NV_*).
inline auto all_sim_gpus() {
  return ::testing::Values(SimGpu{"SIM-AMD", "gfx942"}, SimGpu{"SIM-AMD", "gfx1100"}, SimGpu{"SIM-AMD", "gfx1201"},
                           SimGpu{"SIM-NV", "ampere"}, SimGpu{"SIM-NV", "hopper"}, SimGpu{"SIM-NV", "blackwell"});
}
inline std::string sim_gpu_test_name(const ::testing::TestParamInfo<SimGpu>& i) {
  return (i.param.amd() ? "SIM_AMD_" : "SIM_NV_") + i.param.target;
}

// Thread 0 stores `value` at buf[index]: any distance from the buffer, in 4-byte steps up to 16 GiB.
inline constexpr const char* kPokeSource = R"(
HCQ_KERNEL(poke_u32, 1, 2) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    if (HCQ_GLOBAL_ID(0, x) == 0) HCQ_BUF(uint32_t, 0)[HCQ_VAL(0)] = HCQ_VAL(1);
  }
}
)";

}  // namespace hcq::test
