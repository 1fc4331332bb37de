// Scheduling one whole training step (issue 16's `train.schedule_us`, here at one size for profiling):
//   BM_TrainScheduleMiss  fw::schedule_only of one step of the MLP 784-256-256-256-10 at batch 128 (forward, cross
//                         entropy, backward, Adam: what Optimizer::step realizes) after clearing the schedule cache;
//                         the kernels are in the in-process compile cache by then (clang is not timed), and in the
//                         kernel cache (framework/schedule/kernel_cache.hpp), which clear_schedule_cache keeps
//   BM_TrainScheduleMissCold  the same with the kernel cache cleared too: every kernel lowered and rendered (an
//                         AST met twice in the step is still built once); only the compile cache (by source) is warm
//   BM_TrainScheduleHit   the same on a second model of the same shapes: an equal graph on other buffers, built
//                         just before
//   BM_TrainScheduleHitAfterMiss  the same, the graph built before a miss on another (hcq bench's order)
//   BM_TrainScheduleHitSameGraph  hits on one graph over and over (everything warm: the floor of a hit)
// Manual time for the first two: building the model and its graph is not timed, only fw::schedule_only.
// `--benchmark_filter=TrainSchedule` runs them; `perf record build/benchmarks/hcq-benchmarks
// --benchmark_filter=TrainScheduleHit` profiles a hit.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "framework/engine/callify.hpp"
#include "framework/engine/realize.hpp"
#include "framework/ir/node.hpp"
#include "framework/schedule/kernel_cache.hpp"
#include "hcq/device.hpp"
#include "hcq/nn.hpp"
#include "hcq/optim.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"
#include "open_or_skip.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Mlp {
  std::vector<hcq::nn::Linear> layers;
  explicit Mlp(const std::string& device) {
    const std::vector<int64_t> widths{784, 256, 256, 256, 10};
    for (size_t k = 0; k + 1 < widths.size(); ++k) layers.emplace_back(widths[k], widths[k + 1], true, device);
  }
  hcq::Tensor forward(hcq::Tensor x) const {
    for (size_t k = 0; k < layers.size(); ++k) {
      x = layers[k](x);
      if (k + 1 < layers.size()) x = x.relu();
    }
    return x;
  }
  std::vector<hcq::Tensor> parameters() const {
    std::vector<hcq::Tensor> p;
    for (const hcq::nn::Linear& l : layers)
      for (const hcq::Tensor& t : l.parameters()) p.push_back(t);
    return p;
  }
};

// A fresh model, its Adam and the roots of one training step on the batch (x, y), unrealized.
struct Step {
  Mlp net;
  hcq::optim::Adam opt;
  std::vector<hcq::Tensor> roots;
  std::vector<hcq::fw::Node> nodes;
  Step(const std::string& device, const hcq::Tensor& x, const hcq::Tensor& y) : net(device), opt(net.parameters()) {
    hcq::Tensor loss = hcq::nn::cross_entropy(net.forward(x), y);
    loss.backward();
    roots = opt.schedule_step({loss});
    for (const hcq::Tensor& t : roots) nodes.push_back(t.node());
  }
};

// A fixed batch of 128: pixels in [0, 1), labels 0..9 (bench_train.cpp's).
struct Batch {
  hcq::Tensor x, y;
  explicit Batch(const std::string& device) {
    std::vector<float> xs(128 * 784);
    std::vector<int32_t> ys(128);
    for (size_t k = 0; k < xs.size(); ++k) xs[k] = static_cast<float>((k * 2654435761u) % 1000) / 1000.0f;
    for (size_t k = 0; k < ys.size(); ++k) ys[k] = static_cast<int32_t>(k % 10);
    x = hcq::Tensor(xs, {128, 784}, device);
    y = hcq::Tensor(ys, {128}, device);
  }
};

enum class Mode {
  miss,            // the schedule cache cleared first
  miss_cold,       // the schedule cache and the kernel cache cleared first
  hit,             // the graph built just before (what an eager loop does: build the step, realize it)
  hit_after_miss,  // hcq bench's order: two models' graphs built, the first scheduled on a cleared cache (a miss),
                   // then the second timed: its nodes were built before the miss, which evicts them from the caches
};

void train_schedule_loop(benchmark::State& state, const char* device, Mode mode) {
  hcq::Device* const dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  const Batch batch(dev->name());
  const hcq::Tensor &x = batch.x, &y = batch.y;
  {
    Step warm(dev->name(), x, y);  // compiles the kernels, caches the schedule
    hcq::Tensor::realize(warm.roots);
    dev->synchronize();
  }
  size_t kernels = 0, nodes = 0, key_words = 0;
  std::vector<double> us;
  for (auto _ : state) {
    const Step step(dev->name(), x, y);
    nodes = hcq::fw::toposort(step.nodes).size();
    bool hit = false;
    const bool miss = mode == Mode::miss || mode == Mode::miss_cold;
    if (mode != Mode::hit) hcq::fw::clear_schedule_cache();
    if (mode == Mode::miss_cold) hcq::fw::clear_kernel_cache();
    if (mode == Mode::hit_after_miss) {
      const Step first(dev->name(), x, y);
      hcq::fw::schedule_only(first.nodes, &hit);
    }
    const auto t0 = Clock::now();
    kernels = hcq::fw::schedule_only(step.nodes, &hit);
    const auto t1 = Clock::now();
    if (hit == miss) {
      state.SkipWithError(miss ? "a schedule was found in a cleared cache" : "an equal training step missed the cache");
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    key_words = hcq::fw::callify(step.nodes).key.words.size();
  }
  // On a shared machine the mean carries other processes' time slices; the low percentiles mostly do not.
  std::sort(us.begin(), us.end());
  if (!us.empty()) {
    state.counters["p10_us"] = us[us.size() / 10];
    state.counters["median_us"] = us[us.size() / 2];
  }
  state.SetLabel(dev->name() + ", " + std::to_string(nodes) + " nodes, " + std::to_string(key_words) + " key words, " +
                 std::to_string(kernels) + " kernels");
}

// Hits on one graph again and again: the walk with the graph, the walk's tables and the branch history warm, what a
// hit costs at best (a new graph's first hit above pays for bringing its nodes into the cache).
void BM_TrainScheduleHitSameGraph(benchmark::State& state, const char* device) {
  hcq::Device* const dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  const Batch batch(dev->name());
  const Step step(dev->name(), batch.x, batch.y);
  bool hit = false;
  hcq::fw::schedule_only(step.nodes, &hit);  // builds and caches it
  for (auto _ : state) {
    hcq::fw::schedule_only(step.nodes, &hit);
    if (!hit) {
      state.SkipWithError("the same graph missed the cache");
      return;
    }
  }
}

void BM_TrainScheduleMiss(benchmark::State& state, const char* device) {
  train_schedule_loop(state, device, Mode::miss);
}
void BM_TrainScheduleMissCold(benchmark::State& state, const char* device) {
  train_schedule_loop(state, device, Mode::miss_cold);
}
void BM_TrainScheduleHit(benchmark::State& state, const char* device) { train_schedule_loop(state, device, Mode::hit); }
void BM_TrainScheduleHitAfterMiss(benchmark::State& state, const char* device) {
  train_schedule_loop(state, device, Mode::hit_after_miss);
}

}  // namespace

BENCHMARK_CAPTURE(BM_TrainScheduleMiss, Framework, "CPU")->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TrainScheduleMissCold, Framework, "CPU")->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TrainScheduleHit, Framework, "CPU")->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_TrainScheduleHitAfterMiss, Framework, "CPU")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->Iterations(101);
BENCHMARK_CAPTURE(BM_TrainScheduleHitSameGraph, Framework, "CPU")->Unit(benchmark::kMicrosecond);
