#include "sim/kfd/sim_amd_device.hpp"

#include "amd/kfd/amd_device.hpp"
#include "sim/kfd/sim_kfd.hpp"
#include "sim/sim_os.hpp"

namespace hcq::sim {

std::unique_ptr<Device> open_sim_amd_device(const std::string& name, const std::string& target,
                                            QueueRunnerFactory runner_factory) {
  auto kfd = std::make_shared<SimKfd>(std::vector<std::string>{target}, std::move(runner_factory));
  auto os = std::make_shared<SimOs>(std::vector<std::shared_ptr<SimDriver>>{kfd});
  return amd::open_kfd_device_on(name, std::move(os), 0, "sim-kfd");
}

}  // namespace hcq::sim
