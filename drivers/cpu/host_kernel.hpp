// A host kernel: the function the CPU compiler builds from a kernel source (the host section of
// include/hcq/kernel_abi.h), with its argument counts, and how it runs over a grid: one call per workgroup with its
// group id set, x fastest, shaped for CpuThreadPool::parallel_for.
//
// Published for other backends, by the path "cpu/host_kernel.hpp" from the drivers/ root: the simulators' host twins
// run GPU kernels as CPU builds of the same source. What they may use from the CPU backend is this header,
// cpu/elf_loader.hpp (loading host code), cpu/cpu_thread_pool.hpp (the pool a grid runs on) and
// cpu/cpu_compiler.hpp; the rest of drivers/cpu/ is private to the CPU device. These stay here rather than move to
// drivers/common/ because a twin must run a kernel exactly as the CPU device does (the same compiler flags, the
// loader's symbol whitelist that matches the ABI's host section, the same workgroup order): the CPU backend is their
// one owner, and the twins are its clients.
#pragma once

#include <cstdint>

#include "hcq/kernel_abi.h"

namespace hcq::cpu {

using KernelFn = void (*)(const hcq_dispatch*);

struct KernelEntry {
  KernelFn fn = nullptr;
  uint32_t nbufs = 0;
  uint32_t nvals = 0;
};

struct GridJob {
  KernelFn fn;
  hcq_dispatch base;  // everything but group_id, which is filled per workgroup
};

// Runs workgroups [begin, end) of the GridJob at `ctx`.
inline void run_workgroups(void* ctx, uint64_t begin, uint64_t end) {
  const auto& job = *static_cast<const GridJob*>(ctx);
  hcq_dispatch d = job.base;
  const uint64_t gx = d.num_groups[0], gxy = gx * d.num_groups[1];
  for (uint64_t i = begin; i < end; ++i) {
    d.group_id[0] = static_cast<uint32_t>(i % gx);
    d.group_id[1] = static_cast<uint32_t>((i % gxy) / gx);
    d.group_id[2] = static_cast<uint32_t>(i / gxy);
    job.fn(&d);
  }
}

}  // namespace hcq::cpu
