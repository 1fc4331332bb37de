// A bound queue of N kernel launches resubmitted with every variable changed, on the CPU device: the host cost
// `hcq bench` reports as enqueue_ns bound_patched, here per N. Only submit() is timed (manual time); the wait for
// completion between submissions is not.
#include <benchmark/benchmark.h>

#include <array>
#include <chrono>
#include <memory>

#include "../tools/hcq/bench_kernels.hpp"
#include "hcq/hcq.hpp"

namespace {

void BM_BoundSubmitPatched(benchmark::State& state) {
  hcq::Device& dev = hcq::open_device("CPU");
  const auto kernels = hcq::tool::bench_kernels_for("cpu");
  auto program =
      dev.load_program(hcq::tool::BenchKernels::kArgsName, dev.compiler().compile_cached(kernels->args_source));
  hcq::Buffer x(dev, 4096), y(dev, 4096);
  const std::array<uint64_t, 2> buffer_vas{x.va(), y.va()};

  const hcq::Var wait_value{0}, signal_value{1}, buffer{2}, scalar{3}, global_x{4};
  const hcq::LaunchArgs args{{hcq::Sym(buffer)}, {hcq::Sym(scalar)}};
  std::unique_ptr<hcq::HWQueue> q = dev.compute_queue();
  q->wait(dev.timeline_signal(), wait_value);
  for (int64_t k = 0; k < state.range(0); ++k) q->exec(*program, args, {hcq::Sym(global_x), 1, 1}, {1, 1, 1});
  q->signal(dev.timeline_signal(), signal_value);
  q->bind();

  uint64_t i = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    hcq::Device::TimelineSlot slot = dev.reserve_timeline();
    const uint64_t value = slot.signal_value();
    const std::array<uint64_t, 5> vars{slot.wait_value(), value, buffer_vas[i & 1], i, 1 + (i & 1)};
    q->submit(vars);
    slot.commit();
    const auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    dev.wait_signal(dev.timeline_signal(), value);
    ++i;
  }
  dev.synchronize();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * q->num_commands()));
  state.SetLabel("items = commands");
}
BENCHMARK(BM_BoundSubmitPatched)->Arg(1)->Arg(64)->UseManualTime();

}  // namespace

BENCHMARK_MAIN();
