// The SDMA engine (copies, fences, polls, timestamps, traps) and the AQL packet processor (dispatch packets,
// barrier-and, PM4-IB vendor packets, publication by header) on drivers/amd's encoder output; the deterministic
// single-thread mode with queues that wait on each other.
#include <thread>

#include "amd/aql_facts.hpp"
#include "amd/encode.hpp"
#include "amd/sdma_facts.hpp"
#include "engine_fixture.hpp"

namespace hcq::sim::amd_engine::testing {
namespace {

using amd::Target;

class SdmaEngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    t_ = &Target::from_gfx(GetParam());
    host_.map(kDataVa, 1 << 16);
    group_ = std::make_unique<EngineGroup>(EngineOptions{});
    q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::sdma);
  }
  void TearDown() override { q_.reset(); }
  const Target* t_ = nullptr;
  TestHost host_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestQueue> q_;
};

TEST_P(SdmaEngineTest, CopyFenceTimestampTrap) {
  for (uint32_t i = 0; i < 64; ++i) host_.set<uint32_t>(kDataVa + i * 4, 0xa0000000u + i);
  std::vector<uint32_t> w;
  amd::SdmaEncoder e(*t_, w);
  e.copy(kDataVa + 0x1000, kDataVa, 256);
  e.copy(kDataVa + 0x2001, kDataVa + 3, 5);  // unaligned bytes
  e.fence(kDataVa + 0x3000, 42u);
  e.timestamp(kDataVa + 0x3008);
  e.write(kDataVa + 0x3010, uint64_t{0x0102030405060708}, true);
  e.signal_event(kDataVa + 0x3020, 9);
  e.nop(3);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(host_.get<uint32_t>(kDataVa + 0x1000 + i * 4), 0xa0000000u + i);
  for (uint32_t i = 0; i < 5; ++i)
    EXPECT_EQ(host_.get<uint8_t>(kDataVa + 0x2001 + i), host_.get<uint8_t>(kDataVa + 3 + i));
  EXPECT_EQ(host_.get<uint8_t>(kDataVa + 0x2000), 0u);
  EXPECT_EQ(host_.get<uint8_t>(kDataVa + 0x2006), 0u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x3000), 42u);
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 0x3008), 1000u);
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x3010), 0x0102030405060708u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x3020), 9u);
  EXPECT_EQ(host_.interrupts(), std::vector<uint32_t>{9});
  EXPECT_EQ(q_->rptr(), w.size() * 4) << "SDMA read pointer in bytes";
}

TEST_P(SdmaEngineTest, SplitCopyCoversEveryByte) {
  // A copy larger than the engine's limit is split by the encoder; the engine runs each piece.
  const uint64_t max = t_->sdma->max_copy_bytes;
  const uint64_t size = std::min<uint64_t>(max, 1 << 22) + 4096 + 12;
  const uint64_t src = 0x40000000, dst = 0x50000000;
  std::byte* s = host_.map(src, size);
  std::byte* d = host_.map(dst, size);
  for (uint64_t i = 0; i < size; ++i) s[i] = static_cast<std::byte>(i * 7 + (i >> 12));
  std::vector<uint32_t> w;
  amd::SdmaEncoder e(*t_, w);
  // Force a split on every target: copy in pieces of at most `max` through the encoder, plus our own split at 4 MiB
  // where the engine's limit is larger.
  for (uint64_t off = 0; off < size;) {
    const uint64_t n = std::min<uint64_t>(size - off, 1 << 22);
    e.copy(dst + off, src + off, n);
    off += n;
  }
  EXPECT_GE(w.size(), 14u) << "at least two COPY_LINEAR packets";
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(std::memcmp(s, d, size), 0);
}

TEST_P(SdmaEngineTest, EncoderSplitAtTheEngineLimit) {
  if (t_->sdma->max_copy_bytes > (uint64_t{1} << 22)) GTEST_SKIP() << "the limit here is 1 GiB: too large for a test";
  const uint64_t size = t_->sdma->max_copy_bytes + 100;
  const uint64_t src = 0x40000000, dst = 0x50000000;
  std::byte* s = host_.map(src, size);
  std::byte* d = host_.map(dst, size);
  for (uint64_t i = 0; i < size; ++i) s[i] = static_cast<std::byte>(i * 13);
  std::vector<uint32_t> w;
  amd::SdmaEncoder(*t_, w).copy(dst, src, size);
  EXPECT_EQ(w.size(), 2 * t_->sdma->copy_linear->words);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(std::memcmp(s, d, size), 0);
}

TEST_P(SdmaEngineTest, PollBlocksUntilTheHostWrites) {
  std::vector<uint32_t> w;
  amd::SdmaEncoder e(*t_, w);
  e.wait(kDataVa, 5u);
  e.fence(kDataVa + 8, 1u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 0u);
  EXPECT_NE(q_->runner().describe().find("POLL_REGMEM"), std::string::npos);
  host_.set<uint32_t>(kDataVa, 5);
  for (int i = 0; i < 500 && host_.get<uint32_t>(kDataVa + 8) != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 1u);
}

TEST_P(SdmaEngineTest, UnknownOpFaults) {
  std::vector<uint32_t> w = {amd::sdma::kHdrOp.place(0x3f), 0, 0, 0};
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("unknown SDMA op"), std::string::npos);
  EXPECT_EQ(q_->runner().fault().ring_pos, 0u);
}

TEST_P(SdmaEngineTest, TruncatedPacketFaults) {
  std::vector<uint32_t> w;
  amd::SdmaEncoder(*t_, w).fence(kDataVa, 1u);
  w.pop_back();
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("truncated"), std::string::npos);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 0u);
}

TEST_P(SdmaEngineTest, PacketStraddlingTheRingEndFaults) {
  q_.reset();
  q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::sdma, 4096, 1, 4096 - 8);
  std::vector<uint32_t> w;
  amd::SdmaEncoder(*t_, w).fence(kDataVa, 1u);  // 4 dwords, 2 left before the end
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("straddles"), std::string::npos) << q_->runner().fault().reason;
}

TEST_P(SdmaEngineTest, CopyFromUnmappedMemoryFaults) {
  std::vector<uint32_t> w;
  amd::SdmaEncoder(*t_, w).copy(kDataVa, uint64_t{0x7000000}, 64);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_TRUE(q_->runner().fault().memory);
  EXPECT_EQ(q_->runner().fault().address, 0x7000000u);
}

TEST_P(SdmaEngineTest, CopyAcrossAdjacentMappings) {
  host_.map(0x60000000, 4096);
  host_.map(0x60001000, 4096);
  for (uint32_t i = 0; i < 64; ++i) host_.set<uint32_t>(kDataVa + i * 4, i + 1);
  std::vector<uint32_t> w;
  amd::SdmaEncoder(*t_, w).copy(0x60001000 - 128, kDataVa, 256);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(host_.get<uint32_t>(0x60001000 - 128 + i * 4), i + 1);
}

INSTANTIATE_TEST_SUITE_P(Targets, SdmaEngineTest, ::testing::Values("gfx942", "gfx1100", "gfx1201"),
                         [](const auto& info) { return info.param; });

// ---- AQL ----

class AqlEngineTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kKernelObject = 0x70000000, kKernarg = 0x70001000, kSignal = 0x70002000,
                            kDepSignal = 0x70002040, kMailbox = 0x70003000;
  void SetUp() override {
    t_ = &Target::from_gfx("gfx942");
    host_.map(kDataVa, 1 << 16);
    host_.map(kIbVa, 1 << 16);
    host_.map(kKernelObject, 0x4000);
    // Kernel descriptor: entry offset 0x100 (bytes 16..23), RSRC1 at 48, wave32 off.
    host_.set<int64_t>(kKernelObject + 16, 0x100);
    host_.set<uint32_t>(kKernelObject + 48, 0xabc);
    options_.dispatch = [this](const DispatchInfo& d, QueueHost&) {
      std::lock_guard<std::mutex> lk(mu_);
      dispatches_.push_back(d);
      return std::string();
    };
    group_ = std::make_unique<EngineGroup>(options_);
    q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::compute_aql, 64 * 16);
  }
  void TearDown() override { q_.reset(); }
  // Writes the packet with its header INVALID, then publishes the header (what a producer does).
  void put(std::vector<uint32_t> pkt, bool publish_header = true) {
    const uint32_t word0 = pkt[0];
    pkt[0] =
        (word0 & 0xffff0000u) | amd::aql::header(amd::aql::INVALID, false, amd::aql::SCOPE_NONE, amd::aql::SCOPE_NONE);
    const uint64_t slot = q_->desc().ring_va + (q_->wptr() % 16) * 64;
    q_->submit(pkt, false);
    if (publish_header) host_.set<uint32_t>(slot, word0);
  }
  const Target* t_ = nullptr;
  TestHost host_;
  EngineOptions options_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestQueue> q_;
  std::mutex mu_;
  std::vector<DispatchInfo> dispatches_;
};

TEST_F(AqlEngineTest, DispatchPacketRunsOnceItsHeaderIsPublished) {
  host_.set<int64_t>(kSignal + 8, 1);
  host_.set<uint64_t>(kSignal + 16, kMailbox);
  host_.set<uint32_t>(kSignal + 24, 5);
  std::vector<uint32_t> pkt;
  amd::AqlDispatch d;
  d.kernel_object = kKernelObject;
  d.kernarg_addr = kKernarg;
  d.groups = {Sym(3u), Sym(2u), Sym(1u)};
  d.local = {Sym(64u), Sym(1u), Sym(1u)};
  d.completion_signal = kSignal;
  amd::AqlEncoder(*t_, pkt).dispatch(d);
  ASSERT_EQ(pkt.size(), 16u);
  put(pkt, false);
  q_->publish();
  ASSERT_EQ(q_->settle(), RunnerState::waiting) << "a slot whose header is INVALID is not processed";
  EXPECT_NE(q_->runner().describe().find("not yet published"), std::string::npos) << q_->runner().describe();
  host_.set<uint32_t>(q_->desc().ring_va, pkt[0]);
  q_->runner().doorbell(q_->wptr());
  for (int i = 0; i < 500 && q_->rptr() != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(q_->rptr(), 1u);
  EXPECT_EQ(amd::aql::kType.get(host_.get<uint32_t>(q_->desc().ring_va)), amd::aql::INVALID);
  EXPECT_EQ(host_.get<int64_t>(kSignal + 8), 0) << "completion signal decremented";
  EXPECT_EQ(host_.get<uint64_t>(kMailbox), 5u);
  EXPECT_EQ(host_.interrupts(), std::vector<uint32_t>{5});
  std::lock_guard<std::mutex> lk(mu_);
  ASSERT_EQ(dispatches_.size(), 1u);
  const DispatchInfo& di = dispatches_[0];
  EXPECT_EQ(di.code_addr, kKernelObject + 0x100);
  EXPECT_EQ(di.kernel_object, kKernelObject);
  EXPECT_EQ(di.kernarg_addr, kKernarg);
  EXPECT_EQ(di.dispatch_packet_addr, q_->desc().ring_va);
  EXPECT_EQ(di.groups, (std::array<uint32_t, 3>{3, 2, 1}));
  EXPECT_EQ(di.local, (std::array<uint32_t, 3>{64, 1, 1}));
  EXPECT_EQ(di.grid, (std::array<uint64_t, 3>{192, 2, 1}));
  EXPECT_EQ(di.rsrc1, 0xabcu);
  EXPECT_FALSE(di.wave32);
}

TEST_F(AqlEngineTest, BarrierAndWaitsForItsSignals) {
  host_.set<int64_t>(kDepSignal + 8, 1);
  std::vector<uint32_t> pkt;
  const Sym deps[] = {Sym(kDepSignal)};
  amd::AqlEncoder(*t_, pkt).barrier_and(deps, Sym(0u));
  put(pkt);
  std::vector<uint32_t> ib, vendor;
  amd::Pm4Encoder(*t_, ib).signal(kDataVa, 4u);
  host_.write(kIbVa, ib);
  amd::AqlEncoder(*t_, vendor).pm4_ib(kIbVa, static_cast<uint32_t>(ib.size()));
  put(vendor);
  q_->publish();
  ASSERT_EQ(q_->settle(), RunnerState::waiting);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 0u);
  EXPECT_NE(q_->runner().describe().find("BARRIER_AND"), std::string::npos);
  host_.set<int64_t>(kDepSignal + 8, 0);
  for (int i = 0; i < 500 && q_->rptr() != 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(q_->rptr(), 2u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 4u) << "the PM4-IB vendor packet ran its IB";
}

TEST_F(AqlEngineTest, FaultInsideAVendorIbNamesTheIb) {
  std::vector<uint32_t> ib, vendor;
  amd::Pm4Encoder(*t_, ib).signal(uint64_t{0xdead000}, 4u);
  host_.write(kIbVa, ib);
  amd::AqlEncoder(*t_, vendor).pm4_ib(kIbVa, static_cast<uint32_t>(ib.size()));
  put(vendor);
  q_->publish();
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  const FaultRecord f = q_->runner().fault();
  EXPECT_TRUE(f.in_ib);
  EXPECT_EQ(f.ib_va, kIbVa);
  EXPECT_EQ(f.address, 0xdead000u);
  EXPECT_EQ(f.queue_type, SimQueueType::compute_aql);
}

TEST_F(AqlEngineTest, UnsupportedPacketTypeFaults) {
  std::vector<uint32_t> pkt(16, 0);
  pkt[0] = amd::aql::header(amd::aql::AGENT_DISPATCH, true, amd::aql::SCOPE_SYSTEM, amd::aql::SCOPE_SYSTEM);
  put(pkt);
  q_->publish();
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("AGENT_DISPATCH"), std::string::npos);
}

TEST_F(AqlEngineTest, UnmappedKernelObjectFaults) {
  std::vector<uint32_t> pkt;
  amd::AqlDispatch d;
  d.kernel_object = uint64_t{0x1230000};
  amd::AqlEncoder(*t_, pkt).dispatch(d);
  put(pkt);
  q_->publish();
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_TRUE(q_->runner().fault().memory);
  EXPECT_EQ(q_->runner().fault().address, 0x1230000u);
}

// The packet's group_segment_size is the LDS the CP gives each workgroup: at least the kernel descriptor's
// group_segment_fixed_size (bytes 0..3), at most what a workgroup may have (64 KiB on every simulated part).
TEST_F(AqlEngineTest, GroupSegmentSizeCoversTheKernelAndFitsTheLds) {
  host_.set<uint32_t>(kKernelObject, 512);
  const auto dispatch = [&](uint32_t group_segment) {
    std::vector<uint32_t> pkt;
    amd::AqlDispatch d;
    d.kernel_object = kKernelObject;
    d.kernarg_addr = kKernarg;
    d.groups = {Sym(1u), Sym(1u), Sym(1u)};
    d.local = {Sym(64u), Sym(1u), Sym(1u)};
    d.group_segment_size = group_segment;
    amd::AqlEncoder(*t_, pkt).dispatch(d);
    put(pkt);
    q_->publish();
    return q_->settle();
  };
  ASSERT_EQ(dispatch(512), RunnerState::idle) << q_->runner().describe();
  {
    std::lock_guard<std::mutex> lk(mu_);
    ASSERT_EQ(dispatches_.size(), 1u);
    EXPECT_EQ(dispatches_[0].group_segment_size, 512u);
  }
  ASSERT_EQ(dispatch(256), RunnerState::faulted);
  EXPECT_NE(
      q_->runner().fault().reason.find("group_segment_size 256 is below the kernel's group_segment_fixed_size 512"),
      std::string::npos)
      << q_->runner().fault().reason;
  q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::compute_aql, 64 * 16);
  ASSERT_EQ(dispatch(65537), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("65537 exceeds the 65536 bytes of LDS"), std::string::npos)
      << q_->runner().fault().reason;
}

// ---- deterministic mode ----

TEST(AmdEngineDeterministic, QueuesOnOneThreadWaitOnEachOther) {
  const Target& t = Target::from_gfx("gfx1100");
  TestHost host;
  host.map(kDataVa, 1 << 16);
  EngineOptions o;
  o.scheduling = Scheduling::deterministic;
  EngineGroup group(o);
  TestQueue compute(host, group, t, SimQueueType::compute_pm4, 4096, 1);
  TestQueue copy(host, group, t, SimQueueType::sdma, 4096, 2);
  // compute waits for the copy's fence, then signals; the copy waits for the host.
  std::vector<uint32_t> cw, sw;
  amd::Pm4Encoder pe(t, cw);
  pe.wait(kDataVa + 4, 1u);
  pe.signal(kDataVa + 8, 2u);
  amd::SdmaEncoder se(t, sw);
  se.wait(kDataVa, 1u);
  se.copy(kDataVa + 0x100, kDataVa + 0x200, 16);
  se.fence(kDataVa + 4, 1u);
  host.set<uint32_t>(kDataVa + 0x200, 0x5a5a);
  compute.submit(cw);
  copy.submit(sw);
  ASSERT_EQ(compute.settle(), RunnerState::waiting);
  ASSERT_EQ(copy.settle(), RunnerState::waiting);
  host.set<uint32_t>(kDataVa, 1);
  for (int i = 0; i < 1000 && host.get<uint32_t>(kDataVa + 8) != 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host.get<uint32_t>(kDataVa + 8), 2u);
  EXPECT_EQ(host.get<uint32_t>(kDataVa + 0x100), 0x5a5au);
  EXPECT_EQ(compute.settle(), RunnerState::idle);
  EXPECT_EQ(copy.settle(), RunnerState::idle);
}

TEST(AmdEngineFactory, MakesRunnersThroughTheKfdSeam) {
  const Target& t = Target::from_gfx("gfx1201");
  TestHost host;
  host.map(kDataVa, 4096);
  host.map(kRingVa, 4096);
  host.map(kPtrVa, 16);
  QueueRunnerFactory factory = make_queue_runner_factory(EngineOptions{});
  SimQueueDesc d;
  d.queue_id = 3;
  d.target = &t;
  d.type = SimQueueType::compute_pm4;
  d.ring_va = kRingVa;
  d.ring_size = 4096;
  d.rptr_va = kPtrVa;
  d.wptr_va = kPtrVa + 8;
  std::unique_ptr<QueueRunner> r = factory(d, host);
  std::vector<uint32_t> w;
  amd::Pm4Encoder(t, w).signal(kDataVa, 6u);
  host.write(kRingVa, w);
  host.set<uint64_t>(kPtrVa + 8, w.size());
  r->doorbell(w.size());
  for (int i = 0; i < 1000 && host.get<uint32_t>(kDataVa) != 6; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host.get<uint32_t>(kDataVa), 6u);
  EXPECT_NE(r->describe().find("PM4 queue 3"), std::string::npos) << r->describe();
}

}  // namespace
}  // namespace hcq::sim::amd_engine::testing
