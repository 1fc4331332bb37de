// The simulated NVIDIA GPU's entry for the registry (drivers/backend_entry.hpp).
#include "backend_entry.hpp"
#include "sim/nv/sim_nv_device.hpp"
#include "sim/nv/sim_nv_gpus.hpp"

namespace {

std::unique_ptr<hcq::Device> open_sim_nv(const std::string& canonical, const std::string& target, unsigned gpus) {
  return hcq::sim::open_sim_nv_gpu(canonical, target, hcq::sim::nv_engine::Scheduling::threaded, gpus);
}

}  // namespace

extern "C" const hcq::backend_entry::Simulator hcq_backend_sim_nv = {&open_sim_nv, &hcq::sim::open_sim_nv_peer,
                                                                     &hcq::sim::SimNvGpuSpec::names};
