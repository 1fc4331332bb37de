#include "bench_train.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "framework/engine/realize.hpp"
#include "framework/schedule/kernel_cache.hpp"
#include "hcq/error.hpp"
#include "hcq/jit.hpp"
#include "hcq/nn.hpp"
#include "hcq/optim.hpp"
#include "stats.hpp"

namespace hcq::tool {
namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) { return std::chrono::duration<double, std::micro>(Clock::now() - t0).count(); }

// A fixed batch: pixels in [0, 1) and labels 0..9, the same every run.
std::pair<Tensor, Tensor> synthetic_batch(int64_t batch, const std::string& device) {
  std::vector<float> x(static_cast<size_t>(batch * 784));
  std::vector<int32_t> y(static_cast<size_t>(batch));
  for (size_t k = 0; k < x.size(); ++k) x[k] = static_cast<float>((k * 2654435761u) % 1000) / 1000.0f;
  for (size_t k = 0; k < y.size(); ++k) y[k] = static_cast<int32_t>(k % 10);
  return {Tensor(x, {batch, 784}, device), Tensor(y, {batch}, device)};
}

struct Net {
  std::vector<nn::Linear> layers;
  Net(const std::vector<int64_t>& widths, const std::string& device) {
    for (size_t k = 0; k + 1 < widths.size(); ++k) layers.emplace_back(widths[k], widths[k + 1], true, device);
  }
  Tensor forward(Tensor x) const {
    for (size_t k = 0; k < layers.size(); ++k) {
      x = layers[k](x);
      if (k + 1 < layers.size()) x = x.relu();
    }
    return x;
  }
  std::vector<Tensor> parameters() const {
    std::vector<Tensor> p;
    for (const nn::Linear& l : layers)
      for (const Tensor& t : l.parameters()) p.push_back(t);
    return p;
  }
};

double measure_step(Device& dev, int steps) {
  Net net({784, 128, 10}, dev.name());
  optim::Adam opt(net.parameters(), 1e-3);
  const auto [x, y] = synthetic_batch(128, dev.name());
  TinyJit step([&](const std::vector<Tensor>& in) {
    opt.zero_grad();
    Tensor loss = nn::cross_entropy(net.forward(in[0]), in[1]);
    loss.backward();
    opt.step({loss});
    return std::vector<Tensor>{loss};
  });
  double first = 0;
  for (int k = 0; k < 3; ++k) first = step({x, y})[0].item();  // run, capture, first replay
  std::vector<double> ms;
  double last = first;
  for (int k = 0; k < steps; ++k) {
    const auto t0 = Clock::now();
    last = step({x, y})[0].item();
    ms.push_back(us_since(t0) / 1e3);
  }
  // Adam on one fixed batch must bring the loss down: a step that computes nothing is no measurement.
  if (!(std::isfinite(last) && last < first))
    throw Error(cat("the jitted step did not train: loss ", first, " after the capture, ", last, " after ", steps,
                    " more steps"));
  return median(ms);
}

struct ScheduleTimes {
  double miss_us, miss_cold_us, hit_us;
};

ScheduleTimes measure_schedule(Device& dev, int reps) {
  const std::vector<int64_t> widths{784, 256, 256, 256, 10};
  const auto [x, y] = synthetic_batch(128, dev.name());
  // What one step of a fresh model realizes (its graph on its own parameter buffers).
  auto step_of = [&](Net& net, optim::Adam& opt) {
    Tensor loss = nn::cross_entropy(net.forward(x), y);
    loss.backward();
    return opt.schedule_step({loss});
  };
  auto nodes = [](const std::vector<Tensor>& ts) {
    std::vector<fw::Node> n;
    for (const Tensor& t : ts) n.push_back(t.node());
    return n;
  };
  std::vector<double> miss, miss_cold, hit;
  for (int rep = 0; rep <= reps; ++rep) {  // rep 0 warms up: it compiles the kernels
    Net a(widths, dev.name()), b(widths, dev.name());
    optim::Adam opt_a(a.parameters()), opt_b(b.parameters());
    const std::vector<Tensor> step_a = step_of(a, opt_a);
    const std::vector<fw::Node> roots_a = nodes(step_a);
    // Cold first (no kernel cached: each is lowered and rendered), then the same graph again with only the schedule
    // cache cleared: its kernels come from the kernel cache.
    fw::clear_schedule_cache();
    fw::clear_kernel_cache();
    bool was_hit = true;
    auto t0 = Clock::now();
    const size_t cold_kernels = fw::schedule_only(roots_a, &was_hit);
    const double miss_cold_us = us_since(t0);
    if (was_hit) throw Error("a training step's schedule was found in the cache just cleared");
    fw::clear_schedule_cache();
    t0 = Clock::now();
    const size_t kernels = fw::schedule_only(roots_a, &was_hit);
    const double miss_us = us_since(t0);
    if (was_hit) throw Error("a training step's schedule was found in the cache just cleared");
    if (kernels != cold_kernels)
      throw Error(cat("a step scheduled from the kernel cache has ", kernels, " kernels, built cold ", cold_kernels));
    // The second model's step is built after the miss, just before it is scheduled, as an eager training loop builds
    // its step and realizes it at once (built before the miss, its graph would be timed cold from memory).
    const std::vector<Tensor> step_b = step_of(b, opt_b);
    const std::vector<fw::Node> roots_b = nodes(step_b);
    t0 = Clock::now();
    const size_t hit_kernels = fw::schedule_only(roots_b, &was_hit);
    const double hit_us = us_since(t0);
    if (!was_hit || hit_kernels != kernels)
      throw Error(cat("a second model of the same shapes ", was_hit ? "scheduled another kernel count" : "missed", " (",
                      hit_kernels, " kernels, the first ", kernels, ")"));
    if (rep == 0) {  // run it once: its kernels compiled, so the misses below find them in the compile cache
      Tensor::realize(step_a);
      continue;
    }
    miss.push_back(miss_us);
    miss_cold.push_back(miss_cold_us);
    hit.push_back(hit_us);
  }
  return {median(miss), median(miss_cold), median(hit)};
}

// Times the step's kernels one by one (fw::KernelTimer) over eager steps of the same net and batch.
struct StepTimer : fw::KernelTimer {
  std::vector<fw::KernelTime> kernels;  // this step's, in order
  void kernel(const fw::KernelTime& t) override { kernels.push_back(t); }
};

}  // namespace

void print_step_kernels(Device& dev, int steps) {
  Net net({784, 128, 10}, dev.name());
  optim::Adam opt(net.parameters(), 1e-3);
  const auto [x, y] = synthetic_batch(128, dev.name());
  auto eager_step = [&] {
    opt.zero_grad();
    Tensor loss = nn::cross_entropy(net.forward(x), y);
    loss.backward();
    opt.step({loss});
    return loss.item();
  };
  eager_step();  // compiles
  std::vector<std::vector<fw::KernelTime>> runs;
  for (int k = 0; k < steps; ++k) {
    StepTimer timer;
    fw::KernelTimer* const previous = fw::set_kernel_timer(&timer);
    try {
      eager_step();
    } catch (...) {
      fw::set_kernel_timer(previous);
      throw;
    }
    fw::set_kernel_timer(previous);
    if (!runs.empty() && timer.kernels.size() != runs[0].size())
      throw Error(cat("an eager step ran ", timer.kernels.size(), " kernels, the first ", runs[0].size()));
    runs.push_back(std::move(timer.kernels));
  }
  if (runs.empty()) return;
  std::printf("%-3s %-26s %-44s %6s %10s %9s %8s\n", "#", "kernel", "opts", "groups", "median us", "GFLOP/s", "GB/s");
  double total_us = 0, total_flops = 0;
  for (size_t k = 0; k < runs[0].size(); ++k) {
    std::vector<double> us;
    for (const auto& run : runs) us.push_back(run[k].seconds * 1e6);
    const fw::KernelTime& t = runs[0][k];
    const double m = median(us);
    total_us += m;
    total_flops += t.flops;
    std::printf("%-3zu %-26s %-44s %6u %10.2f %9.2f %8.2f\n", k, t.name.c_str(), t.opts.c_str(), t.groups, m,
                m > 0 ? t.flops / m / 1e3 : 0.0, m > 0 ? t.bytes / m / 1e3 : 0.0);
  }
  std::printf("%zu kernels, sum of medians %.2f us, %.2f MFLOP (%.2f GFLOP/s); jitted step median %.3f ms\n",
              runs[0].size(), total_us, total_flops / 1e6, total_us > 0 ? total_flops / total_us / 1e3 : 0.0,
              measure_step(dev, steps));
}

TrainBenchResult measure_train(Device& dev, int steps, int schedule_reps) {
  TrainBenchResult r;
  r.mlp_step_ms = measure_step(dev, steps);
  const ScheduleTimes t = measure_schedule(dev, schedule_reps);
  r.schedule_miss_us = t.miss_us;
  r.schedule_miss_cold_us = t.miss_cold_us;
  r.schedule_hit_us = t.hit_us;
  return r;
}

}  // namespace hcq::tool
