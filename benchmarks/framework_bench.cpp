// The framework on the CPU device, each benchmark beside its yardstick (the figures `hcq bench` reports in its
// framework section, here at one size each for profiling): `--benchmark_filter=Framework` runs
//   BM_EagerOp        x = (x + 1).realize() on 16 floats (the device waited for every 256 ops)
//   BM_ScheduleMiss   fw::schedule_only of an MLP 784-256-256-256-10 forward after clearing the schedule cache
//   BM_ScheduleHit    the same on an equal graph over new input buffers (a cache hit)
//   BM_Ewise          c = a * b + 1 on 4M floats through the framework, beside BM_EwiseLoop: the hand-written HCQ C
//                     loop on the device's workers
//   BM_Matmul256      256^3 float32 through Tensor::matmul, beside BM_Sgemm256: OpenBLAS's cblas_sgemm, and (in a
//                     build with oneDNN, HCQ_TOOL_ONEDNN) BM_OnednnMatmul256: oneDNN's matmul primitive, made once
// Manual time for scheduling (graph building is not timed); real time elsewhere, each run waited for. The framework's
// repetitions drop the previous result before building the expression again: while a tensor holds an equal node,
// realizing it again computes nothing (framework/ir/node.hpp).
#include <benchmark/benchmark.h>
#include <cblas.h>
#if HCQ_TOOL_ONEDNN
#include <dnnl.h>
#include <omp.h>
#endif

#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "../tools/hcq/bench_framework.hpp"
#include "framework/engine/realize.hpp"
#include "framework/ir/node.hpp"
#include "framework/ir/ops.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"
#include "open_or_skip.hpp"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kEwiseElements = 4ll << 20;
constexpr int64_t kMatmulN = 256;

const hcq::Buffer& buffer_of(const hcq::Tensor& t) {
  const hcq::fw::Node& n = t.node();
  return *(n->op == hcq::fw::Op::RESHAPE ? n->src[0] : n)->payload;
}

void BM_EagerOp(benchmark::State& state, const char* device) {
  hcq::Device* dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  hcq::Tensor x = hcq::Tensor::zeros({16}, hcq::dtypes::float32, dev->name()).realize();
  for (int i = 0; i < 100; ++i) x = (x + 1).realize();  // the kernel compiled, the schedule cached
  dev->synchronize();
  int64_t ops = 0;
  for (auto _ : state) {
    x = (x + 1).realize();
    if (++ops % 256 == 0) dev->synchronize();
  }
  dev->synchronize();
  state.SetItemsProcessed(ops);
  state.SetLabel(dev->name() + ", items = ops");
}

// Times fw::schedule_only on a new forward graph per iteration; `clear` empties the schedule cache first (a miss).
void schedule_loop(benchmark::State& state, const char* device, bool clear) {
  hcq::Device* dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  const hcq::tool::Mlp mlp(dev->name());
  hcq::Tensor warm = mlp.forward(mlp.new_input()).realize();  // compiles the kernels
  dev->synchronize();
  size_t kernels = 0;
  for (auto _ : state) {
    const hcq::Tensor graph = mlp.forward(mlp.new_input());
    if (clear) hcq::fw::clear_schedule_cache();
    bool hit = false;
    const auto t0 = Clock::now();
    kernels = hcq::fw::schedule_only({graph.node()}, &hit);
    const auto t1 = Clock::now();
    if (hit == clear) {
      state.SkipWithError(clear ? "a schedule was found in a cleared cache" : "an equal graph missed the cache");
      return;
    }
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
  }
  state.SetLabel(dev->name() + ", " + std::to_string(kernels) + " kernels");
}

void BM_ScheduleMiss(benchmark::State& state, const char* device) { schedule_loop(state, device, true); }
void BM_ScheduleHit(benchmark::State& state, const char* device) { schedule_loop(state, device, false); }

struct EwiseOperands {
  hcq::Tensor a, b;
  explicit EwiseOperands(const std::string& device)
      : a(hcq::Tensor::rand({kEwiseElements}, hcq::dtypes::float32, device).realize()),
        b(hcq::Tensor::rand({kEwiseElements}, hcq::dtypes::float32, device).realize()) {}
};

void BM_Ewise(benchmark::State& state, const char* device) {
  hcq::Device* dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  const EwiseOperands in(dev->name());
  hcq::Tensor c = (in.a * in.b + 1).realize();
  dev->synchronize();
  for (auto _ : state) {
    c = hcq::Tensor();
    c = (in.a * in.b + 1).realize();
    dev->synchronize();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * 4 * kEwiseElements);
  state.SetLabel(dev->name() + ", c = a * b + 1, 4M floats");
}

void BM_EwiseLoop(benchmark::State& state, const char* device) {
  hcq::Device* dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  const EwiseOperands in(dev->name());
  hcq::tool::EwiseLoop loop(*dev);
  hcq::Buffer c(*dev, kEwiseElements * sizeof(float));
  const auto n = static_cast<uint32_t>(kEwiseElements);
  loop.launch(c, buffer_of(in.a), buffer_of(in.b), n);
  dev->synchronize();
  for (auto _ : state) {
    loop.launch(c, buffer_of(in.a), buffer_of(in.b), n);
    dev->synchronize();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 3 * 4 * kEwiseElements);
  state.SetLabel(dev->name() + ", hand-written HCQ C loop, 4M floats");
}

void set_flops(benchmark::State& state) {
  const double flops = 2.0 * kMatmulN * kMatmulN * kMatmulN;
  state.counters["FLOPS"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_Matmul256(benchmark::State& state, const char* device) {
  hcq::Device* dev = open_or_skip(state, device);
  if (dev == nullptr) return;
  hcq::Tensor a = hcq::Tensor::rand({kMatmulN, kMatmulN}, hcq::dtypes::float32, dev->name()).realize();
  hcq::Tensor b = hcq::Tensor::rand({kMatmulN, kMatmulN}, hcq::dtypes::float32, dev->name()).realize();
  hcq::Tensor c = a.matmul(b).realize();
  dev->synchronize();
  for (auto _ : state) {
    c = hcq::Tensor();
    c = a.matmul(b).realize();
    dev->synchronize();
  }
  set_flops(state);
  state.SetLabel(dev->name());
}

// The libraries' operands: [kMatmulN, kMatmulN] each, row-major.
struct HostOperands {
  std::vector<float> a, b, c;
  HostOperands() : a(kMatmulN * kMatmulN), b(kMatmulN * kMatmulN), c(kMatmulN * kMatmulN) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = static_cast<float>(i % 7) / 7.0f;
      b[i] = static_cast<float>(i % 5) / 5.0f;
    }
  }
};

void BM_Sgemm256(benchmark::State& state, const char* /*device*/) {
  HostOperands op;
  std::vector<float>&a = op.a, &b = op.b, &c = op.c;
  const int n = static_cast<int>(kMatmulN);
  openblas_set_num_threads(static_cast<int>(hcq::knobs::cpu_threads()));  // the CPU device's workers
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state);
  state.SetLabel("OpenBLAS cblas_sgemm");
}

#if HCQ_TOOL_ONEDNN
// oneDNN's fp32 matmul on plain row-major operands, on as many OpenMP threads as the CPU device has workers; the
// primitive and its memory objects made before the timed loop.
void BM_OnednnMatmul256(benchmark::State& state, const char* /*device*/) {
  HostOperands op;
  omp_set_num_threads(static_cast<int>(hcq::knobs::cpu_threads()));
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  dnnl_primitive_desc_t pd = nullptr;
  dnnl_primitive_t matmul = nullptr;
  dnnl_memory_t mem[3] = {};
  auto release = [&] {
    for (dnnl_memory_t m : mem)
      if (m) dnnl_memory_destroy(m);
    if (matmul) dnnl_primitive_destroy(matmul);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (stream) dnnl_stream_destroy(stream);
    if (engine) dnnl_engine_destroy(engine);
  };
  const dnnl_dims_t dims{kMatmulN, kMatmulN};
  dnnl_memory_desc_t md;
  dnnl_matmul_desc_t desc;
  float* data[3] = {op.a.data(), op.b.data(), op.c.data()};
  bool ok = dnnl_engine_create(&engine, dnnl_cpu, 0) == dnnl_success &&
            dnnl_stream_create(&stream, engine, dnnl_stream_default_flags) == dnnl_success &&
            dnnl_memory_desc_init_by_tag(&md, 2, dims, dnnl_f32, dnnl_ab) == dnnl_success &&
            dnnl_matmul_desc_init(&desc, &md, &md, nullptr, &md) == dnnl_success &&
            dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr) == dnnl_success &&
            dnnl_primitive_create(&matmul, pd) == dnnl_success;
  for (int k = 0; ok && k < 3; ++k) ok = dnnl_memory_create(&mem[k], &md, engine, data[k]) == dnnl_success;
  const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, mem[0]}, {DNNL_ARG_WEIGHTS, mem[1]}, {DNNL_ARG_DST, mem[2]}};
  if (!ok) {
    release();
    state.SkipWithError("oneDNN: cannot make a 256^3 fp32 matmul primitive");
    return;
  }
  for (auto _ : state) {
    if (dnnl_primitive_execute(matmul, stream, 3, args) != dnnl_success || dnnl_stream_wait(stream) != dnnl_success) {
      state.SkipWithError("oneDNN: the matmul failed");
      break;
    }
  }
  release();
  set_flops(state);
  state.SetLabel("oneDNN matmul primitive");
}
#endif

BENCHMARK_CAPTURE(BM_EagerOp, Framework, "CPU")->UseRealTime();
BENCHMARK_CAPTURE(BM_ScheduleMiss, Framework, "CPU")->UseManualTime();
BENCHMARK_CAPTURE(BM_ScheduleHit, Framework, "CPU")->UseManualTime();
BENCHMARK_CAPTURE(BM_Ewise, Framework, "CPU")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_EwiseLoop, Framework, "CPU")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Matmul256, Framework, "CPU")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Sgemm256, Framework, "host")->UseRealTime()->Unit(benchmark::kMillisecond);
#if HCQ_TOOL_ONEDNN
BENCHMARK_CAPTURE(BM_OnednnMatmul256, Framework, "host")->UseRealTime()->Unit(benchmark::kMillisecond);
#endif

}  // namespace
