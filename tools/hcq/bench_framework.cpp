#include "bench_framework.hpp"

// The hw-tests bundle's `hcq` is linked without OpenBLAS (HCQ_TOOL_NO_OPENBLAS): its matmul has no yardstick there.
#if !HCQ_TOOL_NO_OPENBLAS
#include <cblas.h>
#endif
// oneDNN (HCQ_TOOL_ONEDNN, tools/meson.build) when the build found it: a second yardstick of the matmul figures.
#if HCQ_TOOL_ONEDNN
#include <dnnl.h>
#include <dnnl_debug.h>
#include <omp.h>
#endif

#include <algorithm>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <random>
#include <span>
#include <thread>

#include "framework/engine/compile.hpp"
#include "framework/engine/realize.hpp"
#include "framework/ir/node.hpp"
#include "framework/ir/ops.hpp"
#include "framework/schedule/kernel_cache.hpp"
#include "hcq/buffer.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/hw_queue.hpp"
#include "hcq/jit.hpp"
#include "hcq/knobs.hpp"
#include "hcq/program.hpp"
#include "stats.hpp"

namespace hcq::tool {
namespace {

using Clock = std::chrono::steady_clock;
double elapsed_us(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// Recomputing: equal lazy expressions are one node (framework/ir/node.hpp), and a node realized once stands for its
// buffer while a tensor holds it: `c = (a * b).realize()` again, with the previous `c` still alive, builds that same
// node and realizes nothing. Each timed repetition therefore drops the previous result first (outside the clock), so
// that the expression is built anew and computed.

// Relative error allowed between a float32 result and its double-precision reference: a dot product of 1024 terms
// in [0, 1) accumulates a few ulps per term whatever the summation order.
constexpr double kMatmulTolerance = 1e-4;
constexpr double kEwiseTolerance = 1e-6;

void check_close(double got, double want, double tolerance, const std::string& what) {
  if (!(std::abs(got - want) <= tolerance * std::max(1.0, std::abs(want)))) {
    throw Error(cat(what, ": got ", got, ", expected ", want, " (double-precision reference)"));
  }
}

// x = (x + 1).realize() on 16 floats: after the warm-up, each op is a schedule-cache hit, a new output buffer from
// the allocator's cache and one launch. Timed per repetition of eager_ops ops including the wait for the last.
double measure_eager_op(Device& dev, const FrameworkBenchConfig& cfg) {
  constexpr int64_t kElements = 16;
  Tensor x = Tensor::zeros({kElements}, dtypes::float32, dev.name()).realize();
  for (int i = 0; i < cfg.eager_warmup; ++i) x = (x + 1).realize();
  dev.synchronize();
  std::vector<double> per_op_us;
  for (int rep = 0; rep < cfg.eager_reps; ++rep) {
    const auto t0 = Clock::now();
    for (int i = 0; i < cfg.eager_ops; ++i) x = (x + 1).realize();
    dev.synchronize();
    per_op_us.push_back(elapsed_us(t0, Clock::now()) / cfg.eager_ops);
  }
  // Every op ran: each element counted them all (exact in float32 below 2^24).
  const double ops = cfg.eager_warmup + static_cast<double>(cfg.eager_reps) * cfg.eager_ops;
  for (float v : x.data<float>()) check_close(v, ops, 0, "x after the ops");
  return median(per_op_us);
}

struct ScheduleTimes {
  double miss_us, miss_cold_us, hit_us;
  size_t kernels;
};

// The MLP's forward graph scheduled (fw::schedule_only: callify, the cache lookup, and on a miss the schedule built,
// its kernels found in the kernel cache, framework/schedule/kernel_cache.hpp; cold: that cache cleared too, so each
// kernel is lowered, rendered and looked up in the in-process compile cache). Graph building is not timed.
ScheduleTimes measure_schedule(Device& dev, const FrameworkBenchConfig& cfg) {
  const Mlp mlp(dev.name());
  // One real run first: it compiles the kernels, so a miss below finds them in the compile cache.
  Tensor warm = mlp.forward(mlp.new_input()).realize();
  dev.synchronize();
  std::vector<double> miss, miss_cold, hit;
  size_t kernels = 0;
  for (int rep = 0; rep < cfg.schedule_reps; ++rep) {
    const Tensor miss_graph = mlp.forward(mlp.new_input());
    const Tensor hit_graph = mlp.forward(mlp.new_input());
    fw::clear_schedule_cache();
    fw::clear_kernel_cache();
    bool was_hit = true;
    auto t0 = Clock::now();
    kernels = fw::schedule_only({miss_graph.node()}, &was_hit);
    auto t1 = Clock::now();
    if (was_hit) throw Error("a schedule was found in the cache just cleared");
    miss_cold.push_back(elapsed_us(t0, t1));
    fw::clear_schedule_cache();  // the kernels stay in the kernel cache
    t0 = Clock::now();
    kernels = fw::schedule_only({miss_graph.node()}, &was_hit);
    t1 = Clock::now();
    if (was_hit) throw Error("a schedule was found in the cache just cleared");
    miss.push_back(elapsed_us(t0, t1));

    t0 = Clock::now();
    const size_t hit_kernels = fw::schedule_only({hit_graph.node()}, &was_hit);
    t1 = Clock::now();
    if (!was_hit) throw Error("an equal graph on new input buffers missed the schedule cache");
    if (hit_kernels != kernels) {
      throw Error(cat("the hit scheduled ", hit_kernels, " kernels, the miss ", kernels));
    }
    hit.push_back(elapsed_us(t0, t1));
  }
  return {median(miss), median(miss_cold), median(hit), kernels};
}

// Host copies of a realized float tensor.
std::vector<float> read_floats(const Tensor& t) { return t.data<float>(); }

// The memory behind a realized tensor (a BUFFER node, or a RESHAPE of one).
const Buffer& buffer_of(const Tensor& t) {
  const fw::Node& n = t.node();
  const fw::NodeData& buffer = n->op == fw::Op::RESHAPE ? *n->src[0] : *n;
  if (buffer.op != fw::Op::BUFFER || !buffer.payload) throw Error("the tensor is not a realized buffer");
  return *buffer.payload;
}

// c = a * b + 1 through the framework and through the hand-written loop, interleaved one of each per round so that
// memory bandwidth drifting during the run moves both; both write a buffer that is warm (the framework's output
// comes back from the allocator's cache after the first round).
void measure_ewise(Device& dev, const FrameworkBenchConfig& cfg, FrameworkBenchResult& r) {
  const int64_t n = cfg.ewise_elements;
  const uint64_t bytes = static_cast<uint64_t>(n) * sizeof(float);
  Tensor a = Tensor::rand({n}, dtypes::float32, dev.name()).realize();
  Tensor b = Tensor::rand({n}, dtypes::float32, dev.name()).realize();
  EwiseLoop loop(dev);
  Buffer loop_out(dev, bytes);
  const Buffer& a_buf = buffer_of(a);
  const Buffer& b_buf = buffer_of(b);

  Tensor c = (a * b + 1).realize();
  loop.launch(loop_out, a_buf, b_buf, static_cast<uint32_t>(n));
  dev.synchronize();

  const double moved = 3.0 * static_cast<double>(bytes);
  std::vector<double> framework_gbps, loop_gbps;
  for (int run = 0; run < cfg.ewise_runs; ++run) {
    c = Tensor();  // see "Recomputing" above
    auto t0 = Clock::now();
    c = (a * b + 1).realize();
    dev.synchronize();
    framework_gbps.push_back(moved / (elapsed_us(t0, Clock::now()) * 1e3));
    t0 = Clock::now();
    loop.launch(loop_out, a_buf, b_buf, static_cast<uint32_t>(n));
    dev.synchronize();
    loop_gbps.push_back(moved / (elapsed_us(t0, Clock::now()) * 1e3));
  }

  // Both computed a * b + 1: checked against double precision at every element.
  const std::vector<float> av = read_floats(a), bv = read_floats(b), cv = read_floats(c);
  std::vector<float> lv(static_cast<size_t>(n));
  loop_out.copyout(std::span<float>(lv));
  for (size_t i = 0; i < av.size(); ++i) {
    const double want = static_cast<double>(av[i]) * bv[i] + 1.0;
    if (std::abs(cv[i] - want) > kEwiseTolerance * want || std::abs(lv[i] - want) > kEwiseTolerance * want) {
      throw Error(cat("element ", i, ": framework ", cv[i], ", loop ", lv[i], ", expected ", want));
    }
  }
  r.ewise_gbps = median(framework_gbps);
  r.ewise_loop_gbps = median(loop_gbps);
  r.ewise_elements = n;
}

// Row `row` of a @ b (a [m, k], b [k, n], row-major) in double precision.
std::vector<double> reference_row(const std::vector<float>& a, const std::vector<float>& b, const MatmulShape& s,
                                  int64_t row) {
  std::vector<double> out(static_cast<size_t>(s.n), 0.0);
  for (int64_t k = 0; k < s.k; ++k) {
    const double aik = a[static_cast<size_t>(row * s.k + k)];
    for (int64_t j = 0; j < s.n; ++j) out[static_cast<size_t>(j)] += aik * b[static_cast<size_t>(k * s.n + j)];
  }
  return out;
}

// The first, middle and last rows of a product against double precision.
void check_rows(const std::vector<float>& got, const std::vector<float>& a, const std::vector<float>& b,
                const MatmulShape& s, double tolerance, const std::string& what) {
  for (int64_t row : {int64_t{0}, s.m / 2, s.m - 1}) {
    const std::vector<double> want = reference_row(a, b, s, row);
    for (int64_t j = 0; j < s.n; ++j) {
      check_close(got[static_cast<size_t>(row * s.n + j)], want[static_cast<size_t>(j)], tolerance,
                  cat(what, " ", s.key, " [", row, ", ", j, "]"));
    }
  }
}

// Seconds per call of `fn`, the median of at least `min_runs` timed calls, more while they take under `budget_s`
// (the first timed call says how long one takes); `before` runs ahead of each, untimed. `fn` has been called once
// already (warm).
template <class Before, class Fn>
double median_seconds(Before&& before, Fn&& fn, int min_runs, double budget_s) {
  std::vector<double> seconds;
  auto once = [&] {
    before();
    const auto t0 = Clock::now();
    fn();
    seconds.push_back(elapsed_us(t0, Clock::now()) / 1e6);
  };
  once();
  const int runs = std::clamp(static_cast<int>(budget_s / std::max(seconds[0], 1e-9)), min_runs, 1001);
  while (std::ssize(seconds) < runs) once();
  return median(seconds);
}

// A realized [rows, cols] operand of `dtype` with values in [0, 1), and its host copy as float.
struct Operand {
  Tensor t;
  std::vector<float> host;
};
// A float32 or bfloat16 tensor's values as floats.
std::vector<float> floats_of(const Tensor& t) {
  if (t.dtype() != dtypes::bfloat16) return t.data<float>();
  std::vector<float> out;
  for (bfloat16_t v : t.data<bfloat16_t>()) out.push_back(v.to_float());
  return out;
}

Operand random_operand(Device& dev, int64_t rows, int64_t cols, DType dtype) {
  Tensor t = Tensor::rand({rows, cols}, dtypes::float32, dev.name());
  if (dtype != dtypes::float32) t = t.cast(dtype);
  t = t.realize();
  return {t, floats_of(t)};
}

// The products' operands on the host, kept for the yardsticks after every framework product ran.
struct Product {
  MatmulShape shape;
  std::vector<float> a, b;
};

// Each shape's product through Tensor::matmul on `dtype` operands (realized first; only the product's realize and
// its completion timed), checked against double precision; returns the operands for the yardsticks.
std::vector<Product> measure_framework_matmuls(Device& dev, const FrameworkBenchConfig& cfg,
                                               const std::vector<MatmulShape>& shapes, DType dtype,
                                               std::vector<FrameworkBenchResult::Matmul>& out,
                                               std::vector<std::string>& errors) {
  // bfloat16: the products are exact in float32 and summed there, the result rounded to bfloat16 once (8 significant
  // bits: 2^-9 relative), with some slack.
  const double tolerance = dtype == dtypes::bfloat16 ? 1e-2 : kMatmulTolerance;
  const char* figure = dtype == dtypes::bfloat16 ? "bf16_gflops" : "matmul_gflops";
  std::vector<Product> products;
  for (const MatmulShape& s : shapes) {
    out.push_back({s});
    try {
      const Operand a = random_operand(dev, s.m, s.k, dtype), b = random_operand(dev, s.k, s.n, dtype);
      Tensor c = a.t.matmul(b.t).realize();  // compiles the kernel
      dev.synchronize();
      const double seconds = median_seconds([&] { c = Tensor(); },  // see "Recomputing" above
                                            [&] {
                                              c = a.t.matmul(b.t).realize();
                                              dev.synchronize();
                                            },
                                            cfg.matmul_runs, cfg.matmul_budget_s);
      check_rows(floats_of(c), a.host, b.host, s, tolerance, cat("Tensor::matmul (", figure, ")"));
      out.back().framework = s.flops() / seconds / 1e9;
      products.push_back({s, a.host, b.host});
    } catch (const std::exception& e) {
      errors.push_back(cat("framework ", figure, " ", s.key, ": ", e.what()));
    }
  }
  return products;
}

// The figures of `s`'s product (unused in a build with neither library: the hw-tests bundle's).
[[maybe_unused]] FrameworkBenchResult::Matmul& figures_of(std::vector<FrameworkBenchResult::Matmul>& all,
                                                          const MatmulShape& s) {
  for (FrameworkBenchResult::Matmul& m : all)
    if (m.shape.key == s.key) return m;
  throw Error(cat("no figures for the product ", s.key));
}

#if !HCQ_TOOL_NO_OPENBLAS
// cblas_sgemm on the same operands, on as many threads as the CPU device has workers.
void measure_openblas(const FrameworkBenchConfig& cfg, const std::vector<Product>& products,
                      std::vector<FrameworkBenchResult::Matmul>& out) {
  openblas_set_num_threads(static_cast<int>(knobs::cpu_threads()));
  for (const Product& p : products) {
    const MatmulShape& s = p.shape;
    std::vector<float> c(static_cast<size_t>(s.m * s.n));
    auto sgemm = [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.m), static_cast<int>(s.n),
                  static_cast<int>(s.k), 1.0f, p.a.data(), static_cast<int>(s.k), p.b.data(), static_cast<int>(s.n),
                  0.0f, c.data(), static_cast<int>(s.n));
    };
    sgemm();  // OpenBLAS starts its threads on the first call
    const double seconds = median_seconds([] {}, sgemm, cfg.sgemm_runs, cfg.matmul_budget_s);
    check_rows(c, p.a, p.b, s, kMatmulTolerance, "cblas_sgemm");
    figures_of(out, s).openblas = s.flops() / seconds / 1e9;
  }
}
#endif

#if HCQ_TOOL_ONEDNN
// oneDNN's status as an Error with the call that returned it.
void onednn_check(dnnl_status_t status, const char* call) {
  if (status != dnnl_success) throw Error(cat("oneDNN ", call, ": ", dnnl_status2str(status)));
}

// oneDNN's CPU engine and a stream on it, for every product of one measurement.
struct OnednnContext {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  OnednnContext() {
    onednn_check(dnnl_engine_create(&engine, dnnl_cpu, 0), "dnnl_engine_create");
    onednn_check(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags), "dnnl_stream_create");
  }
  ~OnednnContext() {
    if (stream) dnnl_stream_destroy(stream);
    if (engine) dnnl_engine_destroy(engine);
  }
  OnednnContext(const OnednnContext&) = delete;
  OnednnContext& operator=(const OnednnContext&) = delete;
};

// One matmul primitive, row-major (plain "ab") operands as the framework's, float32 output; the primitive and its
// memory objects made here, once, so run() times the product alone.
class OnednnMatmul {
 public:
  OnednnMatmul(OnednnContext& ctx, const MatmulShape& s, dnnl_data_type_t in_type, void* a, void* b, float* c)
      : ctx_(ctx) {
    dnnl_memory_desc_t a_md, b_md, c_md;
    const dnnl_dims_t a_dims{s.m, s.k}, b_dims{s.k, s.n}, c_dims{s.m, s.n};
    onednn_check(dnnl_memory_desc_init_by_tag(&a_md, 2, a_dims, in_type, dnnl_ab), "dnnl_memory_desc_init_by_tag");
    onednn_check(dnnl_memory_desc_init_by_tag(&b_md, 2, b_dims, in_type, dnnl_ab), "dnnl_memory_desc_init_by_tag");
    onednn_check(dnnl_memory_desc_init_by_tag(&c_md, 2, c_dims, dnnl_f32, dnnl_ab), "dnnl_memory_desc_init_by_tag");
    dnnl_matmul_desc_t desc;
    onednn_check(dnnl_matmul_desc_init(&desc, &a_md, &b_md, nullptr, &c_md), "dnnl_matmul_desc_init");
    onednn_check(dnnl_primitive_desc_create(&pd_, &desc, nullptr, ctx.engine, nullptr), "dnnl_primitive_desc_create");
    const char* impl = nullptr;
    if (dnnl_primitive_desc_query(pd_, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl) impl_ = impl;
    onednn_check(dnnl_primitive_create(&primitive_, pd_), "dnnl_primitive_create");
    onednn_check(dnnl_memory_create(&a_, &a_md, ctx.engine, a), "dnnl_memory_create");
    onednn_check(dnnl_memory_create(&b_, &b_md, ctx.engine, b), "dnnl_memory_create");
    onednn_check(dnnl_memory_create(&c_, &c_md, ctx.engine, c), "dnnl_memory_create");
  }
  ~OnednnMatmul() {
    for (dnnl_memory_t m : {a_, b_, c_})
      if (m) dnnl_memory_destroy(m);
    if (primitive_) dnnl_primitive_destroy(primitive_);
    if (pd_) dnnl_primitive_desc_destroy(pd_);
  }
  OnednnMatmul(const OnednnMatmul&) = delete;
  OnednnMatmul& operator=(const OnednnMatmul&) = delete;

  void run() {
    const dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, a_}, {DNNL_ARG_WEIGHTS, b_}, {DNNL_ARG_DST, c_}};
    onednn_check(dnnl_primitive_execute(primitive_, ctx_.stream, 3, args), "dnnl_primitive_execute");
    onednn_check(dnnl_stream_wait(ctx_.stream), "dnnl_stream_wait");
  }
  const std::string& impl() const { return impl_; }

 private:
  OnednnContext& ctx_;
  dnnl_primitive_desc_t pd_ = nullptr;
  dnnl_primitive_t primitive_ = nullptr;
  dnnl_memory_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  std::string impl_;
};

// oneDNN's matmul on the same operands (bfloat16: their bits, which are exactly the floats in `a` and `b`), on as
// many OpenMP threads as the CPU device has workers. Returns the implementation oneDNN chose for the "1024" key.
std::string measure_onednn(const FrameworkBenchConfig& cfg, const std::vector<Product>& products, bool bf16,
                           std::vector<FrameworkBenchResult::Matmul>& out) {
  omp_set_num_threads(static_cast<int>(knobs::cpu_threads()));
  OnednnContext ctx;
  std::string impl_1024;
  for (const Product& p : products) {
    const MatmulShape& s = p.shape;
    std::vector<float> a = p.a, b = p.b, c(static_cast<size_t>(s.m * s.n));
    std::vector<uint16_t> a16, b16;
    if (bf16) {  // the floats came from bfloat16: their top halves are the bfloat16 bits
      for (float v : a) a16.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16));
      for (float v : b) b16.push_back(static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16));
    }
    OnednnMatmul mm(ctx, s, bf16 ? dnnl_bf16 : dnnl_f32, bf16 ? static_cast<void*>(a16.data()) : a.data(),
                    bf16 ? static_cast<void*>(b16.data()) : b.data(), c.data());
    mm.run();  // the threads started, the operands in the caches as for the others
    const double seconds = median_seconds([] {}, [&] { mm.run(); }, cfg.sgemm_runs, cfg.matmul_budget_s);
    // Exact products of bfloat16 operands, accumulated in float32: as close as float32's.
    check_rows(c, p.a, p.b, s, bf16 ? 1e-3 : kMatmulTolerance, bf16 ? "oneDNN bf16 matmul" : "oneDNN matmul");
    figures_of(out, s).onednn = s.flops() / seconds / 1e9;
    if (s.key == "1024") impl_1024 = mm.impl();
  }
  return impl_1024;
}
#endif

// The yardstick of sum_gbps: the floats in [lo, hi) summed with kLanes independent float accumulators (one SIMD
// register's worth several times over, so the compiler vectorises the inner loop without reassociating anything),
// folded into a double every kBlock elements so that float32's rounding stays small over millions of terms.
double sum_range(const float* p, size_t lo, size_t hi) {
  constexpr size_t kLanes = 32, kBlock = size_t{1} << 14;
  double total = 0;
  size_t i = lo;
  while (i + kLanes <= hi) {
    float acc[kLanes] = {};
    const size_t block_end = std::min(hi, i + kBlock);
    for (; i + kLanes <= block_end; i += kLanes)
      for (size_t j = 0; j < kLanes; ++j) acc[j] += p[i + j];
    for (float v : acc) total += v;
  }
  for (; i < hi; ++i) total += p[i];
  return total;
}

// The loop split into `threads` contiguous chunks, one std::thread each (started per call, as the measurement
// includes them: tens of microseconds against milliseconds of reading).
double sum_loop(const std::vector<float>& x, unsigned threads) {
  std::vector<double> partial(threads);
  std::vector<std::thread> pool;
  const size_t chunk = (x.size() + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const size_t lo = std::min(x.size(), t * chunk), hi = std::min(x.size(), lo + chunk);
      partial[t] = sum_range(x.data(), lo, hi);
    });
  }
  for (std::thread& th : pool) th.join();
  double total = 0;
  for (double v : partial) total += v;
  return total;
}

// A full sum through Tensor::sum (input realized; the reduce's realize and its completion timed) and the hand-written
// loop over a host copy of the same floats, one of each per round.
void measure_sum(Device& dev, const FrameworkBenchConfig& cfg, FrameworkBenchResult& r) {
  const int64_t n = cfg.sum_elements;
  const Tensor x = Tensor::rand({n}, dtypes::float32, dev.name()).realize();
  const std::vector<float> host = read_floats(x);
  const unsigned threads = std::max(1u, knobs::cpu_threads());
  Tensor s = x.sum().realize();  // compiles the kernel
  dev.synchronize();
  double loop_total = sum_loop(host, threads);
  const double bytes = static_cast<double>(n) * sizeof(float);
  std::vector<double> framework_gbps, loop_gbps;
  for (int run = 0; run < cfg.sum_runs; ++run) {
    s = Tensor();  // see "Recomputing" above
    auto t0 = Clock::now();
    s = x.sum().realize();
    dev.synchronize();
    framework_gbps.push_back(bytes / (elapsed_us(t0, Clock::now()) * 1e3));
    t0 = Clock::now();
    loop_total = sum_loop(host, threads);
    loop_gbps.push_back(bytes / (elapsed_us(t0, Clock::now()) * 1e3));
  }
  double want = 0;
  for (float v : host) want += v;
  // The loop keeps a double per 16K elements: float32 rounding over 512 terms per lane. The framework's reduce
  // accumulates in float32 over however many terms its kernel gives each accumulator: 1e-3 of the total.
  check_close(loop_total, want, 1e-6, "the sum loop");
  check_close(s.item(), want, 1e-3, "Tensor::sum");
  r.sum_gbps = median(framework_gbps);
  r.sum_loop_gbps = median(loop_gbps);
  r.sum_elements = n;
}

// The probe's kernels: out_k = x * (1 + k / 64) + c_k, with c_k an integer below 2^24 made of the nonce and k, so
// exact in float32 and distinct between kernels and (but for one chance in 4 million) between nonces: the rendered
// sources differ, and no cache has seen them.
std::vector<Tensor> probe_kernels(const Tensor& x, uint64_t nonce, int kernels) {
  std::vector<Tensor> out;
  const double base = static_cast<double>((nonce % 4'000'000) * 4);
  for (int k = 0; k < kernels; ++k) out.push_back(x * (1.0 + k / 64.0) + (base + k));
  return out;
}

// A new process's compile probe on the same device and nonce: its kernels come from the disk cache.
double cached_probe_ms(const Device& dev, const FrameworkBenchConfig& cfg, uint64_t nonce) {
  // The shell popen starts would read /proc/self/exe as its own: the path is resolved here.
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink(cfg.self_exe, ec);
  const std::string self = ec ? cfg.self_exe : exe.string();
  const std::string command = cat("HCQ_CACHE_DIR='", knobs::cache_dir(), "' '", self, "' bench --device '", dev.name(),
                                  "' --compile-probe ", nonce, " ", cfg.compile_kernels, " 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) throw Error(cat("cannot start the compile probe: ", command));
  std::string output;
  char chunk[512];
  while (std::fgets(chunk, sizeof chunk, pipe)) output += chunk;
  const int status = ::pclose(pipe);
  double ms = 0;
  const size_t at = output.rfind("compile_probe_ms ");
  if (status != 0 || at == std::string::npos || std::sscanf(output.c_str() + at, "compile_probe_ms %lf", &ms) != 1)
    throw Error(cat("the compile probe (", command, ") failed with status ", status, ": ", output));
  return ms;
}

// compile_ms: cold in parallel (one realize), cold one kernel per realize, cached in a new process.
void measure_compile(Device& dev, const FrameworkBenchConfig& cfg, FrameworkBenchResult& r) {
  if (knobs::assert_compile()) {
    r.compile_unavailable = "HCQ_ASSERT_COMPILE=1 refuses the new kernels a cold compile needs";
    return;
  }
  // The throwaway kernels go to a scratch cache of their own, removed afterwards, not into the user's (or a
  // hw-tests bundle's) cache, where nothing would ever read them again.
  char scratch[] = "/tmp/hcq-bench-compile-XXXXXX";
  if (::mkdtemp(scratch) == nullptr)
    throw Error(cat("compile_ms: cannot make a scratch cache directory: ", std::strerror(errno)));
  struct Scratch {
    std::string dir;
    explicit Scratch(std::string d) : dir(std::move(d)) { knobs::override_cache_dir(dir); }
    ~Scratch() {
      knobs::override_cache_dir({});
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } scratch_cache(scratch);
  std::random_device rd;
  const uint64_t nonce = (uint64_t{rd()} << 32) | rd();
  const int n = cfg.compile_kernels;
  r.compile_cold_ms = compile_probe_ms(dev, nonce, n) / n;
  // The serial figure: as many new kernels (another nonce), one realize each.
  const Tensor x = Tensor::rand({1024}, dtypes::float32, dev.name()).realize();
  const std::vector<Tensor> serial = probe_kernels(x, nonce + 1, n);
  const uint64_t before = fw::kernels_compiled();
  const auto t0 = Clock::now();
  for (Tensor t : serial) t.realize();
  dev.synchronize();
  r.compile_cold_serial_ms = elapsed_us(t0, Clock::now()) / 1e3 / n;
  if (fw::kernels_compiled() - before != static_cast<uint64_t>(n))
    throw Error(cat("the serial realizes compiled ", fw::kernels_compiled() - before, " kernels, expected ", n));
  r.compile_kernels = static_cast<size_t>(n);
  if (!cfg.self_exe.empty()) r.compile_cached_ms = cached_probe_ms(dev, cfg, nonce) / n;
}

// The function the jit figure calls: n independent kernels x + k (k = 1..n), realized in one schedule inside, the
// last returned (the others are intermediates the JIT keeps).
std::vector<Tensor> n_kernels(const std::vector<Tensor>& in, int n) {
  std::vector<Tensor> t;
  for (int k = 1; k <= n; ++k) t.push_back(in[0] + static_cast<float>(k));
  Tensor::realize(t);
  return {t.back()};
}

// Least-squares line through (x, y): {intercept, slope}.
std::pair<double, double> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  double mean_x = 0, mean_y = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    mean_x += x[k];
    mean_y += y[k];
  }
  mean_x /= static_cast<double>(x.size());
  mean_y /= static_cast<double>(y.size());
  double sxy = 0, sxx = 0;
  for (size_t k = 0; k < x.size(); ++k) {
    sxy += (x[k] - mean_x) * (y[k] - mean_y);
    sxx += (x[k] - mean_x) * (x[k] - mean_x);
  }
  const double slope = sxy / sxx;
  return {mean_y - slope * mean_x, slope};
}

// TinyJit's host time per call (calls 2+, replays) against the same function called eagerly, per size N, in
// interleaved rounds (a slow spell of the shared machine lands on every size and on both alike); the device is
// waited for before each timed call, outside the clock. Within a round the jitted calls come in a row, as a
// training loop makes them, and the eager ones after: an eager call's host work after its submission (releasing
// its intermediates) can outlast a simulated GPU's idle poll, and a replay right after it would pay for waking the
// simulator's thread, which a GPU's doorbell (a store) never costs.
void measure_jit(Device& dev, const FrameworkBenchConfig& cfg, FrameworkBenchResult& r) {
  const std::vector<int>& sizes = cfg.jit_sizes;
  if (sizes.size() < 2 || std::ranges::count(sizes, sizes.front()) == std::ssize(sizes) ||
      std::ranges::min(sizes) < 1 || cfg.jit_runs < 1 || cfg.jit_rounds < 1)
    throw InvalidArgument("jit bench: at least two different sizes >= 1, runs and rounds >= 1");
  const Tensor x = Tensor::zeros({16}, dtypes::float32, dev.name()).realize();
  struct Case {
    int n;
    std::unique_ptr<TinyJit> jit;
    std::vector<double> jit_us, eager_us;
  };
  std::vector<Case> cases;
  for (int n : sizes)
    cases.push_back(
        Case{n, std::make_unique<TinyJit>([n](const std::vector<Tensor>& in) { return n_kernels(in, n); }), {}, {}});
  // Untimed: compiled, scheduled, captured (calls 0 and 1), the schedules cached, buffers in the allocator's cache.
  for (Case& c : cases)
    for (int i = 0; i < 5; ++i) {
      (void)(*c.jit)({x});
      (void)n_kernels({x}, c.n);
    }
  dev.synchronize();
  auto timed = [&](std::vector<double>& samples, auto&& call) {
    dev.synchronize();
    const auto t0 = Clock::now();
    std::vector<Tensor> out = call();
    samples.push_back(elapsed_us(t0, Clock::now()));
    return out;
  };
  const int rounds = std::min(cfg.jit_rounds, cfg.jit_runs);
  for (int round = 0; round < rounds; ++round) {
    const int count = cfg.jit_runs / rounds + (round < cfg.jit_runs % rounds ? 1 : 0);
    for (Case& c : cases) {
      for (int i = 0; i < count; ++i) {
        std::vector<Tensor> replayed = timed(c.jit_us, [&] { return (*c.jit)({x}); });
        if (round == 0 && i == 0)  // x + n, every element n
          for (float v : replayed[0].data<float>()) check_close(v, c.n, 0, cat("jit of ", c.n, " kernels"));
      }
      for (int i = 0; i < count; ++i) {
        std::vector<Tensor> eager = timed(c.eager_us, [&] { return n_kernels({x}, c.n); });
        if (round == 0 && i == 0)
          for (float v : eager[0].data<float>()) check_close(v, c.n, 0, cat("eager ", c.n, " kernels"));
      }
    }
  }
  dev.synchronize();
  std::vector<double> ns, jit_us, eager_us;
  for (const Case& c : cases) {
    ns.push_back(c.n);
    jit_us.push_back(median(c.jit_us));
    eager_us.push_back(median(c.eager_us));
  }
  const auto [fixed_us, per_kernel_us] = fit_line(ns, jit_us);
  r.jit_fixed_us = fixed_us;
  r.jit_per_kernel_ns = per_kernel_us * 1e3;
  r.jit_eager_per_kernel_ns = fit_line(ns, eager_us).second * 1e3;
}

template <class Fn>
void attempt(std::vector<std::string>& errors, const char* what, Fn&& measure) {
  try {
    measure();
  } catch (const std::exception& e) {
    errors.push_back(cat("framework ", what, ": ", e.what()));
  }
}

constexpr const char* kEwiseLoopSource =
    "HCQ_KERNEL(ewise_loop, 3, 1) {\n"
    "  float* restrict c = HCQ_BUF(float, 0);\n"
    "  const float* restrict a = HCQ_BUF(float, 1);\n"
    "  const float* restrict b = HCQ_BUF(float, 2);\n"
    "  const uint64_t n = HCQ_VAL(0);\n"
    "  const uint64_t chunk = (n + HCQ_NUM_GROUPS(0) - 1) / HCQ_NUM_GROUPS(0);\n"
    "  const uint64_t lo = HCQ_GROUP_ID(0) * chunk < n ? HCQ_GROUP_ID(0) * chunk : n;\n"
    "  const uint64_t hi = lo + chunk < n ? lo + chunk : n;\n"
    "  for (uint64_t i = lo; i < hi; ++i) c[i] = a[i] * b[i] + 1.0f;\n"
    "}\n";

// The yardstick on a GPU: one element per thread, 256 threads per workgroup.
constexpr const char* kEwiseThreadSource =
    "HCQ_KERNEL(ewise_thread, 3, 1) {\n"
    "  HCQ_FOR_EACH_THREAD(x, y, z) {\n"
    "    const uint32_t i = HCQ_GLOBAL_ID(0, x);\n"
    "    if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(const float, 1)[i] * HCQ_BUF(const float, 2)[i] + 1.0f;\n"
    "  }\n"
    "}\n";
constexpr uint32_t kEwiseThreadsPerGroup = 256;

}  // namespace

Mlp::Mlp(const std::string& dev) : device(dev) {
  const std::vector<int64_t> widths{kInputs, 256, 256, 256, 10};
  for (size_t k = 0; k + 1 < widths.size(); ++k) {
    weights.push_back(Tensor::rand({widths[k], widths[k + 1]}, dtypes::float32, device).realize());
    biases.push_back(Tensor::rand({widths[k + 1]}, dtypes::float32, device).realize());
  }
}

Tensor Mlp::forward(const Tensor& x) const {
  Tensor h = x;
  for (size_t k = 0; k < weights.size(); ++k) {
    h = h.matmul(weights[k]) + biases[k];
    if (k + 1 < weights.size()) h = h.relu();
  }
  return h;
}

Tensor Mlp::new_input() const {
  return Tensor(std::vector<float>(static_cast<size_t>(kBatch * kInputs), 0.5f), {kBatch, kInputs}, device);
}

EwiseLoop::EwiseLoop(Device& dev)
    : dev_(dev),
      gpu_(dev.info().interface != "cpu"),
      program_(gpu_ ? dev.load_program("ewise_thread", dev.compiler().compile_cached(kEwiseThreadSource))
                    : dev.load_program("ewise_loop", dev.compiler().compile_cached(kEwiseLoopSource))),
      workers_(knobs::cpu_threads()) {}

EwiseLoop::~EwiseLoop() = default;

void EwiseLoop::launch(const Buffer& c, const Buffer& a, const Buffer& b, uint32_t n) {
  const LaunchArgs args{{Sym(c.va()), Sym(a.va()), Sym(b.va())}, {Sym(n)}};
  const uint32_t groups = gpu_ ? (n + kEwiseThreadsPerGroup - 1) / kEwiseThreadsPerGroup : workers_;
  const uint32_t threads = gpu_ ? kEwiseThreadsPerGroup : 1;
  const Dims global{Sym(groups), Sym(1), Sym(1)}, local{Sym(threads), Sym(1), Sym(1)};
  std::unique_ptr<HWQueue> queue = dev_.compute_queue();
  dev_.submit(*queue, [&](HWQueue& q) { q.exec(*program_, args, global, local); });
  last_queue_ = std::move(queue);
}

double compile_probe_ms(Device& dev, uint64_t nonce, int kernels) {
  const Tensor x = Tensor::rand({1024}, dtypes::float32, dev.name()).realize();
  (void)(x + 1).realize();  // the device, its queues and the engine started; a kernel that is no probe's
  dev.synchronize();
  std::vector<Tensor> outs = probe_kernels(x, nonce, kernels);
  const uint64_t before = fw::kernels_compiled();
  const auto t0 = Clock::now();
  Tensor::realize(outs);
  dev.synchronize();
  const double ms = elapsed_us(t0, Clock::now()) / 1e3;
  if (fw::kernels_compiled() - before != static_cast<uint64_t>(kernels))
    throw Error(cat("the probe's realize compiled ", fw::kernels_compiled() - before, " kernels, expected ", kernels));
  // Each output is x * (1 + k / 64) + c_k: checked at one element against double precision.
  const std::vector<float> xv = read_floats(x);
  for (int k = 0; k < kernels; ++k) {
    const double c = static_cast<double>((nonce % 4'000'000) * 4 + static_cast<uint64_t>(k));
    check_close(read_floats(outs[static_cast<size_t>(k)])[7], xv[7] * (1.0 + k / 64.0) + c, kEwiseTolerance,
                cat("probe kernel ", k));
  }
  return ms;
}

FrameworkBenchResult measure_framework(Device& dev, const FrameworkBenchConfig& base_cfg,
                                       std::vector<std::string>& errors) {
  FrameworkBenchResult r;
  const std::string interface = dev.info().interface;
  const bool simulated = interface == "sim-kfd" || interface == "sim-rm";
  const FrameworkBenchConfig cfg = simulated ? base_cfg.for_simulated() : base_cfg;
  attempt(errors, "eager_op_us", [&] { r.eager_op_us = measure_eager_op(dev, cfg); });
  attempt(errors, "schedule_us", [&] {
    const ScheduleTimes t = measure_schedule(dev, cfg);
    r.schedule_miss_us = t.miss_us;
    r.schedule_miss_cold_us = t.miss_cold_us;
    r.schedule_hit_us = t.hit_us;
    r.schedule_kernels = t.kernels;
  });
  attempt(errors, "ewise_gbps", [&] { measure_ewise(dev, cfg, r); });
  // Every framework product first, then each library on the same operands (see measure_openblas).
  std::vector<Product> fp32 = measure_framework_matmuls(dev, cfg, cfg.matmul_shapes, dtypes::float32, r.matmul, errors);
  if (interface == "cpu" && !cfg.beam_shapes.empty()) {
    // The first realize of each product searches (not timed); its schedule must be built anew, not found in the
    // cache from the same product measured above.
    fw::clear_schedule_cache();
    knobs::override_beam(cfg.beam_width);
    try {
      for (Product& p : measure_framework_matmuls(dev, cfg, cfg.beam_shapes, dtypes::float32, r.matmul, errors))
        fp32.push_back(std::move(p));
    } catch (...) {
      knobs::override_beam(std::nullopt);
      throw;
    }
    knobs::override_beam(std::nullopt);
  }
  const std::vector<Product> bf16 =
      measure_framework_matmuls(dev, cfg, cfg.bf16_shapes, dtypes::bfloat16, r.bf16, errors);
  attempt(errors, "sum_gbps", [&] { measure_sum(dev, cfg, r); });
#if HCQ_TOOL_NO_OPENBLAS
  r.openblas_unavailable = "this hcq is built without OpenBLAS";
#else
  attempt(errors, "openblas_gflops", [&] { measure_openblas(cfg, fp32, r.matmul); });
#endif
#if HCQ_TOOL_ONEDNN
  attempt(errors, "onednn_gflops", [&] { r.onednn_impl = measure_onednn(cfg, fp32, false, r.matmul); });
  attempt(errors, "onednn_bf16_gflops", [&] { r.onednn_bf16_impl = measure_onednn(cfg, bf16, true, r.bf16); });
#else
  r.onednn_unavailable = "this hcq is built without oneDNN (libdnnl-dev, scripts/setup.sh)";
#endif
  attempt(errors, "compile_ms", [&] { measure_compile(dev, cfg, r); });
  attempt(errors, "jit", [&] { measure_jit(dev, cfg, r); });
  return r;
}

}  // namespace hcq::tool
