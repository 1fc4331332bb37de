// Host cost of encoding one complete kernel launch through the public queue API, per device kind: a fresh queue,
// then wait + memory_barrier + exec (one buffer, one value, constant operands) + signal, not submitted. This is what
// `hcq bench` reports as encode_ns (the GPU encoders' budget: <= 200 ns); the Time column is per launch.
//
// Yardstick, in the same binary and run: a fresh std::vector<uint32_t> given a memcpy of as many command words as
// the device's launch has, i.e. one heap allocation plus a copy of the bytes, the least any builder that owns its
// words can cost.
//
// Queues are built in batches of 32 and destroyed outside the timed region (manual time), like `hcq bench`.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

#include "../tools/hcq/bench_kernels.hpp"
#include "hcq/hcq.hpp"

namespace {

constexpr int kBatch = 32;
using Clock = std::chrono::steady_clock;

struct Setup {
  hcq::Device* dev = nullptr;
  std::unique_ptr<hcq::Program> program;
  std::unique_ptr<hcq::Buffer> buffer;
};

// Opens the device and loads the bench's one-buffer, one-value kernel; false (and the benchmark skipped with the
// reason) when the device does not open here.
bool set_up(benchmark::State& state, const char* device, Setup& s) {
  try {
    s.dev = &hcq::open_device(device);
    s.program = hcq::tool::load_args_kernel(*s.dev);
    s.buffer = std::make_unique<hcq::Buffer>(*s.dev, 4096);
    return true;
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
}

std::unique_ptr<hcq::HWQueue> encode_launch(hcq::Device& dev, const hcq::Program& program, const hcq::LaunchArgs& args,
                                            uint64_t value) {
  std::unique_ptr<hcq::HWQueue> q = dev.compute_queue();
  q->wait(dev.timeline_signal(), value - 1)
      .memory_barrier()
      .exec(program, args, {1, 1, 1}, {1, 1, 1})
      .signal(dev.timeline_signal(), value);
  return q;
}

void BM_EncodeLaunch(benchmark::State& state, const char* device) {
  Setup s;
  if (!set_up(state, device, s)) return;
  hcq::Device& dev = *s.dev;
  const hcq::LaunchArgs args{{hcq::Sym(s.buffer->va())}, {hcq::Sym(7)}};
  std::vector<std::unique_ptr<hcq::HWQueue>> queues;
  queues.reserve(kBatch);
  for (auto _ : state) {
    const uint64_t value = dev.timeline_value();
    const auto t0 = Clock::now();
    for (int k = 0; k < kBatch; ++k) queues.push_back(encode_launch(dev, *s.program, args, value));
    const auto t1 = Clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / kBatch);
    queues.clear();
    dev.synchronize();  // the destroyed queues' side memory is reusable again, as in a stream of eager launches
  }
  state.SetLabel(dev.name());
}

void BM_YardstickVectorCopy(benchmark::State& state, const char* device) {
  Setup s;
  if (!set_up(state, device, s)) return;
  const hcq::LaunchArgs args{{hcq::Sym(s.buffer->va())}, {hcq::Sym(7)}};
  const std::vector<uint32_t> words = [&] {
    auto q = encode_launch(*s.dev, *s.program, args, s.dev->timeline_value());
    return std::vector<uint32_t>(q->words().begin(), q->words().end());
  }();
  s.dev->synchronize();
  std::vector<std::vector<uint32_t>> copies;
  copies.reserve(kBatch);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    for (int k = 0; k < kBatch; ++k) {
      std::vector<uint32_t> v(words.size());
      std::memcpy(v.data(), words.data(), words.size() * sizeof(uint32_t));
      copies.push_back(std::move(v));
    }
    const auto t1 = Clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count() / kBatch);
    benchmark::DoNotOptimize(copies.data());
    copies.clear();
  }
  state.SetLabel(std::to_string(words.size()) + " words (" + s.dev->name() + "'s launch)");
}

#define HCQ_ENCODE_BENCH(tag, device)                               \
  BENCHMARK_CAPTURE(BM_EncodeLaunch, tag, device)->UseManualTime(); \
  BENCHMARK_CAPTURE(BM_YardstickVectorCopy, tag, device)->UseManualTime()

HCQ_ENCODE_BENCH(CPU, "CPU");
HCQ_ENCODE_BENCH(SIM_AMD_gfx1100, "SIM-AMD:gfx1100");  // PM4 compute queue
HCQ_ENCODE_BENCH(SIM_AMD_gfx942, "SIM-AMD:gfx942");    // AQL compute queue
HCQ_ENCODE_BENCH(SIM_NV_hopper, "SIM-NV:hopper");

}  // namespace
