// Cache and ordering commands on the AMD engines: which PM4 (per dialect), AQL and SDMA command forms write the L2
// back or invalidate it (QueueHost::caches, recorded by the test host), where in the command that happens, and the
// faults of events, reserved bits, fence scopes the hardware does not take; SDMA POLL_REGMEM giving up after its
// retry count. Bit positions in hand-built packets are written from AMD's headers (soc15d.h for GC 9, nvd.h for
// GC 10+, the SDMA packet headers), not from hcq's tables, so the tables are checked too.
#include <thread>

#include "amd/aql_facts.hpp"
#include "amd/encode.hpp"
#include "amd/pm4_facts.hpp"
#include "engine_fixture.hpp"

namespace hcq::sim::amd_engine::testing {
namespace {

using amd::Target;
constexpr uint8_t kWb = kCacheWriteback, kInv = kCacheInvalidate;

// GC 9 (gfx942) has the CP_COHER_CNTL/EOP_TC dialect; gfx1100 and gfx1201 the GCR one.
bool gcr_dialect(const std::string& gfx) { return gfx != "gfx942"; }

// RELEASE_MEM writing `value` (32 bits) to `addr` after event `event_type` with `index`, cache bits `bits` in dword 1.
std::vector<uint32_t> release_mem(uint32_t dword1, uint64_t addr, uint32_t value) {
  return {amd::pm4::header(amd::pm4::RELEASE_MEM, 7),
          dword1,
          1u << 29,  // DATA_SEL(1): 32-bit data
          static_cast<uint32_t>(addr),
          static_cast<uint32_t>(addr >> 32),
          value,
          0,
          0};
}
constexpr uint32_t kBottomOfPipe = 40 | (5u << 8);  // BOTTOM_OF_PIPE_TS, event_index 5 (end of pipe)

// ACQUIRE_MEM over all memory: GC 9 carries CP_COHER_CNTL in dword 1 (7 dwords), GC 10+ GCR_CNTL in dword 7.
std::vector<uint32_t> acquire_mem(bool gcr, uint32_t coher_cntl, uint32_t gcr_cntl = 0) {
  std::vector<uint32_t> p = {
      amd::pm4::header(amd::pm4::ACQUIRE_MEM, gcr ? 7 : 6), coher_cntl, 0xffffffffu, 0xff, 0, 0, 0xa};
  if (gcr) p.push_back(gcr_cntl);
  return p;
}
std::vector<uint32_t> event_write(uint32_t type, uint32_t index) {
  return {amd::pm4::header(amd::pm4::EVENT_WRITE, 1), type | (index << 8)};
}

class Pm4CacheCommands : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    t_ = &Target::from_gfx(GetParam());
    host_.map(kDataVa, 1 << 16);
    group_ = std::make_unique<EngineGroup>(EngineOptions{});
    q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::compute_pm4);
  }
  void TearDown() override { q_.reset(); }
  // Runs `w` to the end and returns the cache actions it asked for.
  std::vector<uint8_t> run(const std::vector<uint32_t>& w) {
    q_->submit(w);
    EXPECT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
    return host_.cache_ops();
  }
  // Runs `w`, which must fault, and returns the reason.
  std::string fault_of(const std::vector<uint32_t>& w) {
    q_->submit(w);
    EXPECT_EQ(q_->settle(), RunnerState::faulted) << q_->runner().describe();
    return q_->runner().fault().reason;
  }
  bool gcr() const { return gcr_dialect(GetParam()); }
  std::string dialect() const { return gcr() ? "gfx10+" : "gfx9"; }

  const Target* t_ = nullptr;
  TestHost host_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestQueue> q_;
};

TEST_P(Pm4CacheCommands, SignalWritesBackBeforeItsValueLands) {
  uint32_t seen = ~0u;
  host_.recorder.on_caches = [&](uint8_t) { seen = host_.get<uint32_t>(kDataVa); };
  std::vector<uint32_t> w;
  amd::Pm4Encoder(*t_, w).signal(kDataVa, 5u);
  // Linux's fence (gfx_v9_0 without writeback-only, gfx_v11_0): the L2 written back and invalidated.
  EXPECT_EQ(run(w), (std::vector<uint8_t>{kWb | kInv}));
  EXPECT_EQ(seen, 0u) << "the cache action came after the value was written";
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 5u);
}

TEST_P(Pm4CacheCommands, BackendFormsAndTheirCacheActions) {
  std::vector<uint32_t> w;
  amd::Pm4Encoder e(*t_, w);
  e.write(kDataVa, 1u, false);           // RELEASE_MEM without cache bits
  e.acquire_mem(t_->pm4->acquire_exec);  // before a dispatch: K$/L1 only, not the L2
  e.event_write(amd::pm4::CS_PARTIAL_FLUSH, amd::pm4::kEventIndexPartialFlush);
  EXPECT_EQ(run(w), std::vector<uint8_t>{});
  std::vector<uint32_t> barrier;
  amd::Pm4Encoder(*t_, barrier).memory_barrier();  // HDP flush, then the L2 written back and invalidated
  EXPECT_EQ(run(barrier), (std::vector<uint8_t>{kWb | kInv}));
}

TEST_P(Pm4CacheCommands, ReleaseMemL2BitsOfTheDialect) {
  // Write back only, then invalidate only (GC 10+: GCR_GL2_WB bit 21, GCR_GL2_INV bit 20; GC 9: EOP_TC_WB_ACTION_EN
  // bit 15 writes back, EOP_TC_ACTION_EN bit 17 invalidates, and every L2 invalidate writes back first).
  const uint32_t wb = gcr() ? 1u << 21 : 1u << 15, inv = gcr() ? 1u << 20 : 1u << 17;
  std::vector<uint32_t> w = release_mem(kBottomOfPipe | wb, kDataVa, 1);
  const std::vector<uint32_t> second = release_mem(kBottomOfPipe | inv, kDataVa + 4, 2);
  w.insert(w.end(), second.begin(), second.end());
  EXPECT_EQ(run(w), (std::vector<uint8_t>{kWb, static_cast<uint8_t>(gcr() ? kInv : kWb | kInv)}));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 4), 2u);
}

TEST_P(Pm4CacheCommands, AcquireMemL2BitsOfTheDialect) {
  // GC 10+: GCR_CNTL GL2_WB bit 15, GL2_INV bit 14. GC 9: CP_COHER_CNTL TC_WB_ACTION_ENA bit 18, TC_ACTION_ENA bit 23.
  std::vector<uint32_t> w = gcr() ? acquire_mem(true, 0, 1u << 15) : acquire_mem(false, 1u << 18);
  const std::vector<uint32_t> second = gcr() ? acquire_mem(true, 0, 1u << 14) : acquire_mem(false, 1u << 23);
  w.insert(w.end(), second.begin(), second.end());
  EXPECT_EQ(run(w), (std::vector<uint8_t>{kWb, static_cast<uint8_t>(gcr() ? kInv : kWb | kInv)}));
}

TEST_P(Pm4CacheCommands, ComputeEventsRun) {
  std::vector<uint32_t> w = event_write(7, 4);  // CS_PARTIAL_FLUSH with its index
  for (uint32_t type : {53u, 23u, 24u}) {       // THREAD_TRACE_MARKER, PERFCOUNTER_START, PERFCOUNTER_STOP
    const std::vector<uint32_t> e = event_write(type, 0);
    w.insert(w.end(), e.begin(), e.end());
  }
  EXPECT_EQ(run(w), std::vector<uint8_t>{});
  EXPECT_EQ(q_->rptr(), w.size());
}

TEST_P(Pm4CacheCommands, EventWriteOfAnEventTheComputePipeLacksFaults) {
  EXPECT_EQ(fault_of(event_write(63, 0)), "EVENT_WRITE event_type 63 is not an event a compute queue executes");
}

TEST_P(Pm4CacheCommands, EventWriteOfAGraphicsEventFaults) {
  EXPECT_EQ(fault_of(event_write(16, 4)),
            "EVENT_WRITE event_type 16 (PS_PARTIAL_FLUSH) is not an event a compute queue executes");
}

TEST_P(Pm4CacheCommands, EventWriteOfATimestampEventFaults) {
  EXPECT_EQ(fault_of(event_write(40, 5)),
            "EVENT_WRITE event_type 40 (BOTTOM_OF_PIPE_TS) is a timestamp event: a compute queue releases it with "
            "RELEASE_MEM");
}

TEST_P(Pm4CacheCommands, EventWriteWithTheWrongIndexFaults) {
  EXPECT_EQ(fault_of(event_write(7, 0)),
            "EVENT_WRITE event_type 7 (CS_PARTIAL_FLUSH) with event_index 0: the event takes event_index 4");
}

TEST_P(Pm4CacheCommands, ReleaseMemOfANonTimestampEventFaults) {
  EXPECT_EQ(fault_of(release_mem(7 | (5u << 8), kDataVa, 1)),
            "RELEASE_MEM event_type 7 (CS_PARTIAL_FLUSH) is not an end-of-pipe event of the compute pipe "
            "(event_index 5)");
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 0u);
}

TEST_P(Pm4CacheCommands, ReleaseMemReservedBitFaults) {
  // Bit 30 of dword 1 is a field in neither dialect.
  EXPECT_EQ(fault_of(release_mem(kBottomOfPipe | (1u << 30), kDataVa, 1)),
            "RELEASE_MEM dword 1 0x40000528 sets reserved bits 0x40000000 (" + dialect() + ")");
  EXPECT_EQ(host_.cache_ops(), std::vector<uint8_t>{});
}

TEST_P(Pm4CacheCommands, ReleaseMemBitReservedInTheDialectFaults) {
  // Bit 14: reserved on GC 9 (between TC_VOL and TC_WB), GLV_INV on GC 10+. Bit 24: reserved on both.
  if (!gcr()) {
    EXPECT_EQ(fault_of(release_mem(kBottomOfPipe | (1u << 14), kDataVa, 1)),
              "RELEASE_MEM dword 1 0x4528 sets reserved bits 0x4000 (gfx9)");
    return;
  }
  EXPECT_EQ(fault_of(release_mem(kBottomOfPipe | (1u << 24), kDataVa, 1)),
            "RELEASE_MEM dword 1 0x1000528 sets reserved bits 0x1000000 (gfx10+)");
}

TEST_P(Pm4CacheCommands, AcquireMemFieldsOfTheOtherDialectFault) {
  if (!gcr()) GTEST_SKIP() << "GC 9 takes cache control in CP_COHER_CNTL";
  EXPECT_EQ(fault_of(acquire_mem(true, 1u << 23)),
            "ACQUIRE_MEM CP_COHER_CNTL 0x800000 sets GC 9 cache actions 0x800000: the gfx10+ CP takes cache control "
            "in GCR_CNTL");
}

TEST_P(Pm4CacheCommands, AcquireMemReservedGcrBitFaults) {
  if (!gcr()) GTEST_SKIP() << "GC 9 has no GCR_CNTL";
  EXPECT_EQ(fault_of(acquire_mem(true, 0, 1u << 19)),
            "ACQUIRE_MEM GCR_CNTL 0x80000 sets reserved bits 0x80000 (gfx10+)");
}

INSTANTIATE_TEST_SUITE_P(Targets, Pm4CacheCommands, ::testing::Values("gfx942", "gfx1100", "gfx1201"),
                         [](const auto& info) { return info.param; });

// ---- AQL fence scopes ----

class AqlFenceScopes : public ::testing::Test {
 protected:
  static constexpr uint64_t kKernelObject = 0x70000000, kSignal = 0x70002000;
  void SetUp() override {
    t_ = &Target::from_gfx("gfx942");
    host_.map(kDataVa, 1 << 16);
    host_.map(kIbVa, 1 << 16);
    host_.map(kKernelObject, 0x4000);
    host_.set<int64_t>(kKernelObject + 16, 0x100);  // kernel_code_entry_byte_offset
    options_.dispatch = [this](const DispatchInfo&, QueueHost&) {
      std::lock_guard<std::mutex> lk(mu_);
      events_.push_back("kernel");
      return std::string();
    };
    host_.recorder.on_caches = [this](uint8_t ops) {
      std::lock_guard<std::mutex> lk(mu_);
      events_.push_back((ops == kWb    ? "writeback, signal "
                         : ops == kInv ? "invalidate, signal "
                                       : "both, signal ") +
                        std::to_string(host_.get<int64_t>(kSignal + 8)));
    };
    group_ = std::make_unique<EngineGroup>(options_);
    q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::compute_aql, 64 * 16);
    host_.set<int64_t>(kSignal + 8, 1);
  }
  void TearDown() override { q_.reset(); }
  // A dispatch packet with the header's scopes replaced by `acquire` and `release` (HSA header: acquire fence scope
  // bits 10:9, release 12:11), published at once.
  void dispatch(uint32_t acquire, uint32_t release) {
    std::vector<uint32_t> pkt;
    amd::AqlDispatch d;
    d.kernel_object = kKernelObject;
    d.local = {Sym(64u), Sym(1u), Sym(1u)};
    d.completion_signal = kSignal;
    amd::AqlEncoder(*t_, pkt).dispatch(d);
    pkt[0] = (pkt[0] & ~(0xfu << 9)) | (acquire << 9) | (release << 11);
    q_->submit(pkt);
  }
  std::vector<std::string> events() {
    std::lock_guard<std::mutex> lk(mu_);
    return events_;
  }

  const Target* t_ = nullptr;
  TestHost host_;
  EngineOptions options_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestQueue> q_;
  std::mutex mu_;
  std::vector<std::string> events_;
};

TEST_F(AqlFenceScopes, SystemScopeInvalidatesBeforeAndWritesBackBeforeTheSignal) {
  dispatch(2, 2);  // SYSTEM, SYSTEM: what drivers/amd emits
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(events(), (std::vector<std::string>{"invalidate, signal 1", "kernel", "writeback, signal 1"}));
  EXPECT_EQ(host_.get<int64_t>(kSignal + 8), 0);
}

TEST_F(AqlFenceScopes, AgentAndNoScopeAskNothingOfTheCaches) {
  dispatch(1, 1);  // AGENT: visible to this GPU's work-items, whose L2 already holds the writes
  dispatch(0, 0);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(events(), (std::vector<std::string>{"kernel", "kernel"}));
  EXPECT_EQ(host_.cache_ops(), std::vector<uint8_t>{});
}

TEST_F(AqlFenceScopes, BarrierAndVendorPacketsCarryTheirFences) {
  std::vector<uint32_t> barrier, ib, vendor;
  amd::AqlEncoder(*t_, barrier).barrier_and({}, Sym(0u));
  amd::Pm4Encoder(*t_, ib).write(kDataVa, 4u, false);
  host_.write(kIbVa, ib);
  amd::AqlEncoder(*t_, vendor).pm4_ib(kIbVa, static_cast<uint32_t>(ib.size()));
  q_->submit(barrier);
  q_->submit(vendor);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.cache_ops(), (std::vector<uint8_t>{kInv, kWb, kInv, kWb}));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 4u);
}

TEST_F(AqlFenceScopes, UndefinedScopeFaults) {
  dispatch(3, 2);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_EQ(q_->runner().fault().reason, "KERNEL_DISPATCH acquire_fence_scope 3 is undefined");
  EXPECT_EQ(events(), std::vector<std::string>{});
}

TEST_F(AqlFenceScopes, UndefinedReleaseScopeFaults) {
  dispatch(2, 3);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_EQ(q_->runner().fault().reason, "KERNEL_DISPATCH release_fence_scope 3 is undefined");
  EXPECT_EQ(host_.get<int64_t>(kSignal + 8), 1);
}

// ---- SDMA ----

class SdmaCommands : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    t_ = &Target::from_gfx(GetParam());
    host_.map(kDataVa, 1 << 16);
    group_ = std::make_unique<EngineGroup>(EngineOptions{});
    q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::sdma);
  }
  void TearDown() override { q_.reset(); }
  // POLL_REGMEM on memory for (*addr & mask) == ref (vega10_sdma_pkt_open.h: op 8, FUNC bits 30:28, MEM_POLL bit 31;
  // dword 5: INTERVAL 15:0, RETRY_COUNT 27:16).
  static std::vector<uint32_t> poll_eq(uint64_t addr, uint32_t ref, uint32_t retry_count) {
    return {
        8u | (3u << 28) | (1u << 31), static_cast<uint32_t>(addr), static_cast<uint32_t>(addr >> 32), ref, 0xffffffffu,
        4u | (retry_count << 16)};
  }
  const Target* t_ = nullptr;
  TestHost host_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestQueue> q_;
};

TEST_P(SdmaCommands, PollGivesUpAfterItsRetryCount) {
  host_.watch(kDataVa);
  std::vector<uint32_t> w = poll_eq(kDataVa, 7, 3);  // memory holds 0: never equal
  amd::SdmaEncoder(*t_, w).fence(kDataVa + 8, 1u);
  q_->submit(w);
  for (int i = 0; i < 2000 && host_.get<uint32_t>(kDataVa + 8) != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 1u) << "the engine went on to the next packet";
  EXPECT_EQ(host_.watched(), 4) << "the first poll and 3 retries";
  EXPECT_EQ(q_->rptr(), w.size() * 4);
  EXPECT_TRUE(host_.faults().empty()) << "a poll timeout is the kernel's log line, not a queue fault";
}

TEST_P(SdmaCommands, PollWithTheLargestRetryCountWaitsForever) {
  host_.watch(kDataVa);
  std::vector<uint32_t> w = poll_eq(kDataVa, 7, 0xfff);
  amd::SdmaEncoder(*t_, w).fence(kDataVa + 8, 1u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(q_->runner().state(), RunnerState::waiting);
  EXPECT_GT(host_.watched(), 4);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 0u);
  host_.set<uint32_t>(kDataVa, 7);
  for (int i = 0; i < 500 && host_.get<uint32_t>(kDataVa + 8) != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 1u);
}

TEST_P(SdmaCommands, PollTimeoutRestartsForTheNextPoll) {
  // Two polls in a row, each with 1 retry: each gets its own 2 polls.
  host_.watch(kDataVa);
  std::vector<uint32_t> w = poll_eq(kDataVa, 7, 1);
  const std::vector<uint32_t> second = poll_eq(kDataVa, 7, 1);
  w.insert(w.end(), second.begin(), second.end());
  q_->submit(w);
  for (int i = 0; i < 2000 && q_->rptr() != w.size() * 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.watched(), 4);
}

TEST_P(SdmaCommands, GcrRequestReportsItsL2Actions) {
  // GCR_REQ (op 17): GCR_CONTROL bits 15:0 in dword 2's high half, 18:16 in dword 3; GL2_WB bit 15, GL2_INV bit 14.
  auto gcr_req = [](uint32_t control) {
    return std::vector<uint32_t>{17u, 0u, (control & 0xffffu) << 16, control >> 16, 0u};
  };
  std::vector<uint32_t> w = gcr_req((1u << 15) | (1u << 14));
  const std::vector<uint32_t> inv = gcr_req(1u << 14), near = gcr_req((1u << 9) | (1u << 8));  // GL1, GLV only
  w.insert(w.end(), inv.begin(), inv.end());
  w.insert(w.end(), near.begin(), near.end());
  q_->submit(w);
  if (t_->sdma->gcr_req == nullptr) {  // SDMA 4.4 (gfx942) has no GCR_REQ
    ASSERT_EQ(q_->settle(), RunnerState::faulted);
    EXPECT_EQ(q_->runner().fault().reason, "SDMA GCR_REQ sub_op 0 is not simulated");
    return;
  }
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.cache_ops(), (std::vector<uint8_t>{kWb | kInv, kInv}));
}

TEST_P(SdmaCommands, BackendCopyAndFenceAskNothingOfTheCaches) {
  std::vector<uint32_t> w;
  amd::SdmaEncoder e(*t_, w);
  e.copy(kDataVa + 0x100, kDataVa, 64);
  e.fence(kDataVa + 8, 1u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.cache_ops(), std::vector<uint8_t>{});
}

INSTANTIATE_TEST_SUITE_P(Targets, SdmaCommands, ::testing::Values("gfx942", "gfx1100", "gfx1201"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hcq::sim::amd_engine::testing
