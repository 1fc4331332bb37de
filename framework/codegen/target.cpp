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
    if (info.cpu_isa) f.cpu_isa = *info.cpu_isa;
    // Splits: the workers share a kernel's outermost output loop, so a reduce with fewer outputs than workers (a
    // full sum) runs on one of them. Such a reduce of at least a million elements (where handing half of a kernel
    // to another worker starts to pay, render_c.cpp's kSplitWork) becomes partial reduces over 8 or more chunks,
    // which the workers share, and their reduce.
    if (optimize && f.workers > 1) f.split = SplitLimits{int64_t{1} << 20, f.workers - 1, std::max(8u, f.workers)};
    return f;
  }
  if (info.interface == "kfd" || info.interface == "sim-kfd") f.target = Target::amdgpu;
  else if (info.interface == "rm" || info.interface == "sim-rm" || info.interface == "cuda") f.target = Target::cuda;
  else
    throw InvalidArgument(cat("framework: no kernel code generator for ", info.name, " (", info.interface,
                              ") yet: the framework runs on the CPU, AMD, NV and CUDA devices; move tensors to one of "
                              "them with to()"));
  // Every choice below follows from the device's report; docs/framework.md "The GPU path" gives the figures for
  // each simulated GPU.
  const LaunchLimits& l = info.launch_limits;
  f.wave_size = std::max(1u, info.wave_size);
  f.shared_memory_bytes = info.shared_memory_bytes;
  f.compute_units = std::max(1u, info.compute_units);
  f.threads_per_group =
      std::max(1u, std::min({kGpuWavesPerGroup * f.wave_size, l.max_threads_per_group, l.max_local[0]}));
  f.max_groups = std::max(1u, l.max_global[0]);
  const int64_t waves = f.wave_size, units = f.compute_units, threads = f.threads_per_group;
  // Grouped reduces: one thread per output leaves compute units idle while the outputs are fewer than one wave per
  // unit; then each output gets a workgroup instead, when its reduce gives each of the group's threads at least one
  // element.
  f.group_max_outputs = units * waves;
  f.group_min_reduce = threads;
  // Splits: a grouped reduce with fewer outputs than compute units leaves units idle. Its reduce is cut into at most
  // one chunk per unit (each a workgroup of the first kernel), when each chunk still gives every thread of its
  // workgroup an element: at least units * threads elements.
  if (optimize) f.split = SplitLimits{units * threads, units - 1, std::max<int64_t>(8, units)};
  // 16-byte loads and stores: one 128-bit access on AMDGPU (flat_load_b128 on gfx1100) and NVIDIA.
  f.vector_bytes = 16;
  f.matrix_unit = info.matrix_unit;
  return f;
}

}  // namespace hcq::fw
