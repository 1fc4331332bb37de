// The kernel ABI's bf16 matmul micro-kernels on the CPU device, one per path (`--benchmark_filter=Bf16`):
//   BM_Bf16MicroKernel/<path>  C[16 x 16] += A[16 x 1024] . B[1024 x 16] (B VNNI-packed), repeated kReps times in one
//                              launch on one worker, so the launch's cost is spread thin. GFLOP/s counts 2*16*16*1024
//                              per repetition. A path this CPU device does not report is skipped, saying why.
#include <benchmark/benchmark.h>

#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"
#include "hcq/cpu_features.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "open_or_skip.hpp"

namespace {

using hcq::Bf16MatmulPath;

constexpr uint32_t kK = 1024;
constexpr uint32_t kReps = 4096;

constexpr const char* kSource = R"(
#define BENCH_KERNEL(path, begin, end)                                                  \
  HCQ_KERNEL(bench_##path, 3, 1) {                                                      \
    float *c = HCQ_BUF(float, 0);                                                       \
    const uint16_t *a = HCQ_BUF(const uint16_t, 1), *bp = HCQ_BUF(const uint16_t, 2); \
    begin;                                                                              \
    for (uint32_t r = 0; r < HCQ_VAL(0); ++r) hcq_bf16_mm16_##path(c, 16, a, 1024, bp, 32, 1024); \
    end;                                                                                \
  }
BENCH_KERNEL(amx, hcq_amx_begin(), hcq_amx_end())
BENCH_KERNEL(avx512_bf16, (void)0, (void)0)
BENCH_KERNEL(avx512, (void)0, (void)0)
BENCH_KERNEL(avx2, (void)0, (void)0)
BENCH_KERNEL(scalar, (void)0, (void)0)
)";

void BM_Bf16MicroKernel(benchmark::State& state) {
  const auto path = static_cast<Bf16MatmulPath>(state.range(0));
  state.SetLabel(std::string(hcq::to_string(path)));
  hcq::Device* const dev = open_or_skip(state, "CPU");
  if (dev == nullptr) return;
  const hcq::CpuIsa isa = dev->info().cpu_isa.value_or(hcq::CpuIsa{});
  if (!hcq::bf16_matmul_path_usable(isa.features, path)) {
    state.SkipWithError(
        ("this CPU device does not report the features of the " + std::string(hcq::to_string(path)) + " path").c_str());
    return;
  }
  const uint32_t reps = path == Bf16MatmulPath::scalar ? kReps / 64 : kReps;  // plain C is ~100x slower
  static const std::vector<uint8_t> obj = dev->compiler().compile(kSource);
  auto program = dev->load_program("bench_" + std::string(hcq::to_string(path)), obj);
  hcq::BufferSpec spec;
  spec.cpu_access = true;
  const hcq::Allocation c = dev->alloc_memory(16 * 16 * 4, spec), a = dev->alloc_memory(16 * kK * 2, spec),
                        bp = dev->alloc_memory(kK / 2 * 32 * 2, spec);
  // Small values, so that thousands of repetitions neither overflow nor reach denormals: 0x3c00 is 2^-7.
  std::memset(c.host_ptr(), 0, 16 * 16 * 4);
  for (uint32_t i = 0; i < 16 * kK; ++i) static_cast<uint16_t*>(a.host_ptr())[i] = 0x3c00;
  for (uint32_t i = 0; i < kK / 2 * 32; ++i) static_cast<uint16_t*>(bp.host_ptr())[i] = 0x3c00;
  for (auto _ : state) {
    auto q = dev->compute_queue();
    dev->submit(*q,
                [&](hcq::HWQueue& h) {
                  h.exec(*program, hcq::LaunchArgs{{hcq::Sym(c.va), hcq::Sym(a.va), hcq::Sym(bp.va)}, {hcq::Sym(reps)}},
                         hcq::Dims{1u, 1u, 1u}, hcq::Dims{1u, 1u, 1u});
                })
        .wait();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * 16 * 16 * kK * reps * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  for (const hcq::Allocation& x : {c, a, bp}) dev->free_memory(x);
}
BENCHMARK(BM_Bf16MicroKernel)
    ->Arg(static_cast<int>(Bf16MatmulPath::amx))
    ->Arg(static_cast<int>(Bf16MatmulPath::avx512_bf16))
    ->Arg(static_cast<int>(Bf16MatmulPath::avx512))
    ->Arg(static_cast<int>(Bf16MatmulPath::avx2))
    ->Arg(static_cast<int>(Bf16MatmulPath::scalar))
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
