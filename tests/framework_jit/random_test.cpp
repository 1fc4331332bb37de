// Random tensors inside a jitted function (issue 20: "the RNG advances per call instead of being baked in"): each
// replay draws new numbers, the ones the eager calls would have drawn in the same order. On the default device (the
// CPU device; scripts/test.sh's GPU runs set HCQ_DEVICE to a simulated GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::expect_same_bits;

// The generator worked on the host from its definition (framework/tensor/random.cpp's header comment): the k-th
// random tensor since manual_seed(s) has key fmix64(s * golden + k) (low 32 bits), and element i is the murmur3
// 32-bit finaliser of i * 0x9e3779b1 + key; rand keeps its top 24 bits, scaled by 2^-24.
float host_rand(uint64_t seed, uint64_t k, uint32_t i) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + k;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  uint32_t h = i * 0x9e3779b1u + static_cast<uint32_t>(x);
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return static_cast<float>(h >> 8) * 0x1p-24f;
}

// rand, randn (two draws) and a dropout-style mask per call: three draws a call.
std::vector<Tensor> noisy(const std::vector<Tensor>& in) {
  const Tensor r = Tensor::rand({8}, dtypes::float32, in[0].device());
  const Tensor n = Tensor::randn({2, 4}, dtypes::float32, in[0].device());
  const Tensor keep = r.lt(0.5).cast(dtypes::float32);
  return {in[0] + r, n, in[0] * keep * 2};
}

TEST(FrameworkJitRandom, ReplaysDrawWhatEagerCallsWould) {
  constexpr uint64_t kSeed = 1234;
  constexpr int kCalls = 6;
  const Tensor x = Tensor::full({8}, 3.0).realize();
  Tensor::manual_seed(kSeed);
  TinyJit jit(noisy);
  std::vector<std::vector<Tensor>> jitted;
  for (int c = 0; c < kCalls; ++c) jitted.push_back(jit({x}));
  EXPECT_EQ(jit.info().random_draws, 3u);
  EXPECT_EQ(jit.info().graphs, 1u);

  Tensor::manual_seed(kSeed);
  for (int c = 0; c < kCalls; ++c) {
    const std::vector<Tensor> eager = noisy({x});
    for (size_t k = 0; k < eager.size(); ++k) expect_same_bits(jitted[c][k], eager[k], cat("call ", c, " output ", k));
  }
  // The first output against the host's generator: call c's rand is draw 3c.
  for (int c = 0; c < kCalls; ++c) {
    const std::vector<float> got = jitted[c][0].data<float>();
    for (uint32_t i = 0; i < 8; ++i)
      EXPECT_EQ(got[i], 3.0f + host_rand(kSeed, 3 * static_cast<uint64_t>(c), i)) << "call " << c << " element " << i;
  }
  // Replays differ from each other (and from the capture): no draw is baked in.
  for (int c = 2; c < kCalls; ++c)
    for (size_t k = 0; k < 2; ++k)
      EXPECT_NE(jitted[c][k].data<float>(), jitted[c - 1][k].data<float>()) << "call " << c << " output " << k;
}

// A draw outside the JIT between replays is taken in order, as between eager calls.
TEST(FrameworkJitRandom, DrawsBetweenCallsInterleave) {
  const Tensor x = Tensor::zeros({4}).realize();
  auto f = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] + Tensor::rand({4}, dtypes::float32, in[0].device())};
  };
  Tensor::manual_seed(5);
  TinyJit jit(f);
  std::vector<std::vector<float>> got;
  for (int c = 0; c < 4; ++c) {
    got.push_back(jit({x})[0].data<float>());
    got.push_back(Tensor::rand({4}).data<float>());
  }
  for (size_t d = 0; d < got.size(); ++d)
    for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(got[d][i], host_rand(5, d, i)) << "draw " << d << " element " << i;
}

// The key is a kernel input, not a constant: a second random tensor of a shape is the same kernel (no compile).
TEST(FrameworkJitRandom, RandomTensorsOfAShapeShareOneKernel) {
  (void)Tensor::rand({32}).realize();
  const FrameworkCounters before = framework_counters();
  const Tensor a = Tensor::rand({32}).realize();
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_EQ(after.schedule_misses, before.schedule_misses);
  EXPECT_GE(after.schedule_hits, before.schedule_hits + 1);
  (void)a;
}

// The key reaches the kernel as its one 32-bit value (an anonymous Variable), not through memory: drawing writes
// nothing to the device, so a random tensor (eager, or in a replay) waits for nothing the device does first. The
// kernel's only buffer is its output.
TEST(FrameworkJitRandom, TheKeyIsAKernelValueNotABuffer) {
  std::vector<std::pair<uint32_t, uint32_t>> seen;  // (buffers, values) of each kernel rendered
  jittest::with_render_hook([&](fw::RenderedKernel& k) { seen.emplace_back(k.num_bufs, k.num_vals); },
                            [] {
                              Tensor::manual_seed(9);
                              const std::vector<float> got = Tensor::rand({4}).data<float>();
                              for (uint32_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], host_rand(9, 0, i)) << i;
                            });
  EXPECT_EQ(seen, (std::vector<std::pair<uint32_t, uint32_t>>{{1, 1}}));
}

// Twelve random tensors fused into one kernel: twelve kernel values, one per key, each the right draw's.
TEST(FrameworkJitRandom, OneKernelReadsManyKeys) {
  Tensor::manual_seed(3);
  Tensor sum = Tensor::rand({4});
  for (int d = 1; d < 12; ++d) sum = sum + Tensor::rand({4});
  const uint64_t before = framework_counters().kernels;
  const std::vector<float> got = sum.data<float>();
  EXPECT_EQ(framework_counters().kernels - before, 1u);
  for (uint32_t i = 0; i < 4; ++i) {
    float want = host_rand(3, 0, i);
    for (uint64_t d = 1; d < 12; ++d) want += host_rand(3, d, i);
    EXPECT_FLOAT_EQ(got[i], want) << i;
  }
}

}  // namespace
}  // namespace hcq
