// `hcq bench`: the host-side costs a user of hcq pays, per device, each beside the target it is held to.
//   launch_us    an empty kernel launched eagerly (Program::operator(): build a queue, submit) until the host sees
//                its timeline value; median and p99 after warm-up. launch_bound_us is the same round trip for a
//                bound queue resubmitted with the timeline values patched: the path a replayed graph takes.
//   enqueue_ns   host cost per command: (a) building a fresh queue and submitting it, (b) resubmitting a bound
//                queue with every variable changed. Completion is awaited outside the timed region.
//   encode_ns    host time to build (not submit) one complete kernel launch, wait + memory_barrier + exec + signal,
//                on a fresh queue each time (creating it included); median over batches (the GPU encoders' budget:
//                <= 200 ns).
//   copy_gbps    64 MiB host->device, device->host, device->device through Buffer and the device's allocator,
//                next to memcpy_gbps: a plain host memcpy of the same size in the same run, the yardstick.
//   framework    the framework's costs on each device, each beside its yardstick, and its compile times
//                (bench_framework.hpp).
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bench_framework.hpp"
#include "bench_graph.hpp"
#include "bench_kernels.hpp"
#include "bench_multi.hpp"
#include "bench_train.hpp"
#include "commands.hpp"
#include "cuda_compare.hpp"
#include "format.hpp"
#include "hcq/buffer.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/hw_queue.hpp"
#include "hcq/program.hpp"
#include "hcq/registry.hpp"
#include "json_writer.hpp"
#include "stats.hpp"

namespace hcq::tool {
namespace {

constexpr const char* kBenchHelp =
    "usage: hcq bench [--device D] [--json] [--quick]\n"
    "       hcq bench --step-kernels N --device D\n"
    "\n"
    "Measures, on every device that opens (or only on D):\n"
    "  launch_us    empty kernel, eager launch to completion seen by the host: median and p99\n"
    "               (launch_bound_us: the same through a bound queue with patched timeline values)\n"
    "  enqueue_ns   host cost per command: fresh queue (build + submit), bound queue resubmitted with patched\n"
    "               variables\n"
    "  encode_ns    host time to build one complete launch (wait + memory_barrier + exec + signal) on a fresh\n"
    "               queue, not submitted\n"
    "  copy_gbps    64 MiB h2d, d2h, d2d through Buffer, each beside memcpy_gbps (host memcpy, same run)\n"
    "  graph        host time of one replay of an N-kernel graph with changed input addresses, for N = 16, 64\n"
    "               and 256 replayed in interleaved rounds; per N the median of 400 replays (replay_us), and\n"
    "               through those medians a least-squares line: fixed_us + N * per_kernel_ns. Beside it\n"
    "               eager_per_kernel_ns: the 256 calls launched eagerly, per call\n"
    "  cuda_launch_us on a real NVIDIA GPU (NV:n) with libcuda.so.1: CUDA's cuLaunchKernel + cuStreamSynchronize of\n"
    "               the same cubin, timed like launch_us in the same run (absent elsewhere; the table says why)\n"
    "  framework    the framework (hcq::Tensor) on the CPU device, each figure beside its yardstick:\n"
    "               eager_op_us      x = (x + 1).realize() on 16 floats, per op, median of repetitions of 1000\n"
    "               schedule_us      scheduling an MLP 784-256-256-256-10 forward at batch 128: miss (schedule\n"
    "                                cache cleared, kernels compiled already and in the kernel cache),\n"
    "                                miss_cold (the kernel cache cleared too) and hit (equal graph, new inputs)\n"
    "               ewise_gbps       c = a * b + 1 on 64M floats (3 * 4 bytes each), beside ewise_loop_gbps: a\n"
    "                                hand-written HCQ C kernel on the device's workers, same compiler and launch\n"
    "               matmul_gflops    {64, 256, 1024, 2048, mlp, mlp_out}: float32 products through Tensor::matmul\n"
    "                                (n^3; mlp 128x784 by 784x128, mlp_out 128x128 by 128x10), beside\n"
    "                                openblas_gflops (cblas_sgemm) and onednn_gflops (oneDNN's matmul), on the\n"
    "                                CPU device's number of threads, run after the framework's; matmul_shapes\n"
    "               bf16_gflops      {1024, 2048}: bfloat16 through Tensor::matmul, beside onednn_bf16_gflops\n"
    "                                (oneDNN bf16 x bf16 -> f32); bf16_shapes\n"
    "               sum_gbps         Tensor::sum of 64M floats (4 bytes each read), beside sum_loop_gbps: a\n"
    "                                vectorised C++ loop on the CPU device's number of threads; a yardstick\n"
    "                                not built in is null and \"yardsticks_unavailable\" says why\n"
    "               compile_ms       per kernel: cold (20 new kernels in one realize, compiled in parallel),\n"
    "                                cached (the same realize in a new process: the disk cache serves them),\n"
    "                                cold_serial (20 new kernels, one realize each), parallel_speedup\n"
    "                                (cold_serial / cold), kernels (20); loading included; with\n"
    "                                HCQ_ASSERT_COMPILE=1 null, and \"unavailable\" says why\n"
    "               jit              {per_kernel_ns, fixed_us, eager_per_kernel_ns}: host time of one TinyJit\n"
    "                                call (a replay) of N independent kernels x + k on 16 floats, N = 1, 10,\n"
    "                                100 (median of 200 each), fitted as fixed_us + N * per_kernel_ns; beside\n"
    "                                it the slope of the same function called eagerly, in the same rounds\n"
    "                                (in each, the replays in a row, then the eager calls)\n"
    "               multi            an allreduce (sum) of 64 MiB of floats (16 MiB with --quick) over the\n"
    "                                device and its peer (CPU:1, SIM-...:1, AMD:1), algorithm automatic:\n"
    "                                allreduce_gbps (bytes / time), bus_gbps (bytes each device receives per\n"
    "                                second), beside peer_copy_gbps (one copy of the bytes to the peer;\n"
    "                                of_peer_copy = bus / that) and bound_gbps, the direct algorithm's bound\n"
    "                                here: its two steps timed alone in the same run, the exchange\n"
    "                                (exchange_gbps: both devices' copies to each other at once), then the\n"
    "                                add of what each received (combine_gbps), 1 / (1 / exchange + 1 /\n"
    "                                combine); of_bound = allreduce / bound, target >= 0.8\n"
    "                                (docs/framework.md, \"Bandwidth\"); dp_step_ms {devices, one}:\n"
    "                                the MLP's jitted data-parallel step (hcq train --devices) over both\n"
    "                                and on the device alone, same batch of 128; absent peer: \"unavailable\"\n"
    "               The same on every GPU; a simulated GPU's ewise and sum are on 4M floats, its products at most\n"
    "               128 along each dimension (host twins run its kernels). A build without the framework\n"
    "               reports \"unavailable\" and nulls.\n"
    "  train        mlp_step_ms: one jitted Adam step of the MLP 784-128-10 at batch 128 (hcq train's mlp),\n"
    "               median of 50 replays, the loss read back; schedule_us: scheduling one whole training step\n"
    "               (forward, backward, Adam) of the MLP 784-256-256-256-10: miss, miss_cold (the kernel cache\n"
    "               cleared too: every kernel lowered and rendered again) and hit, as the framework's\n"
    "Each number is printed beside its target and whether it is met.\n"
    "\n"
    "  --device D   only device D (e.g. CPU, CPU:1)\n"
    "  --json       one JSON document: {\"devices\": [{\"name\", \"launch_us\", \"launch_bound_us\", \"enqueue_ns\",\n"
    "               \"encode_ns\", \"copy_gbps\", \"memcpy_gbps\", \"graph\", \"framework\", \"train\",\n"
    "               \"errors\"}]}\n"
    "  --quick      fewer repetitions (a smoke test, not a measurement); the framework's ewise on 4M floats and\n"
    "               sum on 4M, its matmul keys at smaller products (\"matmul_shapes\" says which)\n"
    "  --compile-probe NONCE N   (with --device; what compile_ms.cached runs in a new process) realize the N\n"
    "               probe kernels of NONCE once and print \"compile_probe_ms <ms>\"\n"
    "  --step-kernels N   (with --device) where train.mlp_step_ms goes: N eager steps of the same MLP step, each\n"
    "               kernel run alone, waited for and timed; a table of the median per kernel (name, opts,\n"
    "               workgroups, us, GFLOP/s, GB/s), their sum, and the jitted step's median over N replays\n"
    "\n"
    "exit status: 0 all measured, 1 some device or measurement failed (the others are still reported),\n"
    "2 bad command line.\n";

using Clock = std::chrono::steady_clock;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The CPU device's launch budget (an eager launch, seen complete by the host). The bound-queue resubmit and the copy
// targets hold for every device, except copies on a simulated GPU, which reach half of memcpy: its copy engine is a
// host thread running beside the host's own memcpy.
constexpr double kCpuLaunchMedianTargetUs = 2.0;
constexpr double kBoundEnqueueTargetNs = 50.0;
constexpr double kCopyToMemcpyTarget = 0.80;
constexpr double kSimulatedCopyToMemcpyTarget = 0.50;
// The AMD and NVIDIA encoders' budget: one complete launch encoded in at most this much host time.
constexpr double kEncodeTargetNs = 200.0;
// Graph replay's budget: per kernel and fixed host time of one replay, and how much cheaper than the same kernels
// launched eagerly it must be.
constexpr double kGraphPerKernelTargetNs = 50.0;
constexpr double kGraphFixedTargetUs = 2.0;
constexpr double kGraphEagerRatioTarget = 20.0;
// The framework's budget on the CPU device (issue 13): an eager op, scheduling an MLP's forward graph on a schedule
// cache miss and hit, and elementwise bandwidth against a hand-written loop.
constexpr double kEagerOpTargetUs = 10.0;
constexpr double kScheduleMissTargetUs = 1000.0;
constexpr double kScheduleHitTargetUs = 20.0;
constexpr double kEwiseToLoopTarget = 0.90;
// The optimiser's budget (issue 19) against the libraries in the same run: float32 1024^3 and 2048^3 products at
// half the faster of OpenBLAS and oneDNN, bfloat16 at 30 % of oneDNN's, a full sum at 90 % of a hand-written loop.
constexpr double kMatmulToBestTarget = 0.50;
constexpr double kBf16ToOnednnTarget = 0.30;
constexpr double kSumToLoopTarget = 0.90;
// TinyJit's budget (issue 20): host time of one call (a replay) of a function of N small kernels, fixed + per kernel.
constexpr double kJitFixedTargetUs = 2.0;
constexpr double kJitPerKernelTargetNs = 50.0;
// Issue 16's training budget on the CPU device: the MLP's jitted Adam step (scheduling shares the targets above).
constexpr double kTrainStepTargetMs = 0.5;

struct Config {
  int launch_warmup = 500;
  int launch_runs = 20000;
  int enqueue_warmup = 20;
  int enqueue_runs = 300;
  int execs_per_queue = 64;
  int copy_runs = 21;  // a 64 MiB copy takes milliseconds: enough runs for a stable median
  uint64_t copy_bytes = 64ull << 20;
  GraphBenchConfig graph;
  FrameworkBenchConfig framework;
  int train_steps = 50;
  int train_schedule_reps = 11;
  uint64_t multi_bytes = 64ull << 20;  // framework.multi's allreduce (bench_multi.hpp)
  int multi_runs = 7;
  int multi_dp_steps = 21;  // framework.multi's data-parallel training steps

  static Config quick() {
    Config c;
    c.launch_warmup = 50;
    c.launch_runs = 1000;
    c.enqueue_warmup = 5;
    c.enqueue_runs = 30;
    c.copy_runs = 2;
    c.graph.warmup = 5;
    c.graph.runs = 40;
    c.framework = FrameworkBenchConfig::quick();
    c.train_steps = 3;
    c.train_schedule_reps = 1;
    c.multi_bytes = 16ull << 20;
    c.multi_runs = 7;  // a median of 3 scattered by 30 % on the CPU devices (ms each)
    c.multi_dp_steps = 3;
    return c;
  }
};

struct DeviceResult {
  std::string name;
  std::string interface;  // empty when the device did not open
  double launch_median_us = kNaN, launch_p99_us = kNaN;
  double launch_bound_median_us = kNaN, launch_bound_p99_us = kNaN;
  double enqueue_fresh_ns = kNaN, enqueue_bound_ns = kNaN;
  double encode_ns = kNaN;
  double h2d_gbps = kNaN, d2h_gbps = kNaN, d2d_gbps = kNaN, memcpy_gbps = kNaN;
  GraphBenchResult graph{kNaN, kNaN, kNaN};
  std::optional<CudaLaunchResult> cuda_launch;  // CUDA's launch of the same cubin (real NVIDIA GPUs only)
  std::string cuda_unavailable;                 // why cuda_launch is absent, when that is not an error
  FrameworkBenchResult framework;
  TrainBenchResult train;
  MultiBenchResult multi;           // framework.multi: an allreduce over the device and its peer
  std::vector<std::string> errors;  // "<measurement>: <message>"
};

double elapsed_us(Clock::time_point t0, Clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

double gbps(uint64_t bytes, double us) { return static_cast<double>(bytes) / (us * 1e3); }

struct BenchPrograms {
  std::unique_ptr<Program> empty;
  std::unique_ptr<Program> args;      // one buffer, one value
  std::vector<uint8_t> empty_binary;  // what `empty` was loaded from: the CUDA comparison loads the same image
};

BenchPrograms load_programs(Device& dev, const std::string& interface) {
  std::optional<BenchKernels> kernels = bench_kernels_for(interface);
  if (!kernels) {
    throw Error(
        cat("no bench kernels for device interface '", interface, "' (add them to tools/hcq/bench_kernels.cpp)"));
  }
  Compiler& compiler = dev.compiler();
  BenchPrograms p;
  p.empty_binary = compiler.compile_cached(kernels->empty_source);
  p.empty = dev.load_program(BenchKernels::kEmptyName, p.empty_binary);
  p.args = dev.load_program(BenchKernels::kArgsName, compiler.compile_cached(kernels->args_source));
  return p;
}

// Eager launches of the empty kernel, each awaited by the host.
void measure_launch(Device& dev, const Program& empty, const Config& cfg, DeviceResult& r) {
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(cfg.launch_runs));
  for (int i = 0; i < cfg.launch_warmup + cfg.launch_runs; ++i) {
    const auto t0 = Clock::now();
    empty({}, {}, {1, 1, 1}, {1, 1, 1});
    dev.wait_signal(dev.timeline_signal(), dev.timeline_value() - 1);
    const auto t1 = Clock::now();
    if (i >= cfg.launch_warmup) samples.push_back(elapsed_us(t0, t1));
  }
  dev.synchronize();
  r.launch_median_us = median(samples);
  r.launch_p99_us = quantile(samples, 0.99);
}

// One bound queue, [wait timeline][exec empty][signal timeline], resubmitted with the two timeline values patched.
void measure_launch_bound(Device& dev, const Program& empty, const Config& cfg, DeviceResult& r) {
  const Var wait_value{0}, signal_value{1};
  std::unique_ptr<HWQueue> q = dev.compute_queue();
  q->wait(dev.timeline_signal(), wait_value)
      .exec(empty, {}, {1, 1, 1}, {1, 1, 1})
      .signal(dev.timeline_signal(), signal_value)
      .bind();

  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(cfg.launch_runs));
  for (int i = 0; i < cfg.launch_warmup + cfg.launch_runs; ++i) {
    const auto t0 = Clock::now();
    Device::TimelineSlot slot = dev.reserve_timeline();
    const uint64_t value = slot.signal_value();
    const std::array<uint64_t, 2> vars{slot.wait_value(), value};
    q->submit(vars);
    slot.commit();
    dev.wait_signal(dev.timeline_signal(), value);
    const auto t1 = Clock::now();
    if (i >= cfg.launch_warmup) samples.push_back(elapsed_us(t0, t1));
  }
  dev.synchronize();
  r.launch_bound_median_us = median(samples);
  r.launch_bound_p99_us = quantile(samples, 0.99);
}

// (a) A fresh queue each time: create, wait, N execs with constant arguments, signal, submit.
void measure_enqueue_fresh(Device& dev, const Program& args_program, uint64_t buffer_va, const Config& cfg,
                           DeviceResult& r) {
  const LaunchArgs args{{Sym(buffer_va)}, {Sym(7)}};
  std::vector<double> per_command_ns;
  for (int i = 0; i < cfg.enqueue_warmup + cfg.enqueue_runs; ++i) {
    const auto t0 = Clock::now();
    std::unique_ptr<HWQueue> q = dev.compute_queue();
    const Completion done = dev.submit(*q, [&](HWQueue& b) {
      for (int k = 0; k < cfg.execs_per_queue; ++k) b.exec(args_program, args, {1, 1, 1}, {1, 1, 1});
    });
    const auto t1 = Clock::now();
    done.wait();
    if (i >= cfg.enqueue_warmup) {
      per_command_ns.push_back(elapsed_us(t0, t1) * 1e3 / static_cast<double>(q->num_commands()));
    }
  }  // each queue is destroyed here, outside the timed region
  dev.synchronize();
  r.enqueue_fresh_ns = median(per_command_ns);
}

// (b) Built once with symbolic buffer, value and global size in every exec, bound, then resubmitted with all of
// them (and the timeline values) changed each time: the submit rewrites every patch.
void measure_enqueue_bound(Device& dev, const Program& args_program, std::array<uint64_t, 2> buffer_vas,
                           const Config& cfg, DeviceResult& r) {
  const Var wait_value{0}, signal_value{1}, buffer{2}, scalar{3}, global_x{4};
  std::unique_ptr<HWQueue> q = dev.compute_queue();
  const LaunchArgs args{{Sym(buffer)}, {Sym(scalar)}};
  q->wait(dev.timeline_signal(), wait_value);
  for (int k = 0; k < cfg.execs_per_queue; ++k) q->exec(args_program, args, {Sym(global_x), 1, 1}, {1, 1, 1});
  q->signal(dev.timeline_signal(), signal_value);
  q->bind();

  std::vector<double> per_command_ns;
  for (int i = 0; i < cfg.enqueue_warmup + cfg.enqueue_runs; ++i) {
    const auto odd = static_cast<uint64_t>(i & 1);
    const auto t0 = Clock::now();
    Device::TimelineSlot slot = dev.reserve_timeline();
    const uint64_t value = slot.signal_value();
    const std::array<uint64_t, 5> vars{slot.wait_value(), value, buffer_vas[odd], static_cast<uint64_t>(i), 1 + odd};
    q->submit(vars);
    slot.commit();
    const auto t1 = Clock::now();
    dev.wait_signal(dev.timeline_signal(), value);
    if (i >= cfg.enqueue_warmup) {
      per_command_ns.push_back(elapsed_us(t0, t1) * 1e3 / static_cast<double>(q->num_commands()));
    }
  }
  dev.synchronize();
  r.enqueue_bound_ns = median(per_command_ns);
}

// One complete launch built on a fresh queue and never submitted: wait, memory_barrier, exec of the one-buffer,
// one-value kernel with constant operands, signal. Queues are built in batches (one clock read per batch instead of
// per ~200 ns queue) and destroyed outside the timed region; the synchronize between batches lets the side memory
// the destroyed queues held be reused, as it is in a steady stream of eager launches.
void measure_encode(Device& dev, const Program& args_program, uint64_t buffer_va, const Config& cfg, DeviceResult& r) {
  constexpr int kBatch = 32;
  const LaunchArgs args{{Sym(buffer_va)}, {Sym(7)}};
  std::vector<std::unique_ptr<HWQueue>> queues;
  queues.reserve(kBatch);
  std::vector<double> per_launch_ns;
  for (int i = 0; i < cfg.enqueue_warmup + cfg.enqueue_runs; ++i) {
    const uint64_t value = dev.timeline_value();
    const auto t0 = Clock::now();
    for (int k = 0; k < kBatch; ++k) {
      std::unique_ptr<HWQueue> q = dev.compute_queue();
      q->wait(dev.timeline_signal(), value - 1)
          .memory_barrier()
          .exec(args_program, args, {1, 1, 1}, {1, 1, 1})
          .signal(dev.timeline_signal(), value);
      queues.push_back(std::move(q));
    }
    const auto t1 = Clock::now();
    queues.clear();
    dev.synchronize();
    if (i >= cfg.enqueue_warmup) per_launch_ns.push_back(elapsed_us(t0, t1) * 1e3 / kBatch);
  }
  r.encode_ns = median(per_launch_ns);
}

void measure_copies(Device& dev, const Config& cfg, DeviceResult& r) {
  const uint64_t n = cfg.copy_bytes;
  // Host memory is touched before timing (the vectors are zero-filled), so no run pays for page faults.
  std::vector<std::byte> host_src(n), host_dst(n);
  for (uint64_t i = 0; i < n; i += 8) std::memcpy(&host_src[i], &i, sizeof i);
  Buffer a(dev, n), b(dev, n);

  // Warm-up that also proves the path moves the right bytes: h2d, d2d, d2h, compare.
  a.copyin(std::span<const std::byte>(host_src));
  b.copy_from(a);
  b.copyout(std::span<std::byte>(host_dst));
  dev.synchronize();
  if (std::memcmp(host_src.data(), host_dst.data(), n) != 0) {
    throw DeviceFault(
        cat(dev.name(), ": bytes read back after h2d, d2d, d2h differ from those written (", n, " bytes)"));
  }

  // Each copy is timed to completion on the device: synchronize is inside the timed region. The four
  // measurements are interleaved, one of each per round, so that the VM's memory bandwidth drifting during the run
  // moves the yardstick and the copies together instead of skewing their ratio.
  std::vector<double> h2d, d2h, d2d, host;
  auto timed = [&](std::vector<double>& samples, auto&& copy_once) {
    const auto t0 = Clock::now();
    copy_once();
    samples.push_back(gbps(n, elapsed_us(t0, Clock::now())));
  };
  for (int i = 0; i < cfg.copy_runs; ++i) {
    timed(host, [&] { std::memcpy(host_dst.data(), host_src.data(), n); });
    timed(h2d, [&] {
      a.copyin(std::span<const std::byte>(host_src));
      dev.synchronize();
    });
    timed(d2h, [&] {
      a.copyout(std::span<std::byte>(host_dst));
      dev.synchronize();
    });
    timed(d2d, [&] {
      b.copy_from(a);
      dev.synchronize();
    });
  }
  r.h2d_gbps = median(h2d);
  r.d2h_gbps = median(d2h);
  r.d2d_gbps = median(d2d);
  r.memcpy_gbps = median(host);
  // Reading the result keeps the compiler from dropping the memcpy whose destination is otherwise unused.
  if (std::memcmp(host_src.data(), host_dst.data(), n) != 0) throw Error("host memcpy produced different bytes");
}

// Runs `measure` and records its failure under `what` instead of letting it end the device's other measurements.
template <class Fn>
void attempt(DeviceResult& r, const char* what, Fn&& measure) {
  try {
    measure();
  } catch (const std::exception& e) {
    r.errors.push_back(cat(what, ": ", e.what()));
  }
}

DeviceResult bench_device(const std::string& name, const Config& cfg) {
  DeviceResult r;
  r.name = name;
  Device* dev = nullptr;
  attempt(r, "open", [&] {
    dev = &open_device(name);
    r.interface = dev->info().interface;
    r.name = dev->name();
  });
  if (dev == nullptr) return r;

  std::optional<BenchPrograms> programs;
  attempt(r, "kernels", [&] { programs = load_programs(*dev, r.interface); });
  if (programs) {
    attempt(r, "launch_us", [&] { measure_launch(*dev, *programs->empty, cfg, r); });
    attempt(r, "launch_bound_us", [&] { measure_launch_bound(*dev, *programs->empty, cfg, r); });
    attempt(r, "cuda_launch_us", [&] {
      CudaComparison c = compare_cuda_launch(*dev, programs->empty_binary, BenchKernels::kEmptyName, cfg.launch_warmup,
                                             cfg.launch_runs);
      r.cuda_launch = std::move(c.measured);
      r.cuda_unavailable = std::move(c.unavailable);
    });
    attempt(r, "enqueue_ns", [&] {
      // Two small buffers whose addresses the bound queue alternates between.
      Buffer x(*dev, 4096), y(*dev, 4096);
      measure_enqueue_fresh(*dev, *programs->args, x.va(), cfg, r);
      measure_enqueue_bound(*dev, *programs->args, {x.va(), y.va()}, cfg, r);
    });
    attempt(r, "encode_ns", [&] {
      Buffer x(*dev, 4096);
      measure_encode(*dev, *programs->args, x.va(), cfg, r);
    });
    attempt(r, "graph", [&] { r.graph = measure_graph_replay(*dev, *programs->args, cfg.graph); });
  }
  attempt(r, "copy_gbps", [&] { measure_copies(*dev, cfg, r); });
#if HCQ_TOOL_FRAMEWORK
  r.framework = measure_framework(*dev, cfg.framework, r.errors);
  if (r.framework.unavailable.empty())
    attempt(r, "train", [&] { r.train = measure_train(*dev, cfg.train_steps, cfg.train_schedule_reps); });
  if (r.framework.unavailable.empty())
    attempt(r, "framework.multi",
            [&] { r.multi = measure_multi(*dev, cfg.multi_bytes, cfg.multi_runs, cfg.multi_dp_steps); });
#else
  r.framework.unavailable = "this hcq is built without the framework";
#endif
  return r;
}

// {key: figure} for each product measured; a figure not measured is null.
void print_matmul_json(JsonWriter& w, const char* name, const std::vector<FrameworkBenchResult::Matmul>& products,
                       double FrameworkBenchResult::Matmul::* figure) {
  w.key(name).begin_object();
  for (const FrameworkBenchResult::Matmul& m : products) w.field(m.shape.key, m.*figure);
  w.end_object();
}

// {key: [m, k, n]}: the product each key measured (--quick and a simulated GPU measure smaller ones under the same
// keys).
void print_shapes_json(JsonWriter& w, const char* name, const std::vector<FrameworkBenchResult::Matmul>& products) {
  w.key(name).begin_object();
  for (const FrameworkBenchResult::Matmul& m : products) {
    w.key(m.shape.key).begin_array();
    for (int64_t d : {m.shape.m, m.shape.k, m.shape.n}) w.value(static_cast<uint64_t>(d));
    w.end_array();
  }
  w.end_object();
}

void print_framework_json(JsonWriter& w, const FrameworkBenchResult& f, const MultiBenchResult& m) {
  using M = FrameworkBenchResult::Matmul;
  w.key("framework").begin_object().field("eager_op_us", f.eager_op_us);
  w.key("schedule_us")
      .begin_object()
      .field("miss", f.schedule_miss_us)
      .field("miss_cold", f.schedule_miss_cold_us)
      .field("hit", f.schedule_hit_us)
      .end_object();
  w.field("ewise_gbps", f.ewise_gbps).field("ewise_loop_gbps", f.ewise_loop_gbps);
  print_matmul_json(w, "matmul_gflops", f.matmul, &M::framework);
  print_matmul_json(w, "openblas_gflops", f.matmul, &M::openblas);
  print_matmul_json(w, "onednn_gflops", f.matmul, &M::onednn);
  print_shapes_json(w, "matmul_shapes", f.matmul);
  print_matmul_json(w, "bf16_gflops", f.bf16, &M::framework);
  print_matmul_json(w, "onednn_bf16_gflops", f.bf16, &M::onednn);
  print_shapes_json(w, "bf16_shapes", f.bf16);
  if (!f.onednn_impl.empty() || !f.onednn_bf16_impl.empty()) {
    w.key("onednn_impl").begin_object().field("fp32", f.onednn_impl).field("bf16", f.onednn_bf16_impl).end_object();
  }
  // A yardstick this build lacks: its figures are null, and here is why.
  if (!f.openblas_unavailable.empty() || !f.onednn_unavailable.empty()) {
    w.key("yardsticks_unavailable").begin_object();
    if (!f.openblas_unavailable.empty()) w.field("openblas", f.openblas_unavailable);
    if (!f.onednn_unavailable.empty()) w.field("onednn", f.onednn_unavailable);
    w.end_object();
  }
  w.field("sum_gbps", f.sum_gbps).field("sum_loop_gbps", f.sum_loop_gbps);
  if (f.sum_elements > 0) w.field("sum_elements", static_cast<uint64_t>(f.sum_elements));
  if (f.ewise_elements > 0) w.field("ewise_elements", static_cast<uint64_t>(f.ewise_elements));
  w.key("compile_ms")
      .begin_object()
      .field("cold", f.compile_cold_ms)
      .field("cached", f.compile_cached_ms)
      .field("cold_serial", f.compile_cold_serial_ms)
      .field("parallel_speedup", f.compile_cold_serial_ms / f.compile_cold_ms)
      .field("kernels", static_cast<uint64_t>(f.compile_kernels));
  if (!f.compile_unavailable.empty()) w.field("unavailable", f.compile_unavailable);
  w.end_object();
  w.key("jit")
      .begin_object()
      .field("per_kernel_ns", f.jit_per_kernel_ns)
      .field("fixed_us", f.jit_fixed_us)
      .field("eager_per_kernel_ns", f.jit_eager_per_kernel_ns)
      .end_object();
  w.key("multi")
      .begin_object()
      .field("peer", m.peer)
      .field("algorithm", m.algorithm)
      .field("bytes", m.bytes)
      .field("allreduce_gbps", m.allreduce_gbps)
      .field("bus_gbps", m.bus_gbps)
      .field("peer_copy_gbps", m.peer_copy_gbps)
      .field("direct_gbps", m.direct_gbps)
      .field("ring_gbps", m.ring_gbps)
      .field("of_peer_copy", m.bus_gbps / m.peer_copy_gbps)
      .field("exchange_gbps", m.exchange_gbps)
      .field("combine_gbps", m.combine_gbps)
      .field("bound_gbps", m.bound_gbps())
      .field("of_bound", m.allreduce_gbps / m.bound_gbps());
  w.key("dp_step_ms").begin_object().field("devices", m.dp_step_ms).field("one", m.one_device_step_ms).end_object();
  if (!m.unavailable.empty()) w.field("unavailable", m.unavailable);
  w.end_object();
  if (!f.unavailable.empty()) w.field("unavailable", f.unavailable);
  w.end_object();
}

void print_json(const std::vector<DeviceResult>& results) {
  JsonWriter w;
  w.begin_object().key("devices").begin_array();
  for (const DeviceResult& r : results) {
    w.begin_object().field("name", r.name);
    w.key("launch_us").begin_object().field("median", r.launch_median_us).field("p99", r.launch_p99_us).end_object();
    w.key("launch_bound_us")
        .begin_object()
        .field("median", r.launch_bound_median_us)
        .field("p99", r.launch_bound_p99_us)
        .end_object();
    w.key("enqueue_ns")
        .begin_object()
        .field("fresh", r.enqueue_fresh_ns)
        .field("bound_patched", r.enqueue_bound_ns)
        .end_object();
    w.field("encode_ns", r.encode_ns);
    w.key("copy_gbps")
        .begin_object()
        .field("h2d", r.h2d_gbps)
        .field("d2h", r.d2h_gbps)
        .field("d2d", r.d2d_gbps)
        .end_object();
    w.field("memcpy_gbps", r.memcpy_gbps);
    w.key("graph")
        .begin_object()
        .field("per_kernel_ns", r.graph.per_kernel_ns)
        .field("fixed_us", r.graph.fixed_us)
        .field("eager_per_kernel_ns", r.graph.eager_per_kernel_ns);
    w.key("replay_us").begin_object();  // per graph size: the median the fit goes through
    for (const GraphSizeResult& g : r.graph.sizes) w.field(std::to_string(g.kernels), g.median_us);
    w.end_object().end_object();
    if (r.cuda_launch) {
      w.key("cuda_launch_us")
          .begin_object()
          .field("median", r.cuda_launch->median_us)
          .field("p99", r.cuda_launch->p99_us)
          .field("device", r.cuda_launch->device)
          .end_object();
    } else if (r.interface == "rm" && !r.cuda_unavailable.empty()) {
      w.field("cuda_unavailable", r.cuda_unavailable);
    }
    print_framework_json(w, r.framework, r.multi);
    w.key("train")
        .begin_object()
        .field("mlp_step_ms", r.train.mlp_step_ms)
        .key("schedule_us")
        .begin_object()
        .field("miss", r.train.schedule_miss_us)
        .field("miss_cold", r.train.schedule_miss_cold_us)
        .field("hit", r.train.schedule_hit_us)
        .end_object()
        .end_object();
    w.key("errors").begin_array();
    for (const std::string& e : r.errors) w.value(e);
    w.end_array().end_object();
  }
  w.end_array().end_object();
  std::printf("%s\n", w.str().c_str());
}

// One row of the human table: device, metric, value, target, whether it is met.
void print_row(const DeviceResult& r, const char* metric, const std::string& value, const std::string& target = "",
               std::optional<bool> met = std::nullopt) {
  std::printf("%s%s%s%s%s\n", pad(r.name, 18).c_str(), pad(metric, 26).c_str(), pad(value, 20).c_str(),
              pad(target, 18).c_str(), met ? (*met ? "yes" : "NO") : "");
}

// The framework's rows: each figure, its yardstick beside it, the target and whether it is met.
void print_framework_rows(const DeviceResult& r) {
  const FrameworkBenchResult& f = r.framework;
  if (!f.unavailable.empty()) {
    std::printf("%s%snot measured: %s\n", pad(r.name, 18).c_str(), pad("framework", 26).c_str(), f.unavailable.c_str());
    return;
  }
  auto met = [](double value, bool ok) { return std::isfinite(value) ? std::optional<bool>(ok) : std::nullopt; };
  print_row(r, "fw eager_op_us", fixed(f.eager_op_us, 2), "<= 10 us",
            met(f.eager_op_us, f.eager_op_us <= kEagerOpTargetUs));
  std::string miss_shown = fixed(f.schedule_miss_us, 1);
  if (f.schedule_kernels > 0) miss_shown += " (" + std::to_string(f.schedule_kernels) + " kernels)";
  print_row(r, "fw schedule_us miss", miss_shown, "<= 1000 us",
            met(f.schedule_miss_us, f.schedule_miss_us <= kScheduleMissTargetUs));
  print_row(r, "fw schedule_us miss_cold", fixed(f.schedule_miss_cold_us, 1), "(no kernel cached)");
  print_row(r, "fw schedule_us hit", fixed(f.schedule_hit_us, 2), "<= 20 us",
            met(f.schedule_hit_us, f.schedule_hit_us <= kScheduleHitTargetUs));
  const double ewise_ratio = f.ewise_gbps / f.ewise_loop_gbps;
  std::string ewise_shown = fixed(f.ewise_gbps, 2);
  // Rounded down, so that a ratio shown as 90% never fails the 90% target.
  if (std::isfinite(ewise_ratio)) ewise_shown += " (" + fixed(std::floor(ewise_ratio * 100), 0) + "% loop)";
  print_row(r, "fw ewise_gbps", ewise_shown, ">= 90% loop", met(ewise_ratio, ewise_ratio >= kEwiseToLoopTarget));
  print_row(r, "fw ewise_loop_gbps", fixed(f.ewise_loop_gbps, 2), "(yardstick)");
  // Each product beside the faster of its yardsticks, named; the rows are labelled by key (the footer says which
  // product each key measured).
  auto matmul_rows = [&](const std::vector<FrameworkBenchResult::Matmul>& products, const std::string& figure,
                         const std::string& onednn_figure, double target) {
    for (const FrameworkBenchResult::Matmul& m : products) {
      const bool blas_best = std::isfinite(m.openblas) && !(m.onednn > m.openblas);
      const double best = blas_best ? m.openblas : m.onednn;
      const double ratio = m.framework / best;
      std::string shown = fixed(m.framework, 2);
      if (std::isfinite(ratio)) shown += " (" + fixed(ratio * 100, 1) + (blas_best ? "% BLAS)" : "% oneDNN)");
      const bool targeted = m.shape.key == "1024" || m.shape.key == "2048" || m.shape.key == "beam";
      // Rounded down, so that a ratio shown as 50% never fails the 50% target.
      const double shown_ratio = std::floor(ratio * 1000) / 1000;
      print_row(r, ("fw " + figure + " " + m.shape.key).c_str(), shown,
                targeted ? ">= " + fixed(target * 100, 0) + "% best" : "(no target)",
                targeted ? met(ratio, shown_ratio >= target) : std::nullopt);
      if (&products == &f.matmul) {
        print_row(r, ("fw openblas_gflops " + m.shape.key).c_str(),
                  std::isfinite(m.openblas) || f.openblas_unavailable.empty() ? fixed(m.openblas, 1) : "absent",
                  "(yardstick)");
      }
      print_row(r, ("fw " + onednn_figure + " " + m.shape.key).c_str(),
                std::isfinite(m.onednn) || f.onednn_unavailable.empty() ? fixed(m.onednn, 1) : "absent", "(yardstick)");
    }
  };
  matmul_rows(f.matmul, "matmul_gflops", "onednn_gflops", kMatmulToBestTarget);
  matmul_rows(f.bf16, "bf16_gflops", "onednn_bf16_gflops", kBf16ToOnednnTarget);
  for (const std::string* why : {&f.openblas_unavailable, &f.onednn_unavailable})
    if (!why->empty())
      std::printf("%s%s%s\n", pad(r.name, 18).c_str(), pad("fw yardstick absent", 26).c_str(), why->c_str());
  if (!f.onednn_impl.empty() || !f.onednn_bf16_impl.empty())
    std::printf("%s%sfp32 %s, bf16 %s\n", pad(r.name, 18).c_str(), pad("fw onednn_impl 1024", 26).c_str(),
                f.onednn_impl.c_str(), f.onednn_bf16_impl.c_str());
  const double sum_ratio = f.sum_gbps / f.sum_loop_gbps;
  std::string sum_shown = fixed(f.sum_gbps, 2);
  if (std::isfinite(sum_ratio)) sum_shown += " (" + fixed(std::floor(sum_ratio * 100), 0) + "% loop)";
  print_row(r, "fw sum_gbps", sum_shown, ">= 90% loop", met(sum_ratio, sum_ratio >= kSumToLoopTarget));
  print_row(r, "fw sum_loop_gbps", fixed(f.sum_loop_gbps, 2), "(yardstick)");
  print_row(r, "fw jit fixed_us", fixed(f.jit_fixed_us, 2), "<= 2 us",
            met(f.jit_fixed_us, f.jit_fixed_us <= kJitFixedTargetUs));
  print_row(r, "fw jit per_kernel_ns", fixed(f.jit_per_kernel_ns, 1), "<= 50 ns",
            met(f.jit_per_kernel_ns, f.jit_per_kernel_ns <= kJitPerKernelTargetNs));
  print_row(r, "fw jit eager_per_kernel_ns", fixed(f.jit_eager_per_kernel_ns, 1), "(yardstick)");
  const double speedup = f.compile_cold_serial_ms / f.compile_cold_ms;
  std::string cold_shown = fixed(f.compile_cold_ms, 1);
  if (std::isfinite(speedup)) cold_shown += " (" + fixed(speedup, 2) + "x serial)";
  if (!f.compile_unavailable.empty()) {
    std::printf("%s%snot measured: %s\n", pad(r.name, 18).c_str(), pad("fw compile_ms", 26).c_str(),
                f.compile_unavailable.c_str());
    return;
  }
  print_row(r, "train mlp_step_ms", fixed(r.train.mlp_step_ms, 3), "<= 0.5 ms",
            met(r.train.mlp_step_ms, r.train.mlp_step_ms <= kTrainStepTargetMs));
  print_row(r, "train schedule_us miss", fixed(r.train.schedule_miss_us, 1), "<= 1000 us",
            met(r.train.schedule_miss_us, r.train.schedule_miss_us <= kScheduleMissTargetUs));
  print_row(r, "train schedule_us miss_cold", fixed(r.train.schedule_miss_cold_us, 1), "(no kernel cached)");
  print_row(r, "train schedule_us hit", fixed(r.train.schedule_hit_us, 2), "<= 20 us",
            met(r.train.schedule_hit_us, r.train.schedule_hit_us <= kScheduleHitTargetUs));
  print_row(r, "fw compile_ms cold", cold_shown, "(per kernel)");
  print_row(r, "fw compile_ms cold_serial", fixed(f.compile_cold_serial_ms, 1), "(per kernel)");
  print_row(r, "fw compile_ms cached", fixed(f.compile_cached_ms, 2), "(per kernel)");
  const MultiBenchResult& m = r.multi;
  if (!m.unavailable.empty()) {
    std::printf("%s%snot measured: %s\n", pad(r.name, 18).c_str(), pad("fw multi", 26).c_str(), m.unavailable.c_str());
    return;
  }
  const double of_bound = m.allreduce_gbps / m.bound_gbps(), of_copy = m.bus_gbps / m.peer_copy_gbps;
  std::string shown = fixed(m.allreduce_gbps, 2);
  if (std::isfinite(of_bound)) shown += " (" + fixed(std::floor(of_bound * 100), 0) + "% bound)";
  print_row(r, "fw multi allreduce_gbps", shown, ">= 80% bound", met(of_bound, of_bound >= 0.8));
  print_row(r, "fw multi bound_gbps", fixed(m.bound_gbps(), 2),
            "(exchange " + fixed(m.exchange_gbps, 2) + ", combine " + fixed(m.combine_gbps, 2) + ")");
  std::string copy_shown = fixed(m.peer_copy_gbps, 2);
  if (std::isfinite(of_copy)) copy_shown += " (bus " + fixed(std::floor(of_copy * 100), 0) + "%)";
  print_row(r, "fw multi peer_copy_gbps", copy_shown, "(yardstick)");
  print_row(r, "fw multi direct_gbps", fixed(m.direct_gbps, 2), "(" + m.algorithm + " chosen)");
  print_row(r, "fw multi ring_gbps", fixed(m.ring_gbps, 2));
  print_row(r, "fw multi dp_step_ms", fixed(m.dp_step_ms, 3) + " (one device " + fixed(m.one_device_step_ms, 3) + ")",
            "(same batch of 128)");
}

void print_table(const std::vector<DeviceResult>& results, const Config& cfg) {
  std::printf("%s%s%s%s%s\n", pad("DEVICE", 18).c_str(), pad("METRIC", 26).c_str(), pad("VALUE", 20).c_str(),
              pad("TARGET", 18).c_str(), "MET");
  for (const DeviceResult& r : results) {
    if (r.interface.empty()) {  // it did not open: there is nothing but the reason to show
      for (const std::string& e : r.errors) std::printf("%serror: %s\n", pad(r.name, 18).c_str(), e.c_str());
      continue;
    }
    auto met = [](double value, bool ok) { return std::isfinite(value) ? std::optional<bool>(ok) : std::nullopt; };
    if (r.interface == "cpu") {
      print_row(r, "launch_us median", fixed(r.launch_median_us, 2), "<= 2 us",
                met(r.launch_median_us, r.launch_median_us <= kCpuLaunchMedianTargetUs));
    } else {
      print_row(r, "launch_us median", fixed(r.launch_median_us, 2));
    }
    print_row(r, "launch_us p99", fixed(r.launch_p99_us, 2));
    if (r.cuda_launch) {
      print_row(r, "cuda_launch_us median", fixed(r.cuda_launch->median_us, 2), "(CUDA, same cubin)");
      print_row(r, "cuda_launch_us p99", fixed(r.cuda_launch->p99_us, 2), r.cuda_launch->device);
    } else if (!r.cuda_unavailable.empty()) {
      std::printf("%s%snot measured: %s\n", pad(r.name, 18).c_str(), pad("cuda_launch_us", 26).c_str(),
                  r.cuda_unavailable.c_str());
    }
    print_row(r, "launch_bound_us median", fixed(r.launch_bound_median_us, 2));
    print_row(r, "launch_bound_us p99", fixed(r.launch_bound_p99_us, 2));
    print_row(r, "enqueue_ns fresh", fixed(r.enqueue_fresh_ns, 1));
    print_row(r, "enqueue_ns bound_patched", fixed(r.enqueue_bound_ns, 1), "<= 50 ns",
              met(r.enqueue_bound_ns, r.enqueue_bound_ns <= kBoundEnqueueTargetNs));
    print_row(r, "encode_ns", fixed(r.encode_ns, 1), "<= 200 ns", met(r.encode_ns, r.encode_ns <= kEncodeTargetNs));
    const std::pair<const char*, double> copies[] = {
        {"copy_gbps h2d", r.h2d_gbps}, {"copy_gbps d2h", r.d2h_gbps}, {"copy_gbps d2d", r.d2d_gbps}};
    const bool simulated = r.interface == "sim-kfd" || r.interface == "sim-rm";
    const double copy_target = simulated ? kSimulatedCopyToMemcpyTarget : kCopyToMemcpyTarget;
    const std::string copy_target_text = ">= " + fixed(copy_target * 100, 0) + "% memcpy";
    for (auto [metric, value] : copies) {
      const double ratio = value / r.memcpy_gbps;
      std::string shown = fixed(value, 2);
      // Rounded down, so that a ratio shown as 80% never fails the 80% target.
      if (std::isfinite(ratio)) shown += " (" + fixed(std::floor(ratio * 100), 0) + "% memcpy)";
      print_row(r, metric, shown, copy_target_text, met(ratio, ratio >= copy_target));
    }
    print_row(r, "memcpy_gbps", fixed(r.memcpy_gbps, 2), "(yardstick)");
    print_row(r, "graph per_kernel_ns", fixed(r.graph.per_kernel_ns, 1), "<= 50 ns",
              met(r.graph.per_kernel_ns, r.graph.per_kernel_ns <= kGraphPerKernelTargetNs));
    print_row(r, "graph fixed_us", fixed(r.graph.fixed_us, 2), "<= 2 us",
              met(r.graph.fixed_us, r.graph.fixed_us <= kGraphFixedTargetUs));
    const double eager_ratio = r.graph.eager_per_kernel_ns / r.graph.per_kernel_ns;
    std::string eager_shown = fixed(r.graph.eager_per_kernel_ns, 1);
    if (std::isfinite(eager_ratio)) eager_shown += " (" + fixed(std::floor(eager_ratio), 0) + "x graph)";
    print_row(r, "graph eager_per_kernel_ns", eager_shown, ">= 20x graph",
              met(eager_ratio, eager_ratio >= kGraphEagerRatioTarget));
    print_framework_rows(r);
    for (const std::string& e : r.errors) std::printf("%serror: %s\n", pad(r.name, 18).c_str(), e.c_str());
  }
  std::printf("\n%d launches, %d queues of %d execs per enqueue figure, %s copies (median of %d)\n", cfg.launch_runs,
              cfg.enqueue_runs, cfg.execs_per_queue, human_bytes(cfg.copy_bytes).c_str(), cfg.copy_runs);
  const FrameworkBenchConfig& fw = cfg.framework;
  std::printf(
      "framework: %d x %d eager ops, %d schedules each, ewise on %lldM floats (median of %d), sum on %lldM floats "
      "(median of %d), matmul median of >= %d (each library's of >= %d) over >= %.2f s:",
      fw.eager_reps, fw.eager_ops, fw.schedule_reps, static_cast<long long>(fw.ewise_elements >> 20), fw.ewise_runs,
      static_cast<long long>(fw.sum_elements >> 20), fw.sum_runs, fw.matmul_runs, fw.sgemm_runs, fw.matmul_budget_s);
  // What each key multiplied (a simulated GPU's products are smaller still: its JSON's matmul_shapes says).
  for (const auto& [shapes, what] : {std::pair{&fw.matmul_shapes, ""}, std::pair{&fw.bf16_shapes, "bf16 "}})
    for (const MatmulShape& s : *shapes)
      std::printf(" %s%s=%lldx%lldx%lld", what, s.key.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.k),
                  static_cast<long long>(s.n));
  std::printf("\n");
}

}  // namespace

int run_bench(std::span<const std::string_view> args) {
  bool json = false, quick = false;
  std::optional<std::string> only_device;
  std::optional<std::pair<uint64_t, int>> compile_probe;  // nonce, kernels
  std::optional<int> step_kernels;                        // eager steps to time kernel by kernel
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--quick") {
      quick = true;
    } else if (a == "--device") {
      if (i + 1 >= args.size()) return usage_error("bench: --device needs a device name", "bench");
      only_device = std::string(args[++i]);
    } else if (a.starts_with("--device=")) {
      only_device = std::string(a.substr(std::string_view("--device=").size()));
    } else if (a == "--compile-probe") {
      if (i + 2 >= args.size()) return usage_error("bench: --compile-probe needs a nonce and a kernel count", "bench");
      const std::string nonce(args[i + 1]), kernels(args[i + 2]);
      i += 2;
      char* end = nullptr;
      const uint64_t nv = std::strtoull(nonce.c_str(), &end, 10);
      const bool nonce_ok = !nonce.empty() && *end == '\0';
      const long kv = std::strtol(kernels.c_str(), &end, 10);
      if (!nonce_ok || kernels.empty() || *end != '\0' || kv < 1 || kv > 1000)
        return usage_error("bench: --compile-probe takes a number and a kernel count of 1 to 1000", "bench");
      compile_probe = std::make_pair(nv, static_cast<int>(kv));
    } else if (a == "--step-kernels") {
      const std::string n = i + 1 < args.size() ? std::string(args[++i]) : std::string();
      char* end = nullptr;
      const long v = std::strtol(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || v < 1 || v > 100000)
        return usage_error("bench: --step-kernels takes a step count of 1 to 100000", "bench");
      step_kernels = static_cast<int>(v);
    } else if (a == "--help" || a == "-h") {
      std::fputs(kBenchHelp, stdout);
      return kExitOk;
    } else {
      return usage_error("bench: unknown option '" + std::string(a) + "'", "bench");
    }
  }
  const Config cfg = quick ? Config::quick() : Config{};
  if (step_kernels) {
    if (!only_device) return usage_error("bench: --step-kernels needs --device", "bench");
#if HCQ_TOOL_FRAMEWORK
    try {
      print_step_kernels(open_device(*only_device), *step_kernels);
      return kExitOk;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hcq bench --step-kernels: %s\n", e.what());
      return kExitFailure;
    }
#else
    std::fprintf(stderr, "hcq bench --step-kernels: this hcq is built without the framework\n");
    return kExitFailure;
#endif
  }
  if (compile_probe) {
    if (!only_device) return usage_error("bench: --compile-probe needs --device", "bench");
#if HCQ_TOOL_FRAMEWORK
    try {
      std::printf("compile_probe_ms %.6f\n",
                  compile_probe_ms(open_device(*only_device), compile_probe->first, compile_probe->second));
      return kExitOk;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hcq bench --compile-probe: %s\n", e.what());
      return kExitFailure;
    }
#else
    std::fprintf(stderr, "hcq bench --compile-probe: this hcq is built without the framework\n");
    return kExitFailure;
#endif
  }

  std::vector<std::string> names;
  if (only_device) {
    names.push_back(*only_device);
  } else {
    names = available_devices();
    for (std::string& sim : simulated_devices()) names.push_back(std::move(sim));
    if (names.empty()) {
      std::fprintf(stderr, "hcq bench: no device opened; 'hcq info' says why\n");
      return kExitFailure;
    }
  }

  std::vector<DeviceResult> results;
  bool all_ok = true;
  for (const std::string& name : names) {
    if (!json) std::fprintf(stderr, "benchmarking %s ...\n", name.c_str());
    results.push_back(bench_device(name, cfg));
    all_ok = all_ok && results.back().errors.empty();
  }
  if (json) {
    print_json(results);
  } else {
    print_table(results, cfg);
  }
  return all_ok ? kExitOk : kExitFailure;
}

}  // namespace hcq::tool
