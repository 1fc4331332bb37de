// A kernel's own memory accesses to addresses the GPU does not map, on SIM-NV:hopper: each is an MMU fault
// (ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT, Xid 31) of GR0, which RM records for the compute context with the faulting
// VA and the access (NV_PFAULT_ACCESS_TYPE_VIRT_READ / _WRITE / _ATOMIC) from the SM's L1 (GPC client T1_0); the
// backend makes it the device's sticky DeviceFault naming both, and the simulator's own reason says the same.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "sim/nv/sim_nv_device.hpp"

namespace hcq::nv {
namespace {

// No mapping of the process's VA space lies this low: every GPU access to it faults.
constexpr uint64_t kUnmapped = 0xdead0000;

// out[i] = in[i] + 1: reads buffer 1, writes buffer 0.
constexpr const char* kAddOne = R"(
HCQ_KERNEL(add_one_u32, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[i] = HCQ_BUF(uint32_t, 1)[i] + 1u;
  }
}
)";

// Every thread adds 1 to counter[0] atomically: atomicAdd on the GPU, the C11 builtin in the host twin.
constexpr const char* kCount = R"(
HCQ_KERNEL(count_threads, 1, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) {
#if defined(HCQ_TARGET_NV)
      atomicAdd(HCQ_BUF(uint32_t, 0), 1u);
#else
      __atomic_fetch_add(HCQ_BUF(uint32_t, 0), 1u, __ATOMIC_RELAXED);
#endif
    }
  }
}
)";

// The notifier part of a report: "MMU fault (RM error 31, Xid 31, on GR0 at GPU time <t> ns)" with <t> cut out.
std::string notifier_part(const std::string& msg) {
  const size_t from = msg.find("MMU fault (RM error");
  const size_t time = msg.find(" at GPU time ", from);
  const size_t end = msg.find(" ns)", time);
  if (from == std::string::npos || time == std::string::npos || end == std::string::npos) return msg;
  return msg.substr(from, time - from) + msg.substr(end + 3, 1);
}
// The part of `msg` from `start` up to (not including) the next "; ", or "" when `start` is not there.
std::string part(const std::string& msg, const std::string& start) {
  const size_t from = msg.find(start);
  if (from == std::string::npos) return {};
  const size_t end = msg.find("; ", from);
  return msg.substr(from, end == std::string::npos ? std::string::npos : end - from);
}
// The end of the simulator's own reason (in the report's "(simulated GPU: ...)"), from "touched memory" on.
std::string simulator_reason(const std::string& msg) {
  const size_t from = msg.find("touched memory", msg.find("(simulated GPU: "));
  if (from == std::string::npos) return {};
  return msg.substr(from, msg.find(") [", from) - from);
}

class NvKernelFaultOnSim : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_nv_gpu("SIM-NV:hopper", "hopper");
    if (dev_->compiler().identity().find("unavailable") != std::string::npos)
      GTEST_SKIP() << "no NVRTC here: " << dev_->compiler().identity();
    buf_ = dev_->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  }
  void TearDown() override {
    if (buf_.va) dev_->free_memory(buf_);
    dev_.reset();
  }

  // Runs `kernel` of `source` over 64 threads with `bufs` and the value 64; synchronize must raise a DeviceFault,
  // the same one twice: its message.
  std::string run_to_fault(const char* source, const char* kernel, std::vector<uint64_t> bufs) {
    auto prog = dev_->load_program(kernel, dev_->compiler().compile(source));
    auto q = dev_->compute_queue();
    LaunchArgs args;
    for (uint64_t b : bufs) args.bufs.push_back(Sym(b));
    args.vals = {Sym(uint64_t{64})};
    q->exec(*prog, args, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
    q->signal(dev_->timeline_signal(), hcq::test::take_timeline_value(*dev_));
    q->submit();
    std::string msg;
    try {
      dev_->synchronize();
      ADD_FAILURE() << "synchronize after a fault returned";
    } catch (const DeviceFault& e) {
      msg = e.what();
    }
    try {
      dev_->synchronize();
      ADD_FAILURE() << "the second synchronize returned";
    } catch (const DeviceFault& e) {
      EXPECT_EQ(msg, e.what());
    }
    return msg;
  }

  std::unique_ptr<Device> dev_;
  Allocation buf_{};
};

TEST_F(NvKernelFaultOnSim, ReadOfAnUnmappedAddress) {
  const std::string msg = run_to_fault(kAddOne, "add_one_u32", {buf_.va, kUnmapped});
  EXPECT_EQ(notifier_part(msg), "MMU fault (RM error 31, Xid 31, on GR0)") << msg;
  EXPECT_EQ(part(msg, "RM's MMU fault record"),
            "RM's MMU fault record (first fault by GPC0 client T1_0 (0x0)): faulting VA 0xdead0000 (PTE fault (no "
            "valid page table entry), read access)")
      << msg;
  EXPECT_EQ(simulator_reason(msg), "touched memory the GPU does not map; read of address 0xdead0000") << msg;
}

TEST_F(NvKernelFaultOnSim, WriteOfAnUnmappedAddress) {
  const std::string msg = run_to_fault(kAddOne, "add_one_u32", {kUnmapped, buf_.va});
  EXPECT_EQ(notifier_part(msg), "MMU fault (RM error 31, Xid 31, on GR0)") << msg;
  EXPECT_EQ(part(msg, "RM's MMU fault record"),
            "RM's MMU fault record (first fault by GPC0 client T1_0 (0x0)): faulting VA 0xdead0000 (PTE fault (no "
            "valid page table entry), write access)")
      << msg;
  EXPECT_EQ(simulator_reason(msg), "touched memory the GPU does not map; write of address 0xdead0000") << msg;
}

TEST_F(NvKernelFaultOnSim, AtomicOnAnUnmappedAddress) {
  const std::string msg = run_to_fault(kCount, "count_threads", {kUnmapped + 0x40});
  EXPECT_EQ(notifier_part(msg), "MMU fault (RM error 31, Xid 31, on GR0)") << msg;
  EXPECT_EQ(part(msg, "RM's MMU fault record"),
            "RM's MMU fault record (first fault by GPC0 client T1_0 (0x0)): faulting VA 0xdead0040 (PTE fault (no "
            "valid page table entry), atomic access)")
      << msg;
  EXPECT_EQ(simulator_reason(msg), "touched memory the GPU does not map; atomic of address 0xdead0040") << msg;
}

// The same kernels with every buffer mapped run to the end: the trap changes nothing for a good launch.
TEST_F(NvKernelFaultOnSim, MappedBuffersRunNormally) {
  auto prog = dev_->load_program("count_threads", dev_->compiler().compile(kCount));
  auto q = dev_->compute_queue();
  LaunchArgs args;
  args.bufs = {Sym(buf_.va)};
  args.vals = {Sym(uint64_t{64})};
  q->exec(*prog, args, Dims{2u, 1u, 1u}, Dims{64u, 1u, 1u});
  q->signal(dev_->timeline_signal(), hcq::test::take_timeline_value(*dev_));
  q->submit();
  dev_->synchronize();
  EXPECT_EQ(*static_cast<const uint32_t*>(buf_.host_ptr()), 64u);  // 128 threads, the first 64 count
}

}  // namespace
}  // namespace hcq::nv
