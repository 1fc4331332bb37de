// The `framework` section of `hcq bench`: what the framework (include/hcq/tensor.hpp) costs on the CPU device, each
// figure beside a yardstick measured in the same run:
//   eager_op_us      x = (x + 1).realize() on 16 floats: host time per op, kernel done included
//   schedule_us      scheduling an MLP's forward graph: a miss (schedule cache cleared; kernels already compiled
//                    and in the kernel cache), miss_cold (the kernel cache cleared too: each kernel lowered and
//                    rendered) and a hit (a structurally equal graph on new input buffers)
//   ewise_gbps       c = a * b + 1 on float32, 3 * 4 * n bytes per run, beside ewise_loop_gbps: a hand-written
//                    HCQ C kernel of the same computation, split over the device's workers, built by the same
//                    compiler and launched the same way
//   matmul_gflops    float32 products through Tensor::matmul at each of matmul_shapes (64^3, 256^3, 1024^3, 2048^3
//                    and the MLP's 128x784 by 784x128 and 128x128 by 128x10), beside two yardsticks on the host
//                    with the CPU device's number of threads: openblas_gflops (cblas_sgemm) and onednn_gflops
//                    (oneDNN's matmul primitive, created once outside the timed region). Each library runs after
//                    every framework product (their threads spin for a while after a call and would take the
//                    cores from the device's workers).
//   bf16_gflops      bfloat16 products through Tensor::matmul at bf16_shapes (1024^3, 2048^3); the framework
//                    rounds each product to bfloat16, accumulates in float32 and returns bfloat16 (reduce.cpp's
//                    acc_dtype). Beside onednn_bf16_gflops: oneDNN's bf16 x bf16 -> f32 matmul (AMX where the CPU
//                    has it; onednn_bf16_impl names the kernel oneDNN chose).
//   sum_gbps         a full Tensor::sum of sum_elements float32 (realized input; only the reduce's realize timed),
//                    4 bytes per element read, beside sum_loop_gbps: a hand-written C++ loop over the same floats
//                    (independent accumulators, so the compiler vectorises it) split over the CPU device's number
//                    of workers, interleaved one of each per round.
//   compile_ms       per kernel: `cold`, one realize of compile_kernels distinct new kernels (compiled in parallel by
//                    the engine; the kernels' constants carry a random nonce, so neither cache has them), and
//                    `cached`, the same realize in a new process (`hcq bench --compile-probe`), whose compiles the
//                    disk cache serves; beside `cold_serial`, the same number of new kernels one realize each, and
//                    `parallel_speedup` = cold_serial / cold. Loading (and on a simulated GPU, building the host
//                    twin) is part of each figure, as a realize pays it.
//   jit              host time of one call of a TinyJit (a replay) of a function of N independent small kernels
//                    (x + k on 16 floats, k = 1..N, realized inside; the last returned), N = 1, 10, 100, the device
//                    idle at each call: a least-squares line through the per-N medians, fixed_us + N *
//                    per_kernel_ns; beside eager_per_kernel_ns, the slope of the same line for the same function
//                    called directly (its outputs realized), in interleaved rounds with the replays.
// On a GPU (simulated or real) the same figures; a simulated GPU measures ewise and sum on 4M floats and its products
// at most 128 along each dimension (for_simulated()): its kernels run as host twins on the CPU.
// The pieces the Google Benchmark twins (benchmarks/framework_bench.cpp) time are declared here too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hcq/tensor.hpp"

namespace hcq {
class Buffer;
class Device;
class HWQueue;
class Program;
}  // namespace hcq

namespace hcq::tool {

// One product the matmul figures are measured at: its JSON key, and an m x k by k x n product.
struct MatmulShape {
  std::string key;
  int64_t m, k, n;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n); }
};

struct FrameworkBenchConfig {
  int eager_warmup = 100;  // untimed ops first: the kernel compiled, the schedule cached, buffers in the cache
  int eager_ops = 1000;    // ops per repetition, one host wait at the end
  int eager_reps = 7;
  int schedule_reps = 51;
  int64_t ewise_elements = 64ll << 20;
  int ewise_runs = 11;
  std::vector<MatmulShape> matmul_shapes{{"64", 64, 64, 64},         {"256", 256, 256, 256}, {"1024", 1024, 1024, 1024},
                                         {"2048", 2048, 2048, 2048}, {"mlp", 128, 784, 128}, {"mlp_out", 128, 128, 10}};
  std::vector<MatmulShape> bf16_shapes{{"1024", 1024, 1024, 1024}, {"2048", 2048, 2048, 2048}};
  // Products measured after a search (HCQ_BEAM = beam_width, framework/engine/beam.hpp), the search not timed: the
  // "beam" key of matmul_gflops, beside the libraries like the others. Only on the CPU device (nothing to search
  // elsewhere).
  std::vector<MatmulShape> beam_shapes{{"beam", 1024, 1024, 1024}};
  unsigned beam_width = 4;
  // Each product runs at least this many times, and more while the runs take under matmul_budget_s (a 64^3 product
  // is over in microseconds; a median of 3 of those is noise).
  int matmul_runs = 3;  // the framework's 2048^3 takes seconds on two cores
  int sgemm_runs = 11;  // each library's
  double matmul_budget_s = 0.3;
  int64_t sum_elements = 64ll << 20;
  int sum_runs = 11;
  int compile_kernels = 20;                // distinct kernels in the cold realize (and as many in the serial one)
  std::vector<int> jit_sizes{1, 10, 100};  // kernels per jitted function; at least two different sizes
  int jit_runs = 200;                      // timed calls per size, jitted and eager each
  int jit_rounds = 10;                     // the runs split into rounds, each calling every size in turn
  // How to start the cached probe: this program's path; empty: compile_ms.cached is not measured.
  std::string self_exe = "/proc/self/exe";

  static FrameworkBenchConfig quick() {
    FrameworkBenchConfig c;
    c.eager_warmup = 20;
    c.eager_reps = 3;
    c.schedule_reps = 11;
    c.ewise_elements = 4ll << 20;
    c.ewise_runs = 5;
    // The keys stay; "1024" and "2048" measure smaller products (matmul_shapes in the JSON says which).
    c.matmul_shapes = {{"64", 64, 64, 64},      {"256", 256, 256, 256}, {"1024", 256, 256, 256},
                       {"2048", 512, 512, 512}, {"mlp", 128, 784, 128}, {"mlp_out", 128, 128, 10}};
    c.bf16_shapes = {{"1024", 128, 128, 128}, {"2048", 256, 256, 256}};
    c.beam_shapes = {{"beam", 256, 256, 256}};
    c.matmul_runs = 3;
    c.sgemm_runs = 5;
    c.matmul_budget_s = 0.02;
    c.sum_elements = 4ll << 20;
    c.sum_runs = 5;
    c.jit_runs = 40;
    c.jit_rounds = 4;
    return c;
  }
  static constexpr int64_t kSimulatedMatmulDim = 128;
  // The sizes a simulated GPU measures at (its kernels are host twins): ewise and matmul no larger than quick()'s.
  FrameworkBenchConfig for_simulated() const {
    FrameworkBenchConfig c = *this;
    const FrameworkBenchConfig q = quick();
    c.ewise_elements = std::min(c.ewise_elements, q.ewise_elements);
    c.sum_elements = std::min(c.sum_elements, q.sum_elements);
    // Every key still measured, each dimension at most 128: the host twins run a product at about 1 GFLOP/s, and
    // each distinct shape is one more kernel to compile for the GPU and for its twin.
    c.beam_shapes.clear();
    for (auto* shapes : {&c.matmul_shapes, &c.bf16_shapes})
      for (MatmulShape& s : *shapes) {
        s.m = std::min<int64_t>(s.m, kSimulatedMatmulDim);
        s.k = std::min<int64_t>(s.k, kSimulatedMatmulDim);
        s.n = std::min<int64_t>(s.n, kSimulatedMatmulDim);
      }
    return c;
  }
};

// NaN: not measured (the reason is in `unavailable` or in the device's errors).
struct FrameworkBenchResult {
  static constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  double eager_op_us = kNotMeasured;
  double schedule_miss_us = kNotMeasured, schedule_miss_cold_us = kNotMeasured, schedule_hit_us = kNotMeasured;
  size_t schedule_kernels = 0;  // kernels in the MLP forward schedule
  double ewise_gbps = kNotMeasured, ewise_loop_gbps = kNotMeasured;
  int64_t ewise_elements = 0;
  // One per shape measured, in the config's order; a figure not measured is NaN.
  struct Matmul {
    MatmulShape shape;
    double framework = kNotMeasured, openblas = kNotMeasured, onednn = kNotMeasured;
  };
  std::vector<Matmul> matmul, bf16;  // bf16: openblas stays NaN (OpenBLAS has no bf16 product)
  // Non-empty: that yardstick is not in this build (null in the JSON), and why.
  std::string openblas_unavailable, onednn_unavailable;
  // The implementations oneDNN chose for the 1024 products (e.g. "brg:avx512_core_amx"): whether AMX ran.
  std::string onednn_impl, onednn_bf16_impl;
  double sum_gbps = kNotMeasured, sum_loop_gbps = kNotMeasured;
  int64_t sum_elements = 0;
  double compile_cold_ms = kNotMeasured, compile_cached_ms = kNotMeasured, compile_cold_serial_ms = kNotMeasured;
  size_t compile_kernels = 0;
  std::string compile_unavailable;  // non-empty: compile_ms not measured, and why (not an error)
  double jit_per_kernel_ns = kNotMeasured, jit_fixed_us = kNotMeasured, jit_eager_per_kernel_ns = kNotMeasured;
  std::string unavailable;  // non-empty: the framework does not run on this device (or in this build), and why
};

// Every framework figure on `dev`; each failed measurement leaves its figures NaN and appends
// "framework <figure>: <message>" to `errors`. On a device the framework does not run on yet, measures nothing
// and says why in `unavailable` (not an error: there is nothing to fix in the device).
FrameworkBenchResult measure_framework(Device& dev, const FrameworkBenchConfig& cfg, std::vector<std::string>& errors);

// The compile probe: realizes `kernels` distinct kernels whose constants carry `nonce` in one realize on `dev`, after
// a warm-up realize, and returns the realize's host time in ms (kernels compiled, loaded and run, completion
// included). Throws Error when the realize compiled another number of kernels than asked. What
// `hcq bench --compile-probe` runs in a new process for compile_ms.cached.
double compile_probe_ms(Device& dev, uint64_t nonce, int kernels);

// ---- the pieces (shared with benchmarks/framework_bench.cpp)

// An MLP 784-256-256-256-10 (Linear = x.matmul(w) + b, ReLU between), its parameters realized on `device`.
struct Mlp {
  static constexpr int64_t kBatch = 128;
  static constexpr int64_t kInputs = 784;
  std::vector<Tensor> weights, biases;
  explicit Mlp(const std::string& device);
  // The forward graph on `x` [kBatch, kInputs]; builds nodes only.
  Tensor forward(const Tensor& x) const;
  // A realized input of the right shape on new memory (so a graph on it is new, not one built before).
  Tensor new_input() const;
  std::string device;
};

// The yardstick of ewise_gbps: `c[i] = a[i] * b[i] + 1.0f` in HCQ C. On the CPU device one contiguous chunk per
// workgroup, one workgroup per worker (HCQ_CPU_THREADS, as the framework's kernels are split); on a GPU one element
// per thread, 256 threads per workgroup. Compiled by the
// device's compiler and submitted as the framework submits a realize's kernels (framework/engine/submit.cpp): a
// compute queue with the exec, Device::submit on the timeline, the queue kept instead of destroyed at once (a
// queue's destructor waits until the device has consumed it, which Program::launch would add to every launch).
class EwiseLoop {
 public:
  explicit EwiseLoop(Device& dev);
  ~EwiseLoop();
  // Submits c = a * b + 1 over n floats; returns without waiting. The previous launch's queue is destroyed here
  // (after the caller has waited for that launch, this costs nothing).
  void launch(const Buffer& c, const Buffer& a, const Buffer& b, uint32_t n);

 private:
  Device& dev_;
  bool gpu_;
  std::unique_ptr<Program> program_;
  std::unique_ptr<HWQueue> last_queue_;
  uint32_t workers_;
};

}  // namespace hcq::tool
