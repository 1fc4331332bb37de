// Graph replay host cost. Kernel i of an N-kernel graph reads input buffer variable i; every replay moves all N
// inputs to the other of two buffers, so every kernel's argument is re-patched. Only Graph::replay is timed: the
// wait for the previous replay happens before the clock starts, so device time is not counted.
//
// Robustness on a shared machine: the graph sizes are replayed in interleaved rounds (a slow spell of the machine
// lands on every size alike rather than on whichever ran then), each size's figure is the median of all its
// replays, and fixed_us / per_kernel_ns come from a least-squares line through those medians rather than from two
// points, so one noisy size moves the line less.
#include "bench_graph.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <vector>

#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/graph.hpp"
#include "hcq/program.hpp"
#include "stats.hpp"

namespace hcq::tool {
namespace {

using Clock = std::chrono::steady_clock;

// One graph size under measurement.
class ReplayCase {
 public:
  ReplayCase(const Program& program, uint32_t n, std::array<uint64_t, 2> buffers)
      : n_(n), buffers_(buffers), graph_(calls(program, n)), vars_(n) {}

  // `count` replays, each timed alone (after the previous one finished); `keep` says whether they are samples.
  void replay(int count, bool keep) {
    for (int i = 0; i < count; ++i, ++r_) {
      for (uint32_t k = 0; k < n_; ++k) vars_[k] = buffers_[r_ & 1] + 64 * k;
      graph_.wait();
      const auto t0 = Clock::now();
      graph_.replay(vars_);
      const auto t1 = Clock::now();
      if (keep) samples_.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  void wait() { graph_.wait(); }
  uint32_t kernels() const { return n_; }
  double median_us() const { return median(samples_); }

 private:
  static std::vector<GraphCall> calls(const Program& program, uint32_t n) {
    std::vector<GraphCall> c;
    for (uint32_t i = 0; i < n; ++i)
      c.push_back(KernelCall{&program,
                             {{Sym(Var{static_cast<uint16_t>(i)}), 64, Access::read_write}},
                             {Sym(static_cast<uint32_t>(i))},
                             {1, 1, 1},
                             {1, 1, 1}});
    return c;
  }

  uint32_t n_;
  std::array<uint64_t, 2> buffers_;
  Graph graph_;
  std::vector<uint64_t> vars_;
  std::vector<double> samples_;
  uint64_t r_ = 0;
};

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
  if (cfg.sizes.size() < 2 || std::ranges::count(cfg.sizes, cfg.sizes.front()) == std::ssize(cfg.sizes))
    throw InvalidArgument("graph bench: at least two different graph sizes are needed to fit a line");
  if (std::ranges::find(cfg.sizes, 0u) != cfg.sizes.end() || cfg.runs < 1 || cfg.rounds < 1 || cfg.warmup < 0)
    throw InvalidArgument("graph bench: sizes must be >= 1, runs and rounds >= 1, warmup >= 0");
  const uint32_t largest = std::ranges::max(cfg.sizes);
  Buffer a(dev, 64ull * largest), b(dev, 64ull * largest);
  const std::array<uint64_t, 2> buffers{a.va(), b.va()};

  std::vector<std::unique_ptr<ReplayCase>> cases;
  for (uint32_t n : cfg.sizes) cases.push_back(std::make_unique<ReplayCase>(args_program, n, buffers));
  for (auto& c : cases) c->replay(cfg.warmup, false);
  const int rounds = std::min(cfg.rounds, cfg.runs);
  for (int round = 0; round < rounds; ++round) {
    const int count = cfg.runs / rounds + (round < cfg.runs % rounds ? 1 : 0);
    for (auto& c : cases) c->replay(count, true);
  }
  for (auto& c : cases) c->wait();

  // Ordinary least squares of median_us over kernels.
  GraphBenchResult r{};
  double mean_x = 0, mean_y = 0;
  for (const auto& c : cases) {
    r.sizes.push_back({c->kernels(), c->median_us()});
    mean_x += c->kernels();
    mean_y += r.sizes.back().median_us;
  }
  mean_x /= static_cast<double>(cases.size());
  mean_y /= static_cast<double>(cases.size());
  double sxy = 0, sxx = 0;
  for (const GraphSizeResult& s : r.sizes) {
    sxy += (s.kernels - mean_x) * (s.median_us - mean_y);
    sxx += (s.kernels - mean_x) * (s.kernels - mean_x);
  }
  const double slope_us = sxy / sxx;
  r.per_kernel_ns = slope_us * 1e3;
  r.fixed_us = mean_y - slope_us * mean_x;
  cases.clear();  // their graphs' queues go before the eager launches fill the ring
  r.eager_per_kernel_ns = eager_per_kernel_ns(dev, args_program, largest, buffers, cfg);
  dev.synchronize();
  return r;
}

}  // namespace hcq::tool
