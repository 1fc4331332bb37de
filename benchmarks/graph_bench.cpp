// Graph replay on the CPU device, per N kernels: the host cost of Graph::replay with every kernel's input address
// changed (what `hcq bench` reports as graph per_kernel_ns / fixed_us), beside eager launches of the same calls.
// Manual time: only replay() (or the N eager launches) is timed; waiting for the device is not.
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "../tools/hcq/bench_kernels.hpp"
#include "hcq/hcq.hpp"

namespace {

struct Setup {
  hcq::Device& dev = hcq::open_device("CPU");
  std::unique_ptr<hcq::Program> program;
  hcq::Buffer a{dev, 64 * 1024}, b{dev, 64 * 1024};
  Setup() {
    const auto kernels = hcq::tool::bench_kernels_for("cpu");
    program = dev.load_program(hcq::tool::BenchKernels::kArgsName, dev.compiler().compile_cached(kernels->args_source));
  }
  uint64_t input(uint64_t replay, uint32_t kernel) { return (replay & 1 ? a.va() : b.va()) + 64 * kernel; }
};

void BM_GraphReplay(benchmark::State& state) {
  Setup s;
  const auto n = static_cast<uint32_t>(state.range(0));
  std::vector<hcq::GraphCall> calls;
  for (uint32_t i = 0; i < n; ++i)
    calls.push_back(hcq::KernelCall{s.program.get(), {{hcq::Sym(hcq::Var{static_cast<uint16_t>(i)}), 64}}, {i}});
  hcq::Graph graph(calls);
  std::vector<uint64_t> vars(n);
  uint64_t r = 0;
  for (auto _ : state) {
    for (uint32_t i = 0; i < n; ++i) vars[i] = s.input(r, i);
    graph.wait();
    const auto t0 = std::chrono::steady_clock::now();
    graph.replay(vars);
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    ++r;
  }
  graph.wait();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.SetLabel("items = kernels");
}
BENCHMARK(BM_GraphReplay)->Arg(1)->Arg(16)->Arg(256)->Arg(1024)->UseManualTime();

void BM_EagerLaunches(benchmark::State& state) {
  Setup s;
  const auto n = static_cast<uint32_t>(state.range(0));
  uint64_t r = 0;
  for (auto _ : state) {
    s.dev.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t addr = s.input(r, i);
      (*s.program)({&addr, 1}, {&i, 1}, {1, 1, 1}, {1, 1, 1});
    }
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    ++r;
  }
  s.dev.synchronize();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.SetLabel("items = kernels");
}
BENCHMARK(BM_EagerLaunches)->Arg(16)->Arg(256)->UseManualTime();

}  // namespace
