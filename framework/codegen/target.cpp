#include "framework/codegen/target.hpp"

#include <algorithm>

#include "hcq/error.hpp"

namespace hcq::fw {

const char* target_name(Target t) {
  switch (t) {
    case Target::cpu: return "CPU C";
    case Target::amdgpu: return "AMDGPU";
    case Target::cuda: return "CUDA";
  }
  return "?";
}

TargetFacts target_facts(const DeviceInfo& info, unsigned workers, bool optimize) {
  TargetFacts f;
  f.device = info.name;
  f.arch = info.arch;
  f.optimize = optimize;
  // The interface says which driver family runs the device; the simulated GPUs are the real drivers over a
  // simulated kernel, so they take the same code as the hardware.
  if (info.interface == "cpu") {
    f.target = Target::cpu;
    f.workers = std::max(1u, workers);
    return f;
  }
  if (info.interface == "kfd" || info.interface == "sim-kfd") f.target = Target::amdgpu;
  else if (info.interface == "rm" || info.interface == "sim-rm") f.target = Target::cuda;
  else
    throw InvalidArgument(cat("framework: no kernel code generator for ", info.name, " (", info.interface,
                              ") yet: the framework runs on the CPU, AMD and NV devices; move tensors to one of "
                              "them with to()"));
  const LaunchLimits& l = info.launch_limits;
  f.threads_per_group = std::max(1u, std::min({kGpuThreadsPerGroup, l.max_threads_per_group, l.max_local[0]}));
  f.max_groups = std::max(1u, l.max_global[0]);
  return f;
}

}  // namespace hcq::fw
