// Graph replay host cost. Kernel i of an N-kernel graph reads input buffer variable i; every replay moves all N
// inputs to the other of two buffers, so every kernel's argument is re-patched. Only Graph::replay is timed: the
// wait for the previous replay happens before the clock starts, so device time is not counted.
#include "bench_graph.hpp"

#include <array>
#include <chrono>
#include <vector>

#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/graph.hpp"
#include "hcq/program.hpp"
#include "stats.hpp"

namespace hcq::tool {
namespace {

using Clock = std::chrono::steady_clock;

double median_replay_us(Device& dev, const Program& program, uint32_t n, std::array<uint64_t, 2> buffers,
                        const GraphBenchConfig& cfg) {
  std::vector<GraphCall> calls;
  for (uint32_t i = 0; i < n; ++i) {
    calls.push_back(KernelCall{&program,
                               {{Sym(Var{static_cast<uint16_t>(i)}), 64, Access::read_write}},
                               {Sym(static_cast<uint32_t>(i))},
                               {1, 1, 1},
                               {1, 1, 1}});
  }
  Graph graph(calls);
  std::vector<uint64_t> vars(n);
  std::vector<double> samples;
  for (int r = 0; r < cfg.warmup + cfg.runs; ++r) {
    for (uint32_t i = 0; i < n; ++i) vars[i] = buffers[r & 1] + 64 * i;
    graph.wait();
    const auto t0 = Clock::now();
    graph.replay(vars);
    const auto t1 = Clock::now();
    if (r >= cfg.warmup) samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  graph.wait();
  dev.synchronize();
  return median(samples);
}

double eager_per_kernel_ns(Device& dev, const Program& program, uint32_t n, std::array<uint64_t, 2> buffers,
                           const GraphBenchConfig& cfg) {
  std::vector<double> samples;
  const int runs = cfg.runs / 4 + 1;  // each run is n launches
  for (int r = 0; r < cfg.warmup + runs; ++r) {
    dev.synchronize();
    const auto t0 = Clock::now();
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t addr = buffers[r & 1] + 64 * i;
      const uint32_t value = i;
      program({&addr, 1}, {&value, 1}, {1, 1, 1}, {1, 1, 1});
    }
    const auto t1 = Clock::now();
    if (r >= cfg.warmup) samples.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
  }
  dev.synchronize();
  return median(samples);
}

}  // namespace

GraphBenchResult measure_graph_replay(Device& dev, const Program& args_program, const GraphBenchConfig& cfg) {
  Buffer a(dev, 64ull * cfg.large_kernels), b(dev, 64ull * cfg.large_kernels);
  const std::array<uint64_t, 2> buffers{a.va(), b.va()};
  const double small = median_replay_us(dev, args_program, cfg.small_kernels, buffers, cfg);
  const double large = median_replay_us(dev, args_program, cfg.large_kernels, buffers, cfg);
  GraphBenchResult r{};
  r.per_kernel_ns = (large - small) * 1e3 / (cfg.large_kernels - cfg.small_kernels);
  r.fixed_us = small - r.per_kernel_ns * cfg.small_kernels / 1e3;
  r.eager_per_kernel_ns = eager_per_kernel_ns(dev, args_program, cfg.large_kernels, buffers, cfg);
  return r;
}

}  // namespace hcq::tool
