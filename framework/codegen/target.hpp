// What the code generator needs to know of a device, and where it learns it: the device's own report (DeviceInfo:
// its interface and launch limits), never a table of device names. One renderer serves every target; these facts
// are its only per-target switches (docs/framework.md, "The GPU path").
#pragma once

#include <cstdint>
#include <string>

#include "hcq/device.hpp"

namespace hcq::fw {

// The compiler family a device's kernels go through (include/hcq/kernel_abi.h has one section per family).
enum class Target : uint8_t {
  cpu,     // the CPU device: C11 through clang, one call per workgroup from the device's workers
  amdgpu,  // AMD (KFD, and SIM-AMD): C11 through clang -target amdgcn, then LLVM's AMDGPU backend
  cuda,    // NVIDIA (RM, and SIM-NV): the same source as CUDA C++ through NVRTC
};

struct TargetFacts {
  Target target = Target::cpu;
  std::string device;    // canonical device name, for messages
  std::string arch;      // "x86_64", "gfx1100", "sm_90"
  unsigned workers = 1;  // CPU: threads that run workgroups in parallel
  bool optimize = true;  // false under HCQ_NOOPT=1
  // GPUs: threads per workgroup (x only) and the most workgroups one launch may have in x. Outputs beyond
  // threads_per_group * max_groups elements are covered by a grid-stride loop, so any size fits the limits.
  uint32_t threads_per_group = 1;
  uint32_t max_groups = 1;
};

// Threads per workgroup on a GPU, when the device allows it: a multiple of both wave widths (32 on NVIDIA and
// RDNA, 64 on CDNA), and small enough that any generated kernel's registers fit (an NV program may allow fewer
// threads per group than the architecture when it needs many registers: 65536 registers / 128 threads leaves the
// 255 a thread can address).
inline constexpr uint32_t kGpuThreadsPerGroup = 128;

// The facts of a device from its report; `workers` is the CPU device's worker count. Throws InvalidArgument naming
// the device and its interface when the framework has no code generator for it.
TargetFacts target_facts(const DeviceInfo& info, unsigned workers, bool optimize);

const char* target_name(Target t);

}  // namespace hcq::fw
