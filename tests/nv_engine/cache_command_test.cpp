// Cache and ordering methods on the NV channel executor: WFI and MEM_OP_A..D checked as the host checks them (an
// undefined scope, operation or TLB parameter faults the channel naming the method), which methods write the L2 back
// or invalidate caches (ChannelHost::caches, recorded by the test host) and that they do so before the semaphore that
// follows them lands; drivers/nv's own streams (compute signal after a launch, copy signal) checked for the
// write-back the host needs. Operation numbers in hand-built methods are written from clc56f.h / clc96f.h, not from
// hcq's tables, so the tables are checked too.
#include "engine_fixture.hpp"
#include "nv/encode.hpp"

namespace hcq::sim::nv_engine::testing {
namespace {

using nv::NvArch;
constexpr uint8_t kWb = kCacheWriteback, kInv = kCacheInvalidate;

// MEM_OP_D.OPERATION values (clc56f.h; 0x11 from clc96f.h) and where the field sits.
constexpr uint32_t kOpMembar = 0x05, kOpTlbInvalidate = 0x09, kOpL2SysmemInvalidate = 0x0e, kOpL2FlushDirty = 0x10,
                   kOpL2SysmemNcohInvalidate = 0x11, kOpShift = 27;

class NvCacheCommands : public ::testing::TestWithParam<NvArch> {
 protected:
  void SetUp() override {
    host_.map(kDataVa, 1 << 16);
    group_ = std::make_unique<EngineGroup>(EngineOptions{});
    const nv::NvArchInfo& a = nv::arch_info(GetParam());
    host_.allow_classes({a.classes.compute, a.classes.copy});
    ch_ = std::make_unique<TestChannel>(host_, *group_, GetParam(), NvEngineKind::compute);
  }
  void TearDown() override { ch_.reset(); }
  // MEM_OP_A..D under one INC header on subchannel 0.
  void mem_op(Push& p, uint32_t a, uint32_t c, uint32_t d) { p.inc(0, ch_->host_class(), "MEM_OP_A", {a, 0, c, d}); }
  std::vector<uint8_t> run(const Push& p) {
    ch_->submit(p.w);
    EXPECT_EQ(ch_->settle(), RunnerState::idle) << ch_->runner().describe();
    return host_.cache_ops();
  }
  // The stream faults; its reason after the position ("...: <reason>"), and the kind.
  std::string fault_of(const Push& p, ChannelFaultKind kind) {
    ch_->submit(p.w);
    EXPECT_EQ(ch_->settle(), RunnerState::faulted) << ch_->runner().describe();
    const std::vector<ChannelFault> f = host_.faults();
    EXPECT_EQ(f.size(), 1u);
    if (f.empty()) return {};
    EXPECT_EQ(f[0].kind, kind);
    const std::string head =
        "compute channel 1 faulted at GPFIFO entry 0 (pushbuffer " + hex(kPbVa + (1u << 22)) + " dword ";
    EXPECT_EQ(f[0].reason.rfind(head, 0), 0u) << f[0].reason;
    const size_t colon = f[0].reason.find("): ");
    return colon == std::string::npos ? f[0].reason : f[0].reason.substr(colon + 3);
  }
  std::string host_prefix() const { return std::string(ch_->host_class().prefix); }
  std::string compute_prefix() const { return std::string(ch_->compute_class().prefix); }

  TestHost host_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestChannel> ch_;
};

TEST_P(NvCacheCommands, MemOpsAndTheirCacheActions) {
  Push p;
  mem_op(p, 0, 0, kOpMembar << kOpShift);  // SYS_MEMBAR: writes visible to the system
  mem_op(p, 0, 1, kOpMembar << kOpShift);  // MEMBAR (GPU scope): nothing leaves the L2
  mem_op(p, 0, 0, kOpL2FlushDirty << kOpShift);
  mem_op(p, 0, 0, kOpL2SysmemInvalidate << kOpShift);
  mem_op(p, 1u << 11, 0, kOpTlbInvalidate << kOpShift);  // TLB invalidate with TLB_INVALIDATE_SYSMEMBAR EN
  mem_op(p, 0, 0, kOpTlbInvalidate << kOpShift);
  p.inc(0, ch_->host_class(), "WFI", {1});  // SCOPE ALL
  EXPECT_EQ(run(p), (std::vector<uint8_t>{kWb, kWb, kInv, kWb}));
}

TEST_P(NvCacheCommands, SemaphoreReleaseAfterAMembarSeesTheWriteBackFirst) {
  uint32_t seen = ~0u;
  host_.recorder.on_caches = [&](uint8_t) { seen = host_.get<uint32_t>(kDataVa); };
  Push p;
  mem_op(p, 0, 0, kOpMembar << kOpShift);
  nv::PushbufferEncoder(nv::arch_info(GetParam()), p.w).write(kDataVa, 9u, false);
  EXPECT_EQ(run(p), std::vector<uint8_t>{kWb});
  EXPECT_EQ(seen, 0u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 9u);
}

TEST_P(NvCacheCommands, HostSemaphoreReleaseWritesNothingBack) {
  Push p;
  nv::PushbufferEncoder(nv::arch_info(GetParam()), p.w).signal(kDataVa, 3u, true);  // RELEASE_WFI, no membar
  EXPECT_EQ(run(p), std::vector<uint8_t>{});
  EXPECT_EQ(host_.get<uint64_t>(kDataVa), 3u);
}

TEST_P(NvCacheCommands, NoncoherentSysmemInvalidateIsBlackwells) {
  Push p;
  mem_op(p, 0, 0, kOpL2SysmemNcohInvalidate << kOpShift);
  if (GetParam() == NvArch::blackwell) {
    EXPECT_EQ(run(p), std::vector<uint8_t>{kInv});
    return;
  }
  EXPECT_EQ(fault_of(p, ChannelFaultKind::pbdma_error), host_prefix() + "_MEM_OP_D: undefined OPERATION 0x11");
}

TEST_P(NvCacheCommands, UndefinedMemOpFaults) {
  Push p;
  mem_op(p, 0, 0, 3u << kOpShift);
  EXPECT_EQ(fault_of(p, ChannelFaultKind::pbdma_error), host_prefix() + "_MEM_OP_D: undefined OPERATION 0x3");
  EXPECT_EQ(host_.cache_ops(), std::vector<uint8_t>{});
}

TEST_P(NvCacheCommands, UndefinedMembarTypeFaults) {
  Push p;
  mem_op(p, 0, 2, kOpMembar << kOpShift);
  EXPECT_EQ(fault_of(p, ChannelFaultKind::pbdma_error),
            host_prefix() + "_MEM_OP_C: OPERATION MEMBAR with undefined MEMBAR_TYPE 2");
}

TEST_P(NvCacheCommands, ReservedTlbInvalidateScopeFaults) {
  Push p;
  mem_op(p, 3u << 6, 0, kOpTlbInvalidate << kOpShift);  // INVAL_SCOPE_RSVRVD
  EXPECT_EQ(fault_of(p, ChannelFaultKind::pbdma_error),
            host_prefix() + "_MEM_OP_A: OPERATION MMU_TLB_INVALIDATE with undefined TLB_INVALIDATE_INVAL_SCOPE 3");
}

TEST_P(NvCacheCommands, ReservedTlbAccessTypeFaults) {
  Push p;
  mem_op(p, 0, 3u << 7, 0x0au << kOpShift);  // MMU_TLB_INVALIDATE_TARGETED, ACCESS_TYPE_VIRT_RSVRVD
  EXPECT_EQ(
      fault_of(p, ChannelFaultKind::pbdma_error),
      host_prefix() + "_MEM_OP_C: OPERATION MMU_TLB_INVALIDATE_TARGETED with undefined TLB_INVALIDATE_ACCESS_TYPE 3");
}

TEST_P(NvCacheCommands, WfiWithAnUndefinedScopeFaults) {
  Push p;
  p.inc(0, ch_->host_class(), "WFI", {2});
  EXPECT_EQ(fault_of(p, ChannelFaultKind::pbdma_error), host_prefix() + "_WFI: undefined SCOPE 0x2");
}

TEST_P(NvCacheCommands, ShaderCacheInvalidates) {
  const auto& c = ch_->compute_class();
  Push p;
  p.set_object(1, c.class_id);
  p.inc(1, c, "INVALIDATE_SHADER_CACHES_NO_WFI", {1});  // INSTRUCTION only: nothing the kernels' data goes through
  nv::PushbufferEncoder(nv::arch_info(GetParam()), p.w).memory_barrier();  // instruction, global data, constant
  p.inc(1, c, "INVALIDATE_SHADER_CACHES", {1u << 4});                      // DATA
  EXPECT_EQ(run(p), (std::vector<uint8_t>{kInv, kInv}));
}

TEST_P(NvCacheCommands, ReportSemaphoreFlushesUnlessDisabled) {
  const auto& c = ch_->compute_class();
  uint32_t seen = ~0u;
  host_.recorder.on_caches = [&](uint8_t) { seen = host_.get<uint32_t>(kDataVa + 0x100); };
  const uint32_t one_word = field(c, "SET_REPORT_SEMAPHORE_D", "OPERATION", std::string_view("RELEASE")) |
                            field(c, "SET_REPORT_SEMAPHORE_D", "STRUCTURE_SIZE", std::string_view("ONE_WORD"));
  Push p;
  p.set_object(1, c.class_id);
  p.inc(1, c, "SET_REPORT_SEMAPHORE_A", {0, static_cast<uint32_t>(kDataVa + 0x100), 42, one_word});
  p.inc(1, c, "SET_REPORT_SEMAPHORE_A",
        {0, static_cast<uint32_t>(kDataVa + 0x200), 43, one_word | (1u << 2)});  // FLUSH_DISABLE TRUE
  EXPECT_EQ(run(p), std::vector<uint8_t>{kWb});
  EXPECT_EQ(seen, 0u) << "the flush came after the payload";
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x100), 42u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x200), 43u);
}

TEST_P(NvCacheCommands, UndefinedReportOperationFaults) {
  const auto& c = ch_->compute_class();
  Push p;
  p.set_object(1, c.class_id);
  p.inc(1, c, "SET_REPORT_SEMAPHORE_A", {0, static_cast<uint32_t>(kDataVa), 1, 1u});  // OPERATION 1: none named
  EXPECT_EQ(fault_of(p, ChannelFaultKind::gr_exception),
            compute_prefix() + "_SET_REPORT_SEMAPHORE_D: undefined OPERATION 1");
}

TEST_P(NvCacheCommands, CopySignalFlushesBeforeItsSemaphore) {
  ch_.reset();
  host_.recorder.on_caches = [&](uint8_t) {
    EXPECT_EQ(host_.get<uint64_t>(kDataVa), 0u) << "flushed after the release";
  };
  auto copy = std::make_unique<TestChannel>(host_, *group_, GetParam(), NvEngineKind::copy);
  const nv::NvArchInfo& a = nv::arch_info(GetParam());
  std::vector<uint32_t> w;
  nv::PushbufferEncoder e(a, w);
  e.set_object(nv::pb::kCopySubchannel, a.classes.copy);
  e.copy(kDataVa + 0x400, kDataVa + 0x800, 64);
  e.copy_signal(kDataVa, 5u);
  copy->submit(w);
  ASSERT_EQ(copy->settle(), RunnerState::idle) << copy->runner().describe();
  // LAUNCH_DMA FLUSH_ENABLE (FLUSH_TYPE SYS) on the semaphore launch: the copy's writes reach memory first.
  EXPECT_EQ(host_.cache_ops(), std::vector<uint8_t>{kWb});
  EXPECT_EQ(host_.get<uint64_t>(kDataVa), 5u);
}

TEST_P(NvCacheCommands, CopyFlushToTheGpuOnlyWritesNothingBack) {
  ch_.reset();
  auto copy = std::make_unique<TestChannel>(host_, *group_, GetParam(), NvEngineKind::copy);
  const auto& c = copy->copy_class();
  Push p;
  p.set_object(4, c.class_id);
  p.inc(4, c, "LAUNCH_DMA",
        {field(c, "LAUNCH_DMA", "DATA_TRANSFER_TYPE", std::string_view("NONE")) |
         field(c, "LAUNCH_DMA", "FLUSH_ENABLE", std::string_view("TRUE")) |
         field(c, "LAUNCH_DMA", "FLUSH_TYPE", std::string_view("GL"))});
  copy->submit(p.w);
  ASSERT_EQ(copy->settle(), RunnerState::idle) << copy->runner().describe();
  EXPECT_EQ(host_.cache_ops(), std::vector<uint8_t>{});
}

INSTANTIATE_TEST_SUITE_P(Arch, NvCacheCommands, ::testing::Values(NvArch::ampere, NvArch::hopper, NvArch::blackwell),
                         [](const auto& info) { return std::string(nv::arch_info(info.param).arch_name); });

}  // namespace
}  // namespace hcq::sim::nv_engine::testing
