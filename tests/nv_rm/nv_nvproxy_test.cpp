// The NV backend behind gVisor's NVIDIA proxy with its default driver capabilities (compute, utility), on SIM-NV's
// "-gvisor" GPUs (SimNv::refuse_as_nvproxy): the simulated driver refuses what the proxy refuses, with its answers,
// and the backend opens through its fallbacks: an older usermode class where AMPERE_USERMODE_A is refused, GPU
// mappings by UVM alone without NV01_MEMORY_VIRTUAL and RM_MAP_MEMORY_DMA, fault reports without the faulting
// address where DEBUG_READ_MMU_FAULT_INFO is refused; its info says it is sandboxed.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "nv/encode.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/debugger.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/nv_device.hpp"
#include "sim/nv/sim_nv_device.hpp"

namespace hcq::nv {
namespace {

namespace st = abi::status;

constexpr uint64_t kUnmapped = 0xdead0000;  // below every mapping of the process's VA space

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class NvBehindNvproxy : public ::testing::Test {
 protected:
  void open(const std::string& gpu) { dev_ = sim::open_sim_nv_gpu("SIM-NV:" + gpu + "-gvisor", gpu + "-gvisor"); }
  void TearDown() override { dev_.reset(); }
  NvDevice& nv() { return static_cast<NvDevice&>(*dev_); }
  RmClient& rm() { return nv().gpu().rm(); }

  // A copy engine round trip and a timeline signal through GPU mappings made by UVM alone.
  void copy_round_trip() {
    const BufferSpec host{.cpu_access = true, .zero = true};
    Allocation src = dev_->alloc_memory(4096, host);
    Allocation dst = dev_->alloc_memory(4096, host);
    std::vector<uint8_t> bytes(4096);
    for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7 + 1);
    std::memcpy(src.host_ptr(), bytes.data(), bytes.size());
    auto q = dev_->copy_queue();
    q->copy(Sym(dst.va), Sym(src.va), bytes.size());
    q->signal(dev_->timeline_signal(), hcq::test::take_timeline_value(*dev_));
    q->submit();
    dev_->synchronize();
    EXPECT_EQ(std::memcmp(dst.host_ptr(), bytes.data(), bytes.size()), 0);
    dev_->free_memory(src);
    dev_->free_memory(dst);
  }

  std::unique_ptr<Device> dev_;
};

TEST_F(NvBehindNvproxy, AmpereOpensWithTheTuringUsermodeClassAndUvmMappings) {
  open("ampere");
  const NvGpuFacts& f = nv().gpu().facts();
  EXPECT_EQ(f.usermode_class, 0xc461u);  // TURING_USERMODE_A: AMPERE_USERMODE_A is not proxied
  EXPECT_EQ(f.refused, (std::vector<std::string>{"usermode class 0xc561", "NV01_MEMORY_VIRTUAL"}));
  EXPECT_TRUE(has(dev_->info().driver_version,
                  "; sandboxed: a driver proxy refused usermode class 0xc561, NV01_MEMORY_VIRTUAL (as gVisor's "
                  "nvproxy does)"))
      << dev_->info().driver_version;
  copy_round_trip();
}

TEST_F(NvBehindNvproxy, HopperKeepsItsOwnUsermodeClass) {
  open("hopper");
  const NvGpuFacts& f = nv().gpu().facts();
  EXPECT_EQ(f.usermode_class, 0xc661u);  // HOPPER_USERMODE_A is proxied
  EXPECT_EQ(f.refused, std::vector<std::string>{"NV01_MEMORY_VIRTUAL"});
  copy_round_trip();
}

TEST_F(NvBehindNvproxy, APlainDriverIsNotCalledSandboxed) {
  dev_ = sim::open_sim_nv_gpu("SIM-NV:ampere", "ampere");
  EXPECT_EQ(nv().gpu().facts().usermode_class, 0xc561u);
  EXPECT_TRUE(nv().gpu().facts().refused.empty());
  EXPECT_FALSE(has(dev_->info().driver_version, "sandboxed")) << dev_->info().driver_version;
}

// The proxy's answers, as the backend sees them: a refused class and control get an NV_STATUS, a refused escape
// fails the ioctl.
TEST_F(NvBehindNvproxy, RefusalsCarryTheProxysStatuses) {
  open("ampere");
  auto q = dev_->compute_queue();  // makes the channels and the debugger
  abi::MemoryVirtualAllocParams vm{};
  vm.limit = 0xffffff;
  try {
    rm().alloc(nv().gpu().device(), abi::cls::memory_virtual, vm);
    ADD_FAILURE() << "NV01_MEMORY_VIRTUAL allocated";
  } catch (const RmError& e) {
    EXPECT_EQ(e.status(), st::err_invalid_class) << e.what();
  }
  abi::ReadMmuFaultInfoParams m{};
  try {
    rm().control(nv().fault_debugger(), abi::ctrl::debug_read_mmu_fault_info, m);
    ADD_FAILURE() << "READ_MMU_FAULT_INFO answered";
  } catch (const RmError& e) {
    EXPECT_EQ(e.status(), st::err_not_supported) << e.what();
  }
  try {
    rm().map_memory_dma(nv().gpu().device(), nv().gpu().device(), nv().gpu().device(), 4096, 0x100000, 0);
    ADD_FAILURE() << "RM_MAP_MEMORY_DMA passed";
  } catch (const OsError& e) {
    EXPECT_EQ(e.err(), EINVAL) << e.what();
  }
}

// A launch whose program lies at an unmapped address: the QMD itself is fetched through a UVM-only mapping, the SM's
// fault reaches the report, which says why the address is missing.
TEST_F(NvBehindNvproxy, FaultReportSaysTheAddressIsUnknown) {
  open("ampere");
  auto q = dev_->compute_queue();
  const NvArchInfo& arch = *nv().gpu().facts().arch;
  Allocation qmd_buf = dev_->alloc_memory(4096, BufferSpec{.cpu_access = true, .zero = true});
  QmdBuilder qb(arch);
  std::vector<uint32_t> qmd(qb.layout().size_words, 0);
  QmdProgram p;
  p.code_address = kUnmapped;
  p.code_size = 256;
  p.registers = 16;
  qb.program(qmd, p);
  qb.launch(qmd, Sym(kUnmapped + 0x10000), 0x1000, Dims{1u, 1u, 1u}, Dims{32u, 1u, 1u});
  std::memcpy(qmd_buf.host_ptr(), qmd.data(), qmd.size() * 4);
  std::vector<uint32_t> words;
  PushbufferEncoder(arch, words).launch(Sym(qmd_buf.va));
  nv().submit_raw(NvEngine::compute, words);
  q->signal(dev_->timeline_signal(), hcq::test::take_timeline_value(*dev_));
  q->submit();
  std::string msg;
  try {
    dev_->synchronize();
    ADD_FAILURE() << "synchronize after a fault returned";
  } catch (const DeviceFault& e) {
    msg = e.what();
  }
  EXPECT_TRUE(has(msg, "MMU fault (RM error 31")) << msg;
  EXPECT_TRUE(has(msg,
                  "; RM's MMU fault record (first fault by GPC0 client GCC (0x11)): faulting VA unknown "
                  "(DEBUG_READ_MMU_FAULT_INFO refused: NV_ERR_NOT_SUPPORTED, as gVisor's nvproxy answers)"))
      << msg;
  EXPECT_FALSE(has(msg, "faulting VA 0x")) << msg;
}

}  // namespace
}  // namespace hcq::nv
