// The simulated GPUs' L2 is a write-back cache (drivers/sim/common/gpu_view.hpp): a kernel's writes reach memory only
// through the writeback a signal's end-of-pipe release performs. A plain write to a flag in order with the queue,
// which carries no cache action, lets the host see the flag while the kernel's result is still in the GPU's cache:
// stale data, as on hardware. The signal that follows writes it back (on NV the compute queue's host release is
// preceded by a system membar). Issue 14, fourth item.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "common/timeline.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "sim_gpus/sim_gpus.hpp"

namespace hcq {
namespace {

using test::SimGpu;

// Waits until the host sees `word` become `want` (a GPU write with no cache action reaches memory at once).
bool host_sees(const uint32_t* word, uint32_t want) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::atomic_ref<const uint32_t>(*word).load(std::memory_order_acquire) != want)
    if (std::chrono::steady_clock::now() > deadline) return false;
    else std::this_thread::yield();
  return true;
}

class SimGpuCache : public ::testing::TestWithParam<SimGpu> {};

TEST_P(SimGpuCache, AKernelsWritesWaitForTheSignalsWriteback) {
  std::unique_ptr<Device> dev = test::open_machine(GetParam());
  if (dev->compiler().identity().find("unavailable") != std::string::npos)
    GTEST_SKIP() << "no compiler here: " << dev->compiler().identity();
  auto prog = dev->load_program("poke_u32", dev->compiler().compile(test::kPokeSource));
  const Allocation out = dev->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  const Allocation flag = dev->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  const auto* result = static_cast<const uint32_t*>(out.host_ptr());

  auto q = dev->compute_queue();
  LaunchArgs args;
  args.bufs = {Sym(out.va)};
  args.vals = {Sym(uint64_t{5}), Sym(uint64_t{0x1234})};
  q->exec(*prog, args, Dims{1u, 1u, 1u}, Dims{32u, 1u, 1u});
  q->write(Sym(flag.va), Sym(uint64_t{1}));
  q->submit();
  ASSERT_TRUE(host_sees(static_cast<const uint32_t*>(flag.host_ptr()), 1u));
  if (GetParam().aql()) {
    // An AQL dispatch packet releases at system scope when its kernel completes (the packet header's release fence
    // scope, which the engine performs): the result is in memory before the flag.
    EXPECT_EQ(result[5], 0x1234u) << "the AQL dispatch's system-scope release did not write the cache back";
  } else {
    EXPECT_EQ(result[5], 0u) << "the kernel's write reached memory without a writeback";
  }

  auto release = dev->compute_queue();
  release->signal(dev->timeline_signal(), test::take_timeline_value(*dev));
  release->submit();
  dev->synchronize();
  EXPECT_EQ(result[5], 0x1234u);

  q.reset();
  release.reset();
  prog.reset();
  dev->free_memory(out);
  dev->free_memory(flag);
}

INSTANTIATE_TEST_SUITE_P(Gpus, SimGpuCache, test::all_sim_gpus(), test::sim_gpu_test_name);

}  // namespace
}  // namespace hcq
