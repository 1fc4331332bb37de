// The channel executor on its own: host semaphores (release 32/64-bit with the timestamp, acquire released by a host
// write), GPFIFO entries and GPGet progress, ring wrap, copies (1-D, pitch, large) with their semaphore, the
// deterministic mode, and the faults of bad streams. Every architecture's classes.
#include <thread>

#include "engine_fixture.hpp"
#include "nv/encode.hpp"

namespace hcq::sim::nv_engine::testing {
namespace {

using nv::NvArch;

// SEM_ADDR_LO..SEM_EXECUTE on subchannel 0.
void semaphore(Push& p, const nv::ClassMethods& h, uint64_t va, uint64_t payload, std::string_view op, bool is64,
               bool timestamp = false) {
  uint32_t exec = field(h, "SEM_EXECUTE", "OPERATION", op) |
                  field(h, "SEM_EXECUTE", "PAYLOAD_SIZE", is64 ? std::string_view("64BIT") : std::string_view("32BIT"));
  if (timestamp) exec |= field(h, "SEM_EXECUTE", "RELEASE_TIMESTAMP", std::string_view("EN"));
  p.inc(0, h, "SEM_ADDR_LO",
        {static_cast<uint32_t>(va), static_cast<uint32_t>(va >> 32), static_cast<uint32_t>(payload),
         static_cast<uint32_t>(payload >> 32), exec});
}

class NvEngineChannel : public ::testing::TestWithParam<NvArch> {
 protected:
  void SetUp() override {
    host_.map(kDataVa, 1 << 16);
    group_ = std::make_unique<EngineGroup>(EngineOptions{});
    const nv::NvArchInfo& a = nv::arch_info(GetParam());
    host_.allow_classes({a.classes.compute, a.classes.copy});
  }
  std::unique_ptr<TestChannel> channel(NvEngineKind kind, uint32_t entries = 16, uint32_t id = 1) {
    return std::make_unique<TestChannel>(host_, *group_, GetParam(), kind, entries, id);
  }
  TestHost host_;
  std::unique_ptr<EngineGroup> group_;
};

TEST_P(NvEngineChannel, SemaphoreReleases) {
  auto ch = channel(NvEngineKind::compute);
  const auto& h = ch->host_class();
  Push p;
  semaphore(p, h, kDataVa, 0x1122334455667788, "RELEASE", true, true);
  semaphore(p, h, kDataVa + 0x100, 0xaabbccdd12345678, "RELEASE", false);
  p.inc(0, h, "NON_STALL_INTERRUPT", {0});
  ch->submit(p.w);
  ASSERT_EQ(ch->settle(), RunnerState::idle) << ch->runner().describe();
  EXPECT_EQ(host_.get<uint64_t>(kDataVa), 0x1122334455667788u);
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 8), 1000u) << "16-byte report: timestamp at +8";
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x100), 0x12345678u) << "32-bit payload";
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x104), 0u);
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x108), 0u) << "no timestamp asked for";
  EXPECT_EQ(host_.interrupts(), 1);
  EXPECT_EQ(ch->gpget(), 1u);
}

TEST_P(NvEngineChannel, AcquireBlocksUntilTheHostWrites) {
  auto ch = channel(NvEngineKind::compute);
  const auto& h = ch->host_class();
  Push p;
  semaphore(p, h, kDataVa, 7, "ACQ_CIRC_GEQ", true);
  semaphore(p, h, kDataVa + 0x40, 0x100000000ull, "ACQ_STRICT_GEQ", true);
  semaphore(p, h, kDataVa + 0x80, 3, "ACQUIRE", false);
  semaphore(p, h, kDataVa + 0x100, 1, "RELEASE", true);
  ch->submit(p.w);
  ASSERT_EQ(ch->settle(), RunnerState::waiting);
  EXPECT_NE(ch->runner().describe().find("ACQ_CIRC_GEQ"), std::string::npos) << ch->runner().describe();
  host_.set<uint64_t>(kDataVa, 6);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(ch->runner().state(), RunnerState::waiting);
  host_.set<uint64_t>(kDataVa, 8);  // >= 7 releases the first; the second needs a 64-bit compare
  host_.set<uint64_t>(kDataVa + 0x40, 0xffffffffull);
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_NE(ch->runner().describe().find("ACQ_STRICT_GEQ"), std::string::npos) << ch->runner().describe();
  EXPECT_EQ(ch->gpget(), 0u) << "GPGet stays on the blocked entry";
  host_.set<uint64_t>(kDataVa + 0x40, 0x100000000ull);
  host_.set<uint32_t>(kDataVa + 0x80, 3);
  for (int i = 0; i < 1000 && host_.get<uint64_t>(kDataVa + 0x100) != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x100), 1u);
  ASSERT_EQ(ch->settle(), RunnerState::idle);
  EXPECT_EQ(ch->gpget(), 1u);
}

TEST_P(NvEngineChannel, CircularCompareWraps) {
  auto ch = channel(NvEngineKind::compute);
  const auto& h = ch->host_class();
  host_.set<uint32_t>(kDataVa, 0x00000002);  // 2 is "after" 0xfffffff0 modulo 2^32
  Push p;
  semaphore(p, h, kDataVa, 0xfffffff0u, "ACQ_CIRC_GEQ", false);
  semaphore(p, h, kDataVa + 8, 5, "RELEASE", false);
  ch->submit(p.w);
  ASSERT_EQ(ch->settle(), RunnerState::idle) << ch->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 8), 5u);
}

TEST_P(NvEngineChannel, EntriesAdvanceGpGetAndTheRingWraps) {
  auto ch = channel(NvEngineKind::compute, 4);
  const auto& h = ch->host_class();
  for (uint32_t round = 0; round < 3; ++round) {
    // Three entries per round (a ring of 4 holds at most 3 pending); the last round crosses the wrap.
    for (uint32_t i = 0; i < 3; ++i) {
      Push p;
      semaphore(p, h, kDataVa + i * 16, round * 10 + i + 1, "RELEASE", true);
      ch->submit(p.w, /*ring=*/false);
    }
    ch->publish();
    ASSERT_EQ(ch->settle(), RunnerState::idle) << ch->runner().describe();
    EXPECT_EQ(ch->gpget(), ch->gpput());
    for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ(host_.get<uint64_t>(kDataVa + i * 16), round * 10 + i + 1);
  }
  EXPECT_EQ(ch->gpget(), 9u % 4);
}

TEST_P(NvEngineChannel, HeaderForms) {
  auto ch = channel(NvEngineKind::compute);
  const auto& h = ch->host_class();
  const nv::Method* lo = h.find("SEM_ADDR_LO");
  const nv::Method* pay = h.find("SEM_PAYLOAD_LO");
  const nv::Method* ex = h.find("SEM_EXECUTE");
  const uint32_t release32 = field(h, "SEM_EXECUTE", "OPERATION", std::string_view("RELEASE"));
  using nv::SecOp;
  using nv::pb::header;
  std::vector<uint32_t> w = {
      0,  // padding
      header(SecOp::inc_method, 0, lo->offset, 2), static_cast<uint32_t>(kDataVa + 0x20), 0,
      // NON_INC: both words to SEM_PAYLOAD_LO, the last one counts.
      header(SecOp::non_inc_method, 0, pay->offset, 2), 99, 41,
      // IMMD: the value in the header.
      header(SecOp::immd_data_method, 0, ex->offset, release32),
      // ONE_INC: first to SEM_ADDR_LO, the rest to SEM_ADDR_HI.
      header(SecOp::one_inc, 0, lo->offset, 3), static_cast<uint32_t>(kDataVa + 0x30), 0, 0,
      header(SecOp::immd_data_method, 0, ex->offset, release32), header(SecOp::end_pb_segment, 0, 0, 0),
      0xffffffffu,  // past the end of the segment: never executed
  };
  ch->submit(w);
  ASSERT_EQ(ch->settle(), RunnerState::idle) << ch->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x20), 41u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x30), 41u);
}

TEST_P(NvEngineChannel, Copies) {
  auto ch = channel(NvEngineKind::copy);
  const auto& c = ch->copy_class();
  const uint64_t src = 0x40000000, dst = 0x50000000, big = 8u << 20;
  std::byte* s = host_.map(src, big);
  std::byte* d = host_.map(dst, big);
  for (uint64_t i = 0; i < big; ++i) s[i] = static_cast<std::byte>(i * 7 + (i >> 13));
  const uint32_t pitch = field(c, "LAUNCH_DMA", "SRC_MEMORY_LAYOUT", std::string_view("PITCH")) |
                         field(c, "LAUNCH_DMA", "DST_MEMORY_LAYOUT", std::string_view("PITCH")) |
                         field(c, "LAUNCH_DMA", "DATA_TRANSFER_TYPE", std::string_view("NON_PIPELINED"));
  auto copy = [&](Push& p, uint64_t to, uint64_t from, uint32_t bytes) {
    p.inc(4, c, "OFFSET_IN_UPPER",
          {static_cast<uint32_t>(from >> 32), static_cast<uint32_t>(from), static_cast<uint32_t>(to >> 32),
           static_cast<uint32_t>(to)});
    p.inc(4, c, "LINE_LENGTH_IN", {bytes});
  };
  Push p;
  p.set_object(4, c.class_id);
  copy(p, dst + 3, src + 5, 13);  // small, unaligned
  p.inc(4, c, "LAUNCH_DMA", {pitch});
  copy(p, dst + 0x1000, src + 0x1000, big - 0x1000);  // large
  p.inc(4, c, "LAUNCH_DMA", {pitch});
  // Pitch: 4 lines of 16 bytes, source stride 100, destination stride 32; then the four-word semaphore.
  copy(p, dst + 0x100, src + 0x200, 16);
  p.inc(4, c, "PITCH_IN", {100, 32, 16, 4});
  p.inc(4, c, "SET_SEMAPHORE_A", {static_cast<uint32_t>(kDataVa >> 32), static_cast<uint32_t>(kDataVa), 77});
  p.inc(4, c, "LAUNCH_DMA",
        {pitch | field(c, "LAUNCH_DMA", "MULTI_LINE_ENABLE", std::string_view("TRUE")) |
         field(c, "LAUNCH_DMA", "SEMAPHORE_TYPE", std::string_view("RELEASE_FOUR_WORD_SEMAPHORE")) |
         field(c, "LAUNCH_DMA", "INTERRUPT_TYPE", std::string_view("NON_BLOCKING"))});
  ch->submit(p.w);
  ASSERT_EQ(ch->settle(), RunnerState::idle) << ch->runner().describe();
  EXPECT_EQ(std::memcmp(d + 3, s + 5, 13), 0);
  EXPECT_EQ(d[2], std::byte{0});
  EXPECT_EQ(d[16], std::byte{0});
  EXPECT_EQ(std::memcmp(d + 0x1000, s + 0x1000, big - 0x1000), 0);
  for (int line = 0; line < 4; ++line)
    EXPECT_EQ(std::memcmp(d + 0x100 + line * 32, s + 0x200 + line * 100, 16), 0) << line;
  EXPECT_EQ(d[0x100 + 16], std::byte{0}) << "between lines untouched";
  EXPECT_EQ(host_.get<uint64_t>(kDataVa), 77u);
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 8), 1000u);
  EXPECT_EQ(host_.interrupts(), 1);
}

// drivers/nv's encoders, end to end: every host and copy operation a queue emits executes and does what it says.
TEST_P(NvEngineChannel, EncoderStreamsExecute) {
  const nv::NvArchInfo& a = nv::arch_info(GetParam());
  auto ch = channel(NvEngineKind::compute, 16, 1);
  host_.set<uint64_t>(kDataVa, 40);          // a signal with a value the timestamp must keep
  host_.set<uint32_t>(kDataVa + 0x20, 0x4);  // bit 2 set, bit 3 clear
  host_.set<uint64_t>(kDataVa + 0x30, 9);    // waited for
  std::vector<uint32_t> w;
  nv::PushbufferEncoder e(a, w);
  e.set_object(nv::pb::kComputeSubchannel, a.classes.compute);
  e.compute_setup(0x0000fe0000000000ull, 0x0000fd0000000000ull);
  e.set_local_memory(0x60000000, 1 << 20, 64);
  e.memory_barrier();
  e.wait(kDataVa + 0x30, 9);
  e.poll_bit(kDataVa + 0x20, 0x4, true);
  e.poll_bit(kDataVa + 0x20, 0x8, false);
  e.timestamp(kDataVa);
  e.write(kDataVa + 0x40, uint64_t{0x0102030405060708}, true);
  e.write(kDataVa + 0x50, 0xabcdu, false);
  e.signal(kDataVa + 0x60, 12);
  ch->submit(w);
  ASSERT_EQ(ch->settle(), RunnerState::idle) << ch->runner().describe();
  EXPECT_TRUE(host_.faults().empty());
  EXPECT_EQ(host_.get<uint64_t>(kDataVa), 40u) << "a timestamp leaves the value";
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 8), 1000u);
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x40), 0x0102030405060708u);
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x50), 0xabcdu);
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x60), 12u);
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 0x68), 1000u);
  EXPECT_GE(host_.interrupts(), 1);

  // A poll on a bit that is not set blocks.
  std::vector<uint32_t> w2;
  nv::PushbufferEncoder e2(a, w2);
  e2.poll_bit(kDataVa + 0x20, 0x8, true);
  e2.write(kDataVa + 0x70, 1u, false);
  ch->submit(w2);
  ASSERT_EQ(ch->settle(), RunnerState::waiting);
  host_.set<uint32_t>(kDataVa + 0x20, 0xc);
  for (int i = 0; i < 1000 && host_.get<uint32_t>(kDataVa + 0x70) != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x70), 1u);

  auto cp = channel(NvEngineKind::copy, 16, 2);
  const uint64_t src = 0x40000000, dst = 0x50000000, n = 3 << 20;
  std::byte* s = host_.map(src, n);
  std::byte* d = host_.map(dst, n);
  for (uint64_t i = 0; i < n; ++i) s[i] = static_cast<std::byte>(i ^ (i >> 9));
  std::vector<uint32_t> w3;
  nv::PushbufferEncoder e3(a, w3);
  e3.set_object(nv::pb::kCopySubchannel, a.classes.copy);
  e3.copy(dst, src, n);
  e3.copy_signal(kDataVa + 0x80, 3);
  cp->submit(w3);
  ASSERT_EQ(cp->settle(), RunnerState::idle) << cp->runner().describe();
  EXPECT_EQ(std::memcmp(s, d, n), 0);
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x80), 3u);
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 0x88), 1000u);
}

TEST_P(NvEngineChannel, DeterministicChannelsWaitOnEachOther) {
  EngineOptions o;
  o.scheduling = Scheduling::deterministic;
  group_ = std::make_unique<EngineGroup>(o);
  auto a = channel(NvEngineKind::compute, 16, 1);
  auto b = channel(NvEngineKind::copy, 16, 2);
  Push pa, pb;
  semaphore(pa, a->host_class(), kDataVa, 1, "ACQ_STRICT_GEQ", true);  // waits for b
  semaphore(pa, a->host_class(), kDataVa + 16, 2, "RELEASE", true);
  semaphore(pb, b->host_class(), kDataVa, 1, "RELEASE", true);
  a->submit(pa.w);
  ASSERT_EQ(a->settle(), RunnerState::waiting);
  b->submit(pb.w);
  ASSERT_EQ(b->settle(), RunnerState::idle);
  for (int i = 0; i < 1000 && host_.get<uint64_t>(kDataVa + 16) != 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 16), 2u);
}

TEST_P(NvEngineChannel, TeardownWhileWaitingIsPrompt) {
  auto ch = channel(NvEngineKind::compute);
  Push p;
  semaphore(p, ch->host_class(), kDataVa, 1000, "ACQ_STRICT_GEQ", true);
  ch->submit(p.w);
  ASSERT_EQ(ch->settle(), RunnerState::waiting);
  const auto t0 = std::chrono::steady_clock::now();
  ch.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
}

INSTANTIATE_TEST_SUITE_P(Arch, NvEngineChannel, ::testing::Values(NvArch::ampere, NvArch::hopper, NvArch::blackwell),
                         [](const auto& i) { return std::string(nv::to_string(i.param)); });

}  // namespace
}  // namespace hcq::sim::nv_engine::testing
