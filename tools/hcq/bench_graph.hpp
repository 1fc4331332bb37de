// The `graph` section of `hcq bench`: host cost of replaying a graph of N kernel launches with changed input
// addresses, fitted as fixed + N * per_kernel over two graph sizes, beside eager launches of the same calls.
#pragma once

#include <cstdint>

namespace hcq {
class Device;
class Program;
}  // namespace hcq

namespace hcq::tool {

struct GraphBenchResult {
  double per_kernel_ns;        // slope of the median replay time between the two sizes
  double fixed_us;             // the median replay time of the small graph, less its kernels' share
  double eager_per_kernel_ns;  // eager launches (Program::operator()) of the large graph's calls, per call
};

struct GraphBenchConfig {
  uint32_t small_kernels = 16;
  uint32_t large_kernels = 256;
  int warmup = 20;
  int runs = 400;
};

// `args_program` takes one buffer and one value (BenchKernels::kArgsName). Throws on any device error.
GraphBenchResult measure_graph_replay(Device& dev, const Program& args_program, const GraphBenchConfig& cfg);

}  // namespace hcq::tool
