// The fault details RM keeps beyond the error notifier, read the way a user-space driver can: through the SM
// debugger object (GT200_DEBUGGER) on the compute object, READ_ALL_SM_ERROR_STATES then READ_MMU_FAULT_INFO
// (nv/rm/abi/debugger.hpp). On SIM-NV an SM's fetch from an unmapped VA is recorded as hardware and RM record it
// (address, PTE fault, read access, GPC client) and the DeviceFault names it; a copy engine's fault is not recorded
// (RM logs it only) and the report still carries everything the notifier gives; both channels of the group stop
// and the report leads with the one whose engine faulted; a query that fails is said so in the message, which keeps
// the original error; malformed debugger calls get RM's statuses.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "nv/encode.hpp"
#include "nv/facts/methods.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/debugger.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/nv_device.hpp"
#include "sim/nv/sim_nv_device.hpp"

namespace hcq::nv {
namespace {

namespace st = abi::status;

// No mapping of the process's VA space lies this low: every GPU access to it faults.
constexpr uint64_t kUnmapped = 0xdead0000;

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class NvFaultInfoOnSim : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_nv_gpu(std::string("SIM-NV:") + GetParam(), GetParam());
    queue_ = dev_->compute_queue();  // makes the channels and the debugger
  }
  void TearDown() override {
    queue_.reset();
    dev_.reset();
  }
  NvDevice& nv() { return static_cast<NvDevice&>(*dev_); }
  RmClient& rm() { return nv().gpu().rm(); }
  bool blackwell() { return nv().gpu().facts().sm / 10 >= 10; }

  // A launch by hand: a QMD whose program starts at `code` and whose constant bank 0 is at `cbank0`, in a
  // host-visible buffer the GPU maps. Returns that buffer's VA (a mapped address, usable as `code`).
  uint64_t launch_raw(uint64_t code, uint64_t cbank0) {
    const NvArchInfo& arch = *nv().gpu().facts().arch;
    qmd_buf_ = dev_->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
    if (code == 0) code = qmd_buf_.va + 2048;  // mapped: the fetch of the program succeeds
    QmdBuilder qb(arch);
    std::vector<uint32_t> qmd(qb.layout().size_words, 0);
    QmdProgram p;
    p.code_address = code;
    p.code_size = 256;
    p.registers = 16;
    qb.program(qmd, p);
    qb.launch(qmd, Sym(cbank0), 0x1000, Dims{1u, 1u, 1u}, Dims{32u, 1u, 1u});
    std::memcpy(qmd_buf_.host_ptr(), qmd.data(), qmd.size() * 4);
    std::vector<uint32_t> words;
    PushbufferEncoder(arch, words).launch(Sym(qmd_buf_.va));
    nv().submit_raw(NvEngine::compute, words);
    return qmd_buf_.va;
  }

  // Ends the compute queue with a timeline signal, submits it; synchronize must raise a DeviceFault: its message.
  std::string fault_message(HWQueue& q) {
    q.signal(dev_->timeline_signal(), hcq::test::take_timeline_value(*dev_));
    q.submit();
    try {
      dev_->synchronize();
      ADD_FAILURE() << "synchronize after a fault returned";
    } catch (const DeviceFault& e) {
      return e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a DeviceFault: " << e.what();
    }
    return {};
  }

  abi::NvStatus control_status(abi::Handle object, uint32_t cmd, void* params, uint32_t size) {
    try {
      rm().control(object, cmd, params, size);
      return st::ok;
    } catch (const RmError& e) {
      return e.status();
    }
  }
  abi::NvStatus alloc_debugger_status(const abi::DebuggerAllocParams& p) {
    abi::DebuggerAllocParams copy = p;
    try {
      const abi::Handle h = rm().alloc(nv().gpu().device(), abi::cls::gt200_debugger, copy);
      rm().free(nv().gpu().device(), h);
      return st::ok;
    } catch (const RmError& e) {
      return e.status();
    }
  }

  std::unique_ptr<Device> dev_;
  std::unique_ptr<HWQueue> queue_;
  Allocation qmd_buf_{};
};

TEST_P(NvFaultInfoOnSim, NothingRecordedBeforeAFault) {
  const abi::Handle dbg = nv().fault_debugger();
  ASSERT_NE(dbg, 0u);
  abi::ReadMmuFaultInfoParams m{};
  m.count = 77;
  EXPECT_EQ(control_status(dbg, abi::ctrl::debug_read_mmu_fault_info, &m, sizeof m), st::ok);
  EXPECT_EQ(m.count, 0u);  // the simulator invents nothing
}

TEST_P(NvFaultInfoOnSim, InstructionFetchFromAnUnmappedAddress) {
  launch_raw(kUnmapped, kUnmapped + 0x10000);
  const std::string msg = fault_message(*queue_);
  EXPECT_TRUE(has(msg, "MMU fault (RM error 31")) << msg;
  EXPECT_TRUE(has(msg, "on GR0")) << msg;
  EXPECT_TRUE(has(msg, "RM's MMU fault record")) << msg;
  EXPECT_TRUE(has(msg, "faulting VA " + hex(kUnmapped) + " (PTE fault")) << msg;
  EXPECT_TRUE(has(msg, "read access")) << msg;
  EXPECT_TRUE(has(msg, blackwell() ? "GPC0 client (0x11)" : "GPC0 client GCC (0x11)")) << msg;
  // Everything the notifier path gave before is still there.
  EXPECT_TRUE(has(msg, "compute channel")) << msg;
  EXPECT_TRUE(has(msg, "entry at GPGet")) << msg;
  EXPECT_TRUE(has(msg, "timeline signal")) << msg;
  EXPECT_TRUE(has(msg, "PROGRAM_ADDRESS")) << msg;  // the simulator's own reason
  // RM recovers the whole channel group: the copy channel stopped too, and is named after the one that faulted.
  EXPECT_TRUE(has(msg, "stopped with it (same channel group): copy channel")) << msg;
  EXPECT_LT(msg.find("compute channel"), msg.find("copy channel")) << msg;
}

TEST_P(NvFaultInfoOnSim, ConstantBankAtAnUnmappedAddress) {
  launch_raw(0, kUnmapped);
  const std::string msg = fault_message(*queue_);
  EXPECT_TRUE(has(msg, "MMU fault (RM error 31")) << msg;
  EXPECT_TRUE(has(msg, "faulting VA " + hex(kUnmapped) + " (PTE fault (no valid page table entry), read access)"))
      << msg;
  // Exactly one fault recorded: no "then".
  EXPECT_FALSE(has(msg, ", then faulting VA")) << msg;
}

TEST_P(NvFaultInfoOnSim, CopyEngineFaultKeepsTheNotifierReport) {
  const Allocation dst = dev_->alloc_memory(4096, BufferSpec{.cpu_access = true});
  auto q = dev_->copy_queue();
  q->copy(dst.va, kUnmapped, 256);
  const std::string msg = fault_message(*q);
  EXPECT_TRUE(has(msg, "MMU fault (RM error 31")) << msg;
  // RM records only the SMs' faults; it says so, and the rest of the report is intact.
  EXPECT_TRUE(has(msg, "RM recorded no MMU fault and no SM error")) << msg;
  EXPECT_FALSE(has(msg, "RM's MMU fault record")) << msg;
  EXPECT_TRUE(has(msg, "copy channel")) << msg;
  EXPECT_TRUE(has(msg, "LAUNCH_DMA")) << msg;
  EXPECT_TRUE(has(msg, hex(kUnmapped))) << msg;  // from the simulator's detail
  // The notifier names the engine that faulted, though both channels are in one graphics channel group; every
  // member's notifier says so, and the report leads with the copy channel.
  EXPECT_TRUE(has(msg, "on COPY0")) << msg;
  EXPECT_TRUE(has(msg, "stopped with it (same channel group): compute channel")) << msg;
  EXPECT_LT(msg.find("copy channel"), msg.find("compute channel")) << msg;
  q.reset();
  dev_->free_memory(dst);
}

TEST_P(NvFaultInfoOnSim, PbdmaErrorIsNotQueried) {
  const std::vector<uint32_t> bad = {pb::header(SecOp::inc_method, 7, 0x200, 1), 0x1234};
  nv().submit_raw(NvEngine::compute, bad);
  const std::string msg = fault_message(*queue_);
  EXPECT_TRUE(has(msg, "PBDMA error (RM error 32")) << msg;
  EXPECT_FALSE(has(msg, "RM's")) << msg;
  EXPECT_FALSE(has(msg, "RM recorded")) << msg;
}

TEST_P(NvFaultInfoOnSim, FailedQueryIsReportedAndTheFaultKept) {
  // The debugger goes behind the device's back: the query after the fault fails with RM's status.
  rm().free(nv().gpu().device(), nv().fault_debugger());
  launch_raw(kUnmapped, kUnmapped);
  const std::string msg = fault_message(*queue_);
  EXPECT_TRUE(has(msg, "MMU fault (RM error 31")) << msg;
  EXPECT_TRUE(has(msg, "RM's fault record could not be read")) << msg;
  EXPECT_TRUE(has(msg, "NV_ERR_OBJECT_NOT_FOUND")) << msg;
  EXPECT_TRUE(has(msg, "compute channel")) << msg;
  EXPECT_TRUE(has(msg, hex(kUnmapped))) << msg;  // the simulator's detail survives
  // Sticky: the same message again.
  try {
    dev_->synchronize();
    ADD_FAILURE() << "the second synchronize returned";
  } catch (const DeviceFault& e) {
    EXPECT_EQ(msg, e.what());
  }
}

TEST_P(NvFaultInfoOnSim, MalformedDebuggerCallsGetRmStatuses) {
  const abi::Handle dbg = nv().fault_debugger();
  ASSERT_NE(dbg, 0u);
  abi::ReadMmuFaultInfoParams m{};
  // A parameter block of the wrong size.
  EXPECT_EQ(control_status(dbg, abi::ctrl::debug_read_mmu_fault_info, &m, sizeof m - 8), st::err_invalid_argument);
  EXPECT_EQ(control_status(dbg, abi::ctrl::debug_read_mmu_fault_info, nullptr, sizeof m), st::err_invalid_argument);
  // A debugger command sent to an object that does not export it, and to a handle that does not exist.
  EXPECT_EQ(control_status(nv().gpu().device(), abi::ctrl::debug_read_mmu_fault_info, &m, sizeof m),
            st::err_not_supported);
  EXPECT_EQ(control_status(0xcafe0001, abi::ctrl::debug_read_mmu_fault_info, &m, sizeof m), st::err_object_not_found);
  // More SMs than one call may read.
  auto sm = std::make_unique<abi::ReadAllSmErrorStatesParams>();
  *sm = abi::ReadAllSmErrorStatesParams{};
  sm->target_channel = nv().gpu().device();  // not a channel
  EXPECT_EQ(control_status(dbg, abi::ctrl::debug_read_all_sm_error_states, sm.get(), sizeof *sm),
            st::err_invalid_object_handle);

  // Allocation: the old interface, an object that is not there, one that is not a compute object.
  abi::DebuggerAllocParams p{};
  p.app_client = rm().root();
  p.class3d_object = 0xbad;
  EXPECT_EQ(alloc_debugger_status(p), st::err_invalid_object_parent);
  p.class3d_object = nv().gpu().device();
  EXPECT_EQ(alloc_debugger_status(p), st::err_invalid_object);
  p.debugger_client_obsolete = rm().root();
  EXPECT_EQ(alloc_debugger_status(p), st::err_invalid_argument);
  p = abi::DebuggerAllocParams{};
  p.app_client = 0xc1d0ffff;  // no such client
  p.class3d_object = 0xbad;
  EXPECT_EQ(alloc_debugger_status(p), st::err_invalid_client);
}

INSTANTIATE_TEST_SUITE_P(Gpus, NvFaultInfoOnSim, ::testing::Values("ampere", "hopper", "blackwell"));

}  // namespace
}  // namespace hcq::nv
