// The PM4 compute engine executing drivers/amd's encoder output: signals, waits, timestamps, the memory barrier,
// dispatches, indirect buffers, and the faults of bad packets and unmapped addresses. Every target.
#include <thread>

#include "amd/encode.hpp"
#include "amd/pm4_facts.hpp"
#include "engine_fixture.hpp"

namespace hcq::sim::amd_engine::testing {
namespace {

using amd::Pm4Encoder;
using amd::Target;

class Pm4EngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    t_ = &Target::from_gfx(GetParam());
    host_.map(kDataVa, 1 << 16);
    host_.map(kIbVa, 1 << 16);
    options_.dispatch = [this](const DispatchInfo& d, QueueHost&) {
      std::lock_guard<std::mutex> lk(mu_);
      dispatches_.push_back(d);
      return std::string(dispatch_error_);
    };
    group_ = std::make_unique<EngineGroup>(options_);
    q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::compute_pm4);
  }
  void TearDown() override { q_.reset(); }
  std::vector<uint32_t> words() { return {}; }

  const Target* t_ = nullptr;
  TestHost host_;
  EngineOptions options_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestQueue> q_;
  std::mutex mu_;
  std::vector<DispatchInfo> dispatches_;
  std::string dispatch_error_;
};

TEST_P(Pm4EngineTest, SignalWritesValueAndTimestamp) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  e.signal(kDataVa, 5u);
  e.write(kDataVa + 16, uint64_t{0x1122334455667788}, true);
  e.timestamp(kDataVa + 8);
  e.signal_event(kDataVa + 32, 7);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 5u);
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 16), 0x1122334455667788u);
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 8), 1000u);  // the test clock starts at 1000
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 32), 7u);
  EXPECT_EQ(host_.interrupts(), std::vector<uint32_t>{7});
  EXPECT_EQ(q_->rptr(), w.size());
  EXPECT_TRUE(host_.faults().empty());
}

TEST_P(Pm4EngineTest, TimestampsFollowTheQueueOrder) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  e.timestamp(kDataVa);
  e.timestamp(kDataVa + 8);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle);
  EXPECT_LT(host_.get<uint64_t>(kDataVa), host_.get<uint64_t>(kDataVa + 8));
}

TEST_P(Pm4EngineTest, WaitBlocksUntilTheHostWrites) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  e.wait(kDataVa, 3u);
  e.signal(kDataVa + 8, 1u);
  host_.set<uint32_t>(kDataVa, 2);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::waiting);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(q_->runner().state(), RunnerState::waiting);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 0u) << "the signal after the wait ran early";
  EXPECT_EQ(q_->rptr(), 0u);
  EXPECT_NE(q_->runner().describe().find("WAIT_REG_MEM"), std::string::npos) << q_->runner().describe();
  host_.set<uint32_t>(kDataVa, 3);  // no doorbell: the engine re-polls
  for (int i = 0; i < 500 && host_.get<uint32_t>(kDataVa + 8) != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 1u);
  ASSERT_EQ(q_->settle(), RunnerState::idle);
  EXPECT_EQ(q_->rptr(), w.size());
}

TEST_P(Pm4EngineTest, PollBitsComparesUnderTheMask) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  e.poll_bits(kDataVa, 0xf0, 0x30);
  e.signal(kDataVa + 8, 1u);
  host_.set<uint32_t>(kDataVa, 0x2f);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::waiting);
  host_.set<uint32_t>(kDataVa, 0x13f);  // (0x13f & 0xf0) == 0x30
  q_->runner().doorbell(q_->wptr());
  ASSERT_EQ(q_->settle(), RunnerState::idle);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 1u);
}

TEST_P(Pm4EngineTest, MemoryBarrierFlushesHdpAndCompletes) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  e.memory_barrier();
  e.signal(kDataVa, 9u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 9u);
}

TEST_P(Pm4EngineTest, DispatchReachesTheCallbackWithRegisters) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  amd::KernelInfo k;
  k.rsrc1 = 0x123;
  k.rsrc2 = 0x84;
  k.wave32 = t_->wave32;
  amd::DispatchArgs a;
  a.code_addr = uint64_t{0x7f1234567800};
  a.kernarg_addr = uint64_t{0x7f00aabb0040};
  a.scratch_addr = uint64_t{0x7f0000000000};
  a.groups = {Sym(4u), Sym(3u), Sym(2u)};
  a.local = {Sym(64u), Sym(2u), Sym(1u)};
  e.exec(k, a);
  e.signal(kDataVa, 1u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  std::lock_guard<std::mutex> lk(mu_);
  ASSERT_EQ(dispatches_.size(), 1u);
  const DispatchInfo& d = dispatches_[0];
  EXPECT_EQ(d.code_addr, 0x7f1234567800u);
  EXPECT_EQ(d.kernarg_addr, 0x7f00aabb0040u);
  EXPECT_EQ(d.groups, (std::array<uint32_t, 3>{4, 3, 2}));
  EXPECT_EQ(d.local, (std::array<uint32_t, 3>{64, 2, 1}));
  EXPECT_EQ(d.grid, (std::array<uint64_t, 3>{256, 6, 2}));
  EXPECT_EQ(d.rsrc1 & 0x3ff, 0x123u);
  EXPECT_EQ(d.rsrc2, 0x84u);
  EXPECT_EQ(d.wave32, t_->wave32);
  EXPECT_EQ(d.queue_type, SimQueueType::compute_pm4);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 1u);
}

TEST_P(Pm4EngineTest, DispatchPointerKernelsPutKernargsInUserData2) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  amd::KernelInfo k;
  k.dispatch_ptr = true;
  k.wave32 = t_->wave32;
  amd::DispatchArgs a;
  a.code_addr = uint64_t{0x100000};
  a.kernarg_addr = uint64_t{0x7f00aabb0040};
  a.dispatch_packet_addr = uint64_t{0x5000};
  e.exec(k, a);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  std::lock_guard<std::mutex> lk(mu_);
  ASSERT_EQ(dispatches_.size(), 1u);
  EXPECT_EQ(dispatches_[0].user_data64(0), 0x5000u);
  EXPECT_EQ(dispatches_[0].user_data64(2), 0x7f00aabb0040u);
}

TEST_P(Pm4EngineTest, FailedDispatchFaultsTheQueue) {
  dispatch_error_ = "no host twin registered";
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  amd::KernelInfo k;
  k.wave32 = t_->wave32;
  amd::DispatchArgs a;
  a.code_addr = uint64_t{0x100000};
  e.exec(k, a);
  e.signal(kDataVa, 1u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("no host twin registered"), std::string::npos);
  EXPECT_EQ(q_->runner().fault().address, 0x100000u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 0u);
  ASSERT_EQ(host_.faults().size(), 1u);
}

// COMPUTE_PGM_RSRC2.LDS_SIZE is the LDS each workgroup gets: all of a workgroup's share (64 KiB on every simulated
// part) runs, one granule more is refused at the dispatch.
TEST_P(Pm4EngineTest, LdsBeyondWhatAWorkgroupMayHaveFaults) {
  const amd::Field* lds = nullptr;
  for (const amd::Field& f : t_->regs->find("COMPUTE_PGM_RSRC2")->fields)
    if (f.name == "lds_size") lds = &f;
  ASSERT_NE(lds, nullptr);
  const uint32_t fits = 65536 / t_->lds_granule_bytes;
  ASSERT_LE(fits + 1, lds->mask()) << "the field cannot say more than the limit";
  const auto dispatch = [&](uint32_t blocks) {
    q_.reset();  // the old queue's runner stops before the new queue maps its ring over the same test memory
    q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::compute_pm4);
    std::vector<uint32_t> w;
    Pm4Encoder e(*t_, w);
    amd::KernelInfo k;
    k.rsrc2 = lds->place(blocks);
    k.wave32 = t_->wave32;
    amd::DispatchArgs a;
    a.code_addr = uint64_t{0x100000};
    e.exec(k, a);
    q_->submit(w);
    return q_->settle();
  };
  EXPECT_EQ(dispatch(fits), RunnerState::idle) << q_->runner().describe();
  ASSERT_EQ(dispatch(fits + 1), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("LDS_SIZE of " + std::to_string((fits + 1) * t_->lds_granule_bytes)),
            std::string::npos)
      << q_->runner().fault().reason;
}

TEST_P(Pm4EngineTest, IndirectBuffersRunNestedAndOnce) {
  // IB2: signal. IB1: interrupt, wait, call IB2. Ring: IB1, then a signal.
  std::vector<uint32_t> ib2, ib1, ring;
  Pm4Encoder(*t_, ib2).signal(kDataVa + 8, 2u);
  Pm4Encoder e1(*t_, ib1);
  e1.signal_event(kDataVa + 16, 11);
  e1.wait(kDataVa, 1u);
  e1.indirect_buffer(kIbVa + 0x1000, static_cast<uint32_t>(ib2.size()));
  host_.write(kIbVa, ib1);
  host_.write(kIbVa + 0x1000, ib2);
  Pm4Encoder er(*t_, ring);
  er.indirect_buffer(kIbVa, static_cast<uint32_t>(ib1.size()));
  er.signal(kDataVa + 12, 3u);
  q_->submit(ring);
  ASSERT_EQ(q_->settle(), RunnerState::waiting);
  EXPECT_EQ(q_->rptr(), 0u) << "the ring's IB packet is consumed when its IB ends";
  host_.set<uint32_t>(kDataVa, 1);
  q_->runner().doorbell(q_->wptr());
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 2u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 12), 3u);
  EXPECT_EQ(host_.interrupts(), std::vector<uint32_t>{11}) << "a resumed IB re-ran packets before the wait";
  EXPECT_EQ(q_->rptr(), ring.size());
}

TEST_P(Pm4EngineTest, ThirdIndirectBufferLevelFaults) {
  std::vector<uint32_t> ib3, ib2, ib1, ring;
  Pm4Encoder(*t_, ib3).nop(4);
  Pm4Encoder(*t_, ib2).indirect_buffer(kIbVa + 0x2000, 4);
  Pm4Encoder(*t_, ib1).indirect_buffer(kIbVa + 0x1000, static_cast<uint32_t>(ib2.size()));
  host_.write(kIbVa, ib1);
  host_.write(kIbVa + 0x1000, ib2);
  host_.write(kIbVa + 0x2000, ib3);
  Pm4Encoder(*t_, ring).indirect_buffer(kIbVa, static_cast<uint32_t>(ib1.size()));
  q_->submit(ring);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  const FaultRecord f = q_->runner().fault();
  EXPECT_TRUE(f.in_ib);
  EXPECT_EQ(f.ib_va, kIbVa + 0x1000);
  EXPECT_NE(f.reason.find("nested"), std::string::npos) << f.reason;
}

TEST_P(Pm4EngineTest, PacketsWrapAroundTheRingEnd) {
  q_.reset();
  q_ = std::make_unique<TestQueue>(host_, *group_, *t_, SimQueueType::compute_pm4, 4096, 1, 1024 - 3);
  std::vector<uint32_t> w;
  Pm4Encoder(*t_, w).signal(kDataVa, 77u);  // 8 dwords: 3 before the end, 5 after
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::idle) << q_->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 77u);
  EXPECT_EQ(q_->rptr(), 1024u - 3 + 8);
}

TEST_P(Pm4EngineTest, UnknownOpcodeFaultsAndStopsTheQueue) {
  std::vector<uint32_t> w;
  Pm4Encoder e(*t_, w);
  e.signal(kDataVa, 1u);
  const size_t at = w.size();
  w.push_back(amd::pm4::header(0xf3, 2));  // not an opcode AMD documents
  w.push_back(0);
  w.push_back(0);
  e.signal(kDataVa + 4, 2u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  const FaultRecord f = q_->runner().fault();
  EXPECT_EQ(f.ring_pos, at);
  ASSERT_FALSE(f.packet.empty());
  EXPECT_EQ(f.packet[0], amd::pm4::header(0xf3, 2));
  EXPECT_NE(f.reason.find("unknown PM4 opcode 0xf3"), std::string::npos) << f.reason;
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 1u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 4), 0u);
  EXPECT_EQ(q_->rptr(), at) << "the read pointer stays at the faulting packet";
  // A faulted queue runs nothing more.
  std::vector<uint32_t> more;
  Pm4Encoder(*t_, more).signal(kDataVa + 8, 3u);
  q_->submit(more);
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 0u);
  ASSERT_EQ(host_.faults().size(), 1u);
  EXPECT_FALSE(host_.faults()[0].memory);
  EXPECT_NE(q_->runner().describe().find("faulted"), std::string::npos);
}

TEST_P(Pm4EngineTest, DocumentedButUnsimulatedOpcodeFaults) {
  std::vector<uint32_t> w = {amd::pm4::header(amd::pm4::COPY_DATA, 5), 0, 0, 0, 0, 0};
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("COPY_DATA"), std::string::npos);
}

TEST_P(Pm4EngineTest, TruncatedPacketFaults) {
  std::vector<uint32_t> w;
  Pm4Encoder(*t_, w).signal(kDataVa, 1u);
  w.resize(5);  // the header says 8 dwords
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("truncated"), std::string::npos) << q_->runner().fault().reason;
  EXPECT_EQ(host_.get<uint32_t>(kDataVa), 0u);
}

TEST_P(Pm4EngineTest, WrongLengthPacketFaults) {
  std::vector<uint32_t> w;
  Pm4Encoder(*t_, w).signal(kDataVa, 1u);
  w[0] = amd::pm4::header(amd::pm4::RELEASE_MEM, 6);  // one dword short of RELEASE_MEM
  w.pop_back();
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_NE(q_->runner().fault().reason.find("RELEASE_MEM"), std::string::npos);
}

TEST_P(Pm4EngineTest, UnmappedAddressIsAMemoryFault) {
  std::vector<uint32_t> w;
  Pm4Encoder(*t_, w).signal(uint64_t{0xdead0000}, 1u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  const FaultRecord f = q_->runner().fault();
  EXPECT_TRUE(f.memory);
  EXPECT_EQ(f.address, 0xdead0000u);
  ASSERT_EQ(host_.faults().size(), 1u);
  EXPECT_TRUE(host_.faults()[0].memory);
  EXPECT_EQ(host_.faults()[0].address, 0xdead0000u);
  EXPECT_NE(host_.faults()[0].reason.find("0xdead0000"), std::string::npos);
}

TEST_P(Pm4EngineTest, UnmappedIndirectBufferFaults) {
  std::vector<uint32_t> w;
  Pm4Encoder(*t_, w).indirect_buffer(uint64_t{0xbeef000}, 16);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::faulted);
  EXPECT_TRUE(q_->runner().fault().memory);
  EXPECT_EQ(q_->runner().fault().address, 0xbeef000u);
}

TEST_P(Pm4EngineTest, DestroyingAWaitingQueueReturns) {
  std::vector<uint32_t> w;
  Pm4Encoder(*t_, w).wait(kDataVa, 1u);
  q_->submit(w);
  ASSERT_EQ(q_->settle(), RunnerState::waiting);
  q_.reset();  // joins the simulator thread
  SUCCEED();
}

INSTANTIATE_TEST_SUITE_P(Targets, Pm4EngineTest, ::testing::Values("gfx942", "gfx1100", "gfx1201"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace hcq::sim::amd_engine::testing
