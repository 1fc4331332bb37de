// Memory planning across the captured call (TinyJit::Options::plan_memory, framework/jit/memory.hpp): the
// intermediates of every realize inside the function share one arena per device. On the default device (the CPU
// device; scripts/test.sh's GPU runs set HCQ_DEVICE to a simulated GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "hcq/allocator.hpp"
#include "hcq/device.hpp"
#include "hcq/jit.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::expect_same_bits;
using jittest::values;

constexpr int64_t kN = 64 * 1024;  // floats: 256 KiB per intermediate
constexpr int kSteps = 6;

// A chain of realized intermediates, each read only by the next: at most two are alive at once.
std::vector<Tensor> chain(const std::vector<Tensor>& in) {
  Tensor h = in[0];
  for (int k = 0; k < kSteps; ++k) h = (h * 0.5f + static_cast<float>(k)).realize();
  return {h.sum()};
}

TEST(FrameworkJitMemory, IntermediatesShareOneArena) {
  const Tensor x(values(kN, 1), {kN});
  Device& dev = open_device(x.device());
  auto in_use = [&] {
    dev.synchronize();
    dev.allocator().free_cache();
    return dev.bytes_in_use() - dev.allocator().cached_bytes();
  };
  const uint64_t bytes = kN * sizeof(float);
  auto held = [&](bool plan, TinyJit::Info* info) {
    TinyJit jit(chain, TinyJit::Options{.plan_memory = plan});
    const uint64_t before = in_use();
    for (int call = 0; call < 4; ++call) {
      const Tensor xi(values(kN, 10 + call), {kN});
      expect_same_bits(jit({xi})[0], chain({xi})[0], cat(plan ? "planned" : "not planned", ", call ", call));
    }
    const uint64_t after = in_use();
    *info = jit.info();
    return after - before;
  };
  TinyJit::Info planned{}, unplanned{};
  TinyJit::Info warm{};
  (void)held(false, &warm);  // the device's side memory (queues, staging) settles on a first run
  const uint64_t without = held(false, &unplanned), with_plan = held(true, &planned);
  // Six intermediates of 256 KiB each before; two alive at a time after (the last one feeds the sum). Measured on
  // the CPU device: 1839104 bytes held without the plan, 790528 with it (the input and the output included).
  // On a GPU the sum is two kernels with a small arena of partials between them (split_reduce): planned too.
  EXPECT_GE(planned.planned_bytes, kSteps * bytes);
  EXPECT_LT(planned.planned_bytes, (kSteps + 1) * bytes);
  EXPECT_GE(planned.arena_bytes, 2 * bytes);
  EXPECT_LT(planned.arena_bytes, 3 * bytes);
  EXPECT_EQ(unplanned.planned_bytes, 0u);
  EXPECT_GE(without, kSteps * bytes);
  EXPECT_LE(with_plan + (kSteps - 2) * bytes, without);
}

}  // namespace
}  // namespace hcq
