// Running a kernel over a grid: one call per workgroup with its group id set, x fastest. Shared by the CPU device's
// EXEC and the simulators' host twins, and shaped for CpuThreadPool::parallel_for.
#pragma once

#include <cstdint>

#include "cpu_mappings.hpp"  // KernelFn, hcq_dispatch

namespace hcq::cpu {

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
