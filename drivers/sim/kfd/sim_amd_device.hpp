// SIM-AMD:<target>: the real AMD backend (drivers/amd/kfd) over a SimOs whose /dev/kfd is a SimKfd with one GPU.
#pragma once

#include <memory>
#include <string>

#include "hcq/device.hpp"
#include "sim/kfd/queue_runner.hpp"

namespace hcq::sim {

// `name` is the canonical device name ("SIM-AMD:gfx1100"); `target` a simulated gfx target (SimGpuSpec::of).
// `runner_factory` executes queues (the engine); without one, queues only record their doorbells.
std::unique_ptr<Device> open_sim_amd_device(const std::string& name, const std::string& target,
                                            QueueRunnerFactory runner_factory = {});

}  // namespace hcq::sim
