// The simulated AMD GPU's entry for the registry (drivers/backend_entry.hpp).
#include "backend_entry.hpp"
#include "sim/kfd/sim_amd_device.hpp"
#include "sim/kfd/sim_kfd.hpp"

namespace {

std::unique_ptr<hcq::Device> open_sim_amd(const std::string& canonical, const std::string& target, unsigned gpus) {
  return hcq::sim::open_sim_amd_gpu(canonical, target, hcq::sim::amd_engine::Scheduling::threaded, gpus);
}

}  // namespace

extern "C" const hcq::backend_entry::Simulator hcq_backend_sim_amd = {&open_sim_amd, &hcq::sim::open_sim_amd_peer,
                                                                      &hcq::sim::SimGpuSpec::names};
