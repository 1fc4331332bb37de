// The kernel cache (tinygrad's method cache): kernels already built in this process, looked up by structure, so a
// schedule-cache miss does not lower, render and compile again a kernel it has built before (in this schedule: the
// MLP's equal Adam updates and same-shaped layers; or in an earlier one: the same step on a new model, a schedule
// evicted from the schedule cache). Two levels:
// - lowering: a key written from the tensor-level subgraph a kernel computes, before lowering it (what lower_kernel
//   reads: every node it visits, with the buffers it loads as numbers in first-use order and the call's variables
//   likewise), gives the kernel's AST and its buffers, variables and reads by position in the key;
// - code: the AST (hash-consed, so pointer-equal means structurally equal; the cache holds it, so its address is
//   never reused), the device and whether optimisations are on give the compiled kernel.
// Keys are compared in full, never by hash alone: a collision would run the wrong kernel. clear_schedule_cache()
// leaves this cache alone; clear_kernel_cache() empties it (a benchmark's fully cold miss).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "framework/codegen/target.hpp"
#include "framework/ir/node.hpp"
#include "framework/schedule/lower.hpp"

namespace hcq::fw {

struct CompiledKernel;

// lower_kernel(root, out_slot, realized, local), from the cache when an equal kernel was lowered before (its AST, with
// this graph's slots, variables and reads). A lowering that found disagreeing reduces (the scheduler lowers again
// with them realized) is not cached.
LoweredKernel lower_kernel_cached(const Node& root, uint32_t out_slot,
                                  const std::unordered_map<const NodeData*, uint32_t>& realized,
                                  const LocalAxes& local);

// One kernel a schedule needs: its AST, where it runs and the facts it is rendered with.
struct KernelWant {
  Node ast;
  std::string device;
  TargetFacts facts;
};
// The compiled kernel of each want: from the cache when the same AST was built for the device with optimisations
// equally on or off, else rendered (render_searched; an AST wanted twice here is rendered once) and compiled
// (compile_kernels), then kept. The cache neither keeps nor hands out kernels while a render hook is set or
// HCQ_BEAM searches: their kernels are not the plain rendering of the AST, and a search is timed per schedule.
std::vector<std::shared_ptr<const CompiledKernel>> build_kernels(const std::vector<KernelWant>& wants);

// What the cache did in this process (tests, benchmarks).
struct KernelCacheStats {
  uint64_t lowered = 0;        // kernels lowered (misses of the lowering level)
  uint64_t lowering_hits = 0;  // kernels whose lowering came from the cache
  uint64_t rendered = 0;       // kernels rendered by build_kernels
  uint64_t code_hits = 0;      // kernels whose compiled form came from the cache
};
KernelCacheStats kernel_cache_stats();

// Forget every cached kernel (both levels). The in-process compile cache (by source) is kept: a kernel rendered
// again is not compiled again.
void clear_kernel_cache();

}  // namespace hcq::fw
