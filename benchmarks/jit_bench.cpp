// TinyJit's host time per call beside the same function run eagerly (the yardstick): a function of N
// independent small kernels (x + k on 16 floats, k = 1..N), N = 1, 10, 100, returning either one of them (the others
// realized inside: the JIT keeps them as fixed buffers) or all N (N fresh output tensors per call).
//   BM_JitCall/N/outs    calls 2+ of the TinyJit (replays)
//   BM_JitEager/N/outs   the function called directly, its outputs realized
// On CPU:0, SIM-AMD:gfx1100 and SIM-NV:hopper. Manual time: the call alone, host time, with the device idle (it is waited for
// outside the clock after each call, so neither a replay waiting for an earlier one nor the kernels' run counts).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <exception>
#include <string>
#include <vector>

#include "hcq/device.hpp"
#include "hcq/jit.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"
#include "open_or_skip.hpp"

namespace {

hcq::TinyJit::Function n_kernels(int64_t n, bool all_outputs) {
  return [n, all_outputs](const std::vector<hcq::Tensor>& in) {
    std::vector<hcq::Tensor> t;
    for (int64_t k = 1; k <= n; ++k) t.push_back(in[0] + static_cast<float>(k));
    if (all_outputs) return t;
    hcq::Tensor::realize(t);
    return std::vector<hcq::Tensor>{t.back()};
  };
}

// The calling thread's CPU time: beside the wall time, it tells the call's own work from time the thread spent
// descheduled (on a loaded 2-core machine the simulated GPU's thread and other processes take the core).
uint64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void jit_loop(benchmark::State& state, const char* device, bool jitted) {
  hcq::Device* const dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  const int64_t n = state.range(0);
  const bool all = state.range(1) != 0;
  const hcq::TinyJit::Function f = n_kernels(n, all);
  hcq::TinyJit jit(f);
  const hcq::Tensor x = hcq::Tensor::zeros({16}, hcq::dtypes::float32, dev->name()).realize();
  auto call = [&] {
    if (jitted) return jit({x});
    std::vector<hcq::Tensor> out = f({x});
    hcq::Tensor::realize(out);
    return out;
  };
  for (int i = 0; i < 20; ++i) call();  // compiled, captured, the schedules cached
  dev->synchronize();
  int64_t calls = 0;
  double thread_ns = 0;
  for (auto _ : state) {
    const uint64_t c0 = thread_cpu_ns();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<hcq::Tensor> out = call();
    const auto t1 = std::chrono::steady_clock::now();
    thread_ns += static_cast<double>(thread_cpu_ns() - c0);
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    dev->synchronize();
    out.clear();
    ++calls;
  }
  dev->synchronize();
  state.SetItemsProcessed(calls * n);
  state.counters["thread_cpu_ns"] = calls > 0 ? thread_ns / static_cast<double>(calls) : 0;
  state.SetLabel(dev->name() + ", items = kernels");
}

void BM_JitCall(benchmark::State& state, const char* device) { jit_loop(state, device, true); }
void BM_JitEager(benchmark::State& state, const char* device) { jit_loop(state, device, false); }

void sizes(benchmark::internal::Benchmark* b) {
  for (int64_t all : {0, 1})
    for (int64_t n : {1, 10, 100}) b->Args({n, all});
  b->ArgNames({"N", "outs"})->UseManualTime();
}

BENCHMARK_CAPTURE(BM_JitCall, CPU, "CPU:0")->Apply(sizes);
BENCHMARK_CAPTURE(BM_JitEager, CPU, "CPU:0")->Apply(sizes);
BENCHMARK_CAPTURE(BM_JitCall, SIM_AMD_gfx1100, "SIM-AMD:gfx1100")->Apply(sizes);
BENCHMARK_CAPTURE(BM_JitEager, SIM_AMD_gfx1100, "SIM-AMD:gfx1100")->Apply(sizes);
BENCHMARK_CAPTURE(BM_JitCall, SIM_NV_hopper, "SIM-NV:hopper")->Apply(sizes);
BENCHMARK_CAPTURE(BM_JitEager, SIM_NV_hopper, "SIM-NV:hopper")->Apply(sizes);

}  // namespace
