// SIM-NV:<gpu>: the real NVIDIA backend (drivers/nv/rm, NvDevice) over a SimOs whose /dev/nvidia* and
// /dev/nvidia-uvm are a SimNv with one GPU.
#pragma once

#include <memory>
#include <string>

#include "hcq/device.hpp"
#include "sim/nv/channel_runner.hpp"
#include "sim/nv/sim_nv.hpp"
#include "sim/nv_engine/engine.hpp"

namespace hcq::sim {

// `name` is the canonical device name ("SIM-NV:hopper"); `gpu` a simulated GPU (SimNvGpuSpec::of). `runner_factory`
// executes channels; without one, channels only count their doorbells. `driver_version` is what the simulated
// driver reports (a version of another branch makes the backend refuse it, as it would the real driver).
std::unique_ptr<Device> open_sim_nv_device(
    const std::string& name, const std::string& gpu, ChannelRunnerFactory runner_factory = {},
    const std::string& driver_version = std::string(SimNv::kDefaultDriverVersion));

// The whole simulated GPU (what the registry opens for SIM-NV:<gpu>): channels run on the simulated GPU's executor
// (drivers/sim/nv_engine) and QMD launches run as host twins, built and mapped when a program is loaded and unmapped
// when it is destroyed. A launch the twins cannot run faults its channel. The machine has `gpus` GPUs of that kind;
// the device is GPU 0, open_sim_nv_peer opens the others. `gpu` ending in "-gvisor" ("ampere-gvisor") is that GPU
// behind gVisor's NVIDIA proxy with its default capabilities (SimNv::refuse_as_nvproxy). Fault and hang reports carry what the simulated GPU
// knows of a channel (SimNv::describe_channel: the faulting address and the reason).
std::unique_ptr<Device> open_sim_nv_gpu(const std::string& name, const std::string& gpu,
                                        nv_engine::Scheduling scheduling = nv_engine::Scheduling::threaded,
                                        unsigned gpus = 1);

// GPU `index` of the simulated machine `first` (a device open_sim_nv_gpu returned) belongs to, as its own device
// over the same driver context: it shares the shader array and maps the other GPUs' memory as a peer
// (Device::map_memory). Throws InvalidArgument when `first` is not a simulated NVIDIA GPU or has no such GPU.
std::unique_ptr<Device> open_sim_nv_peer(const std::string& name, Device& first, unsigned index);

}  // namespace hcq::sim
