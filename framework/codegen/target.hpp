// What the code generator needs to know of a device, and where it learns it: the device's own report (DeviceInfo:
// its interface and launch limits), never a table of device names. One renderer serves every target; these facts
// are its only per-target switches (docs/framework.md, "The GPU path").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hcq/device.hpp"

namespace hcq::fw {

// The compiler family a device's kernels go through (include/hcq/kernel_abi.h has one section per family).
enum class Target : uint8_t {
  cpu,     // the CPU device: C11 through clang, one call per workgroup from the device's workers
  amdgpu,  // AMD (KFD, and SIM-AMD): C11 through clang -target amdgcn, then LLVM's AMDGPU backend
  cuda,    // NVIDIA (RM, and SIM-NV): the same source as CUDA C++ through NVRTC
};

// When the scheduler splits a large reduce into two kernels (schedule/split_reduce.hpp): each output reduces at
// least min_reduce elements, there are at most max_outputs outputs, and the partials number at most max_parts.
struct SplitLimits {
  int64_t min_reduce = 0;
  int64_t max_outputs = 0;
  int64_t max_parts = 0;
};

struct TargetFacts {
  Target target = Target::cpu;
  std::string device;    // canonical device name, for messages
  std::string arch;      // "x86_64", "gfx1100", "sm_90"
  unsigned workers = 1;  // CPU: threads that run workgroups in parallel
  bool optimize = true;  // false under HCQ_NOOPT=1
  // The device's own figures (DeviceInfo): lockstep width, shared memory per workgroup, workgroups at once.
  uint32_t wave_size = 1;
  uint32_t shared_memory_bytes = 0;
  uint32_t compute_units = 1;
  // GPUs: threads per workgroup (x only) and the most workgroups one launch may have in x. Outputs beyond
  // threads_per_group * max_groups elements are covered by a grid-stride loop, so any size fits the limits.
  uint32_t threads_per_group = 1;
  uint32_t max_groups = 1;
  // GPUs: a reduce kernel with at most group_max_outputs outputs, each reducing at least group_min_reduce elements,
  // groups a workgroup's threads over each output (render_c.cpp, group_threads).
  int64_t group_max_outputs = 0;
  int64_t group_min_reduce = 0;
  // When a reduce becomes two kernels: on GPUs, to fill the compute units; on the CPU device, to share a large
  // reduce with too few outputs among the workers. nullopt without optimisation (and on a CPU device of one worker).
  std::optional<SplitLimits> split;
  // GPUs: the widest vector load or store an elementwise kernel's thread makes, in bytes (render_c.cpp); 0: none.
  uint32_t vector_bytes = 0;
  // GPUs: the matrix instruction products of half types may use (DeviceInfo::matrix_unit; render_c.cpp's GPU tiles).
  MatrixUnit matrix_unit = MatrixUnit::none;
  // CPU: the instruction-set features kernels may use and the bf16 matmul micro-kernel they give (DeviceInfo's
  // cpu_isa; include/hcq/kernel_abi.h has one micro-kernel per path). Empty (scalar) on GPUs.
  CpuIsa cpu_isa;
};

// Waves per GPU workgroup: four, so that the workgroup is a multiple of the wave width (128 threads with 32-wide
// waves, 256 with 64-wide ones) and, at 128 or 256 threads, few enough that any generated kernel's registers fit
// (an NV program may allow fewer threads per group than the architecture when it needs many registers: 65536
// registers / 128 threads leaves the 255 a thread can address; NV's warps are 32 wide, so 128 there).
inline constexpr uint32_t kGpuWavesPerGroup = 4;

// The facts of a device from its report; `workers` is the CPU device's worker count. Throws InvalidArgument naming
// the device and its interface when the framework has no code generator for it.
TargetFacts target_facts(const DeviceInfo& info, unsigned workers, bool optimize);

const char* target_name(Target t);

}  // namespace hcq::fw
