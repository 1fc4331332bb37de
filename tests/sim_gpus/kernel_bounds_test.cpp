// A kernel's accesses on a simulated GPU are checked against that GPU's own page tables, as its MMU checks them: a
// write past the end of a buffer, at any distance, into memory this GPU does not map (free VA, or memory only another
// GPU of the machine maps) is a page fault at that exact address, reported as the device's sticky DeviceFault; the
// process lives, nothing outside the kernel's memory changes, and other devices keep working. Issue 14, first item.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"
#include "sim/common/gpu_view.hpp"
#include "sim_gpus/sim_gpus.hpp"

namespace hcq {
namespace {

using test::kPokeSource;
using test::open_machine;
using test::open_peer;
using test::SimGpu;

// How each backend names the faulting address in its DeviceFault.
std::string fault_address_text(const SimGpu& g, uint64_t va) {
  return g.amd() ? "GPU memory fault at " + hex(va) : "faulting VA " + hex(va);
}

class SimKernelBounds : public ::testing::TestWithParam<SimGpu> {
 protected:
  void SetUp() override {
    dev_ = open_machine(GetParam());
    if (dev_->compiler().identity().find("unavailable") != std::string::npos)
      GTEST_SKIP() << "no compiler for " << GetParam().name() << " here: " << dev_->compiler().identity();
  }
  void TearDown() override { release(); }

  // Frees what the test allocated on dev_ and reopens it: a faulted device stays faulted.
  void reopen(unsigned gpus = 1) {
    release();
    dev_ = open_machine(GetParam(), gpus);
  }
  void release() {
    for (const Allocation& a : allocs_) dev_->free_memory(a);
    allocs_.clear();
    if (hole_) process().va.free(hole_, kHoleBytes);
    hole_ = 0;
  }

  // Runs poke(buf, index, value) over one workgroup of 64 threads and synchronizes: the DeviceFault's message, or
  // "" when the kernel ran.
  static std::string poke(Device& dev, uint64_t buf, uint64_t byte_offset, uint32_t value) {
    auto prog = dev.load_program("poke_u32", dev.compiler().compile(kPokeSource));
    auto q = dev.compute_queue();
    LaunchArgs args;
    args.bufs = {Sym(buf)};
    args.vals = {Sym(byte_offset / 4), Sym(uint64_t{value})};
    q->exec(*prog, args, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
    q->signal(dev.timeline_signal(), test::take_timeline_value(dev));
    q->submit();
    try {
      dev.synchronize();
    } catch (const DeviceFault& e) {
      return e.what();
    }
    return {};
  }

  // A 4 KiB buffer and, above it within a 32-bit index's reach, a hole of the unified VA reserved by the test (so no
  // allocation can land there): writes from the buffer into the hole go past its end into memory nobody maps. The
  // VA space hands out its lowest free range first, so a hole that lands below the buffer (in a gap) is kept,
  // filling that gap, and the next one is tried.
  Allocation buffer_before_hole() {
    const Allocation a = dev_->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
    allocs_.push_back(a);
    EXPECT_LT(a.va - process().va.base(), sim::GpuView::kMaxMirrorBytes) << "the buffer is outside the GPU's mirror";
    std::vector<uint64_t> gaps;
    for (int attempt = 0; attempt < 64 && !hole_; ++attempt) {
      const uint64_t hole = process().va.alloc(kHoleBytes);
      if (hole > a.va && hole + kHoleBytes - a.va <= kIndexReach) hole_ = hole;
      else gaps.push_back(hole);
    }
    for (uint64_t g : gaps) process().va.free(g, kHoleBytes);
    EXPECT_NE(hole_, 0u) << "no free VA above the buffer within reach of a 32-bit index";
    return a;
  }

  static constexpr uint64_t kHoleBytes = uint64_t{2} << 30;
  static constexpr uint64_t kIndexReach = uint64_t{16} << 30;  // a uint32_t index of 4-byte elements
  std::unique_ptr<Device> dev_;
  std::vector<Allocation> allocs_;
  uint64_t hole_ = 0;
};

// Past the end at several distances into the hole: its first page, then 64 KiB, 1 MiB, 2 MiB (a write 2 MiB past a
// buffer used to kill the process on SIM-AMD), 16 MiB and almost 2 GiB further. Each fault names its exact address;
// the buffer itself is untouched.
TEST_P(SimKernelBounds, WritesPastTheEndFaultAtTheirAddress) {
  for (const uint64_t distance : {uint64_t{0}, uint64_t{64} << 10, uint64_t{1} << 20, (uint64_t{2} << 20) + 8,
                                  uint64_t{16} << 20, kHoleBytes - 4}) {
    SCOPED_TRACE(cat("distance ", distance, " into the hole"));
    reopen();
    const Allocation a = buffer_before_hole();
    const uint64_t target = hole_ + distance;
    const std::string msg = poke(*dev_, a.va, target - a.va, 0xabcd1234u);
    EXPECT_NE(msg.find(fault_address_text(GetParam(), target)), std::string::npos) << msg;
    EXPECT_EQ(*static_cast<const uint32_t*>(a.host_ptr()), 0u);
  }
}

// The same kernel in bounds writes where it should: the check costs a good kernel nothing.
TEST_P(SimKernelBounds, InBoundsWritesLand) {
  const Allocation a = buffer_before_hole();
  EXPECT_EQ(poke(*dev_, a.va, 4092, 77u), "");
  EXPECT_EQ(static_cast<const uint32_t*>(a.host_ptr())[1023], 77u);
}

// Page tables are per GPU: memory of the second GPU of the machine, which the first does not map, faults there and is
// left as it was; mapped as a peer, the same write lands.
TEST_P(SimKernelBounds, AnotherGpusMemoryFaultsUntilMapped) {
  reopen(2);
  std::unique_ptr<Device> peer = open_peer(GetParam(), *dev_);
  const Allocation theirs = peer->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  const std::string msg = poke(*dev_, theirs.va, 8, 5u);
  EXPECT_NE(msg.find(fault_address_text(GetParam(), theirs.va + 8)), std::string::npos) << msg;
  EXPECT_EQ(static_cast<const uint32_t*>(theirs.host_ptr())[2], 0u);

  std::unique_ptr<Device> fresh = open_machine(GetParam(), 2);
  std::unique_ptr<Device> fresh_peer = open_peer(GetParam(), *fresh);
  const Allocation mine = fresh_peer->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  fresh->map_memory(mine);
  EXPECT_EQ(poke(*fresh, mine.va, 8, 5u), "");
  EXPECT_EQ(static_cast<const uint32_t*>(mine.host_ptr())[2], 5u);
  fresh_peer->free_memory(mine);
  peer->free_memory(theirs);
}

// After a GPU's fault, the process and its other devices carry on: the CPU device runs the same kernel.
TEST_P(SimKernelBounds, OtherDevicesKeepWorking) {
  const Allocation a = buffer_before_hole();
  ASSERT_NE(poke(*dev_, a.va, hole_ - a.va, 1u), "");
  Device& cpu = open_device("CPU:0");
  const Allocation c = cpu.alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  EXPECT_EQ(poke(cpu, c.va, 40, 9u), "");
  EXPECT_EQ(static_cast<const uint32_t*>(c.host_ptr())[10], 9u);
  cpu.free_memory(c);
}

INSTANTIATE_TEST_SUITE_P(Gpus, SimKernelBounds, test::all_sim_gpus(), test::sim_gpu_test_name);

}  // namespace
}  // namespace hcq
