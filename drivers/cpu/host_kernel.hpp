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

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "hcq/kernel_abi.h"
#include "workgroup_threads.hpp"

namespace hcq::cpu {

using KernelFn = void (*)(const hcq_dispatch*);

struct KernelEntry {
  KernelFn fn = nullptr;
  uint32_t nbufs = 0;
  uint32_t nvals = 0;
};

// A launch: the kernel, its dispatch (with the workgroup-threads runner attached for HCQ_THREAD_KERNEL, seeded with
// `thread_seed`) and, after it ran, why it failed (a thread kernel that broke the barrier rules), if it did.
class GridJob {
 public:
  GridJob(KernelFn fn, const hcq_dispatch& base, uint64_t thread_seed) : fn_(fn), base_(base) {
    attach_workgroup_threads(base_, thread_seed);
  }

  // Runs workgroups [begin, end) of the GridJob at `ctx`; shaped for CpuThreadPool::parallel_for. After a workgroup
  // fails, the remaining ones are skipped.
  static void run_workgroups(void* ctx, uint64_t begin, uint64_t end) {
    auto& job = *static_cast<GridJob*>(ctx);
    hcq_dispatch d = job.base_;
    const uint64_t gx = d.num_groups[0], gxy = gx * d.num_groups[1];
    for (uint64_t i = begin; i < end; ++i) {
      if (job.failed_.load(std::memory_order_relaxed)) return;
      d.group_id[0] = static_cast<uint32_t>(i % gx);
      d.group_id[1] = static_cast<uint32_t>((i % gxy) / gx);
      d.group_id[2] = static_cast<uint32_t>(i / gxy);
      job.fn_(&d);
      if (std::string why = take_workgroup_error(); !why.empty()) {
        std::lock_guard lock(job.mu_);
        if (job.error_.empty()) job.error_ = std::move(why);
        job.failed_.store(true, std::memory_order_relaxed);
        return;
      }
    }
  }

  // "" when every workgroup ran; call after the run.
  std::string error() const {
    std::lock_guard lock(mu_);
    return error_;
  }

 private:
  KernelFn fn_;
  hcq_dispatch base_;  // everything but group_id, which is filled per workgroup
  std::atomic<bool> failed_{false};
  mutable std::mutex mu_;
  std::string error_;
};

}  // namespace hcq::cpu
