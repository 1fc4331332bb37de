// The `graph` section of `hcq bench`: host cost of replaying a graph of N kernel launches with changed input
// addresses, as fixed + N * per_kernel: a least-squares line through the median replay time at several graph
// sizes, beside eager launches of the same calls.
#pragma once

#include <cstdint>
#include <vector>

namespace hcq {
class Device;
class Program;
}  // namespace hcq

namespace hcq::tool {

struct GraphSizeResult {
  uint32_t kernels = 0;
  double median_us = 0;  // median host time of one replay of this graph
};

struct GraphBenchResult {
  double per_kernel_ns;        // slope of the least-squares line through the medians, per kernel
  double fixed_us;             // its intercept: what a replay costs beside its kernels
  double eager_per_kernel_ns;  // eager launches (Program::operator()) of the largest graph's calls, per call
  std::vector<GraphSizeResult> sizes = {};  // the medians the line goes through
};

struct GraphBenchConfig {
  std::vector<uint32_t> sizes{16, 64, 256};  // graph sizes (kernels); at least two different ones
  int warmup = 20;                           // untimed replays per size before the first timed one
  int runs = 400;                            // timed replays per size
  int rounds = 20;  // the runs are split into this many rounds; each round replays every size in turn
};

// `args_program` takes one buffer and one value (BenchKernels::kArgsName). Throws on any device error.
GraphBenchResult measure_graph_replay(Device& dev, const Program& args_program, const GraphBenchConfig& cfg);

}  // namespace hcq::tool
