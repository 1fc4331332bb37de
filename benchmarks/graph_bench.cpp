// Graph replay per device and N kernels: the host cost of Graph::replay with every kernel's input address changed
// (what `hcq bench` fits as graph per_kernel_ns / fixed_us), beside eager launches of the same calls on the CPU
// device. Manual time: only replay() (or the N eager launches) is timed; waiting for the device is not.
// `--benchmark_filter='GraphReplay/SIM_AMD'` is the profiling target for the simulators' replay path.
#include <benchmark/benchmark.h>

#include <chrono>
#include <exception>
#include <memory>
#include <vector>

#include "../tools/hcq/bench_kernels.hpp"
#include "hcq/hcq.hpp"

namespace {

struct Setup {
  hcq::Device* dev = nullptr;
  std::unique_ptr<hcq::Program> program;
  std::unique_ptr<hcq::Buffer> a, b;
  uint64_t input(uint64_t replay, uint32_t kernel) const { return (replay & 1 ? a->va() : b->va()) + 64 * kernel; }
};

// Opens the device and loads the bench's one-buffer, one-value kernel; false (and the benchmark skipped with the
// reason) when the device does not open here.
bool set_up(benchmark::State& state, const char* device, Setup& s) {
  try {
    s.dev = &hcq::open_device(device);
    s.program = hcq::tool::load_args_kernel(*s.dev);
    s.a = std::make_unique<hcq::Buffer>(*s.dev, 64 * 1024);
    s.b = std::make_unique<hcq::Buffer>(*s.dev, 64 * 1024);
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

void BM_GraphReplay(benchmark::State& state, const char* device) {
  Setup s;
  if (!set_up(state, device, s)) return;
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
  state.SetLabel(s.dev->name() + ", items = kernels");
}
BENCHMARK_CAPTURE(BM_GraphReplay, CPU, "CPU:0")->Arg(1)->Arg(16)->Arg(64)->Arg(256)->Arg(1024)->UseManualTime();
BENCHMARK_CAPTURE(BM_GraphReplay, SIM_AMD_gfx1100, "SIM-AMD:gfx1100")
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_GraphReplay, SIM_AMD_gfx942, "SIM-AMD:gfx942")  // AQL: packets copied into the ring per replay
    ->Arg(1)
    ->Arg(16)
    ->Arg(64)
    ->Arg(256)
    ->UseManualTime();
BENCHMARK_CAPTURE(BM_GraphReplay, SIM_NV_hopper, "SIM-NV:hopper")->Arg(1)->Arg(16)->Arg(64)->Arg(256)->UseManualTime();

void BM_EagerLaunches(benchmark::State& state) {
  Setup s;
  if (!set_up(state, "CPU:0", s)) return;
  const auto n = static_cast<uint32_t>(state.range(0));
  uint64_t r = 0;
  for (auto _ : state) {
    s.dev->synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t addr = s.input(r, i);
      (*s.program)({&addr, 1}, {&i, 1}, {1, 1, 1}, {1, 1, 1});
    }
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    ++r;
  }
  s.dev->synchronize();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.SetLabel("items = kernels");
}
BENCHMARK(BM_EagerLaunches)->Arg(16)->Arg(256)->UseManualTime();

}  // namespace
