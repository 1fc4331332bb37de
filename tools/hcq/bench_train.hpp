// The `train` entry of `hcq bench` (issue 16), per device: what a training step costs.
//   mlp_step_ms   the MLP 784-128-10 (hcq train's `mlp`) one jitted Adam step at batch 128 on a fixed synthetic
//                 batch: the median host time of a replay, the loss read back (so the step has finished)
//   schedule_us   scheduling one training step of the MLP 784-256-256-256-10 (forward, cross entropy, backward,
//                 Adam: everything Optimizer::step realizes): a miss (schedule cache cleared, kernels already
//                 compiled and in the kernel cache, framework/schedule/kernel_cache.hpp), a cold miss (the kernel
//                 cache cleared too: every kernel lowered and rendered; only the compile cache by source warm) and
//                 a hit (a second model of the same shapes, its graph on other buffers, built just before it is
//                 scheduled, as an eager loop builds its step)
#pragma once

#include <limits>

#include "hcq/device.hpp"

namespace hcq::tool {

struct TrainBenchResult {
  double mlp_step_ms = std::numeric_limits<double>::quiet_NaN();
  double schedule_miss_us = std::numeric_limits<double>::quiet_NaN();
  double schedule_miss_cold_us = std::numeric_limits<double>::quiet_NaN();
  double schedule_hit_us = std::numeric_limits<double>::quiet_NaN();
};

// steps: timed jitted steps; schedule_reps: miss/hit pairs. Throws on a failed measurement.
TrainBenchResult measure_train(Device& dev, int steps, int schedule_reps);

// `hcq bench --step-kernels`: the MLP step's kernels, each run alone, waited for and timed over `steps` eager steps
// (the kernels the jitted step replays; fw::KernelTimer), as a table of medians per kernel (name, opts, workgroups,
// microseconds, GFLOP/s, GB/s), then the sum and the jitted step's median.
void print_step_kernels(Device& dev, int steps);

}  // namespace hcq::tool
