// SIM-AMD:<target>: the real AMD backend (drivers/amd/kfd) over a SimOs whose /dev/kfd is a SimKfd with one GPU.
#pragma once

#include <memory>
#include <string>

#include "hcq/device.hpp"
#include "sim/amd_engine/engine.hpp"
#include "sim/kfd/queue_runner.hpp"

namespace hcq::sim {

// `name` is the canonical device name ("SIM-AMD:gfx1100"); `target` a simulated gfx target (SimGpuSpec::of).
// `runner_factory` executes queues (the engine); without one, queues only record their doorbells. The simulated
// machine has `gpus` GPUs of that target; the device is the first.
std::unique_ptr<Device> open_sim_amd_device(const std::string& name, const std::string& target,
                                            QueueRunnerFactory runner_factory = {}, unsigned gpus = 1);

// The whole simulated GPU (what the registry opens for SIM-AMD:<target>): queues run on the packet engines
// (drivers/sim/amd_engine), and kernels run as their host twins (drivers/sim/twins), built and mapped when a
// program is loaded and unmapped when it is destroyed. A dispatch the twins cannot run faults its queue.
// The machine has `gpus` GPUs of the target in one KFD process; the device is GPU 0, open_sim_amd_peer opens
// the others.
std::unique_ptr<Device> open_sim_amd_gpu(const std::string& name, const std::string& target,
                                         amd_engine::Scheduling scheduling = amd_engine::Scheduling::threaded,
                                         unsigned gpus = 1);

// GPU `index` of the simulated machine `first` (a device open_sim_amd_gpu made) belongs to: the same KFD
// process, engines and host twins, so memory of one maps into the other at the same VA (MAP_MEMORY_TO_GPU with
// the peer's gpu_id). Throws UnsupportedDriver when the machine has no GPU `index`, InvalidArgument when `first`
// is not a simulated AMD device.
std::unique_ptr<Device> open_sim_amd_peer(const std::string& name, Device& first, unsigned index);

}  // namespace hcq::sim
