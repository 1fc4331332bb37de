// Every way a stream faults its channel: unknown host or class methods, a malformed header, a method on a
// subchannel with nothing bound, SET_OBJECT of a class the channel does not have, GPFIFO entries that point at
// unmapped memory or are control entries the simulator does not run, GPPut outside the ring, a header whose data
// runs past its segment, and semaphores and copies on unmapped addresses. Each fault names the method and the
// GPFIFO position (an MMU fault also the access the engine made: read, write or atomic), the channel stops (a later
// entry does not run) and the process lives on.
#include "engine_fixture.hpp"

namespace hcq::sim::nv_engine::testing {
namespace {

using nv::NvArch;
using nv::SecOp;
using nv::pb::header;

struct StreamCase {
  const char* name;
  NvEngineKind engine;
  // Builds the bad stream for `ch`; may also prepare the host.
  std::function<void(TestChannel& ch, TestHost& host)> submit;
  ChannelFaultKind kind;
  const char* expect;
  uint64_t address = 0;                // the fault's address, when it has one
  MmuAccess access = MmuAccess::read;  // an MMU fault's access, as the engine made it
};

uint32_t sem_exec(const nv::ClassMethods& h, std::string_view op, bool is64) {
  return field(h, "SEM_EXECUTE", "OPERATION", op) |
         field(h, "SEM_EXECUTE", "PAYLOAD_SIZE", is64 ? std::string_view("64BIT") : std::string_view("32BIT"));
}

std::vector<StreamCase> cases() {
  auto one = [](std::vector<uint32_t> w) { return [w](TestChannel& ch, TestHost&) { ch.submit(w); }; };
  return {
      {"unknown host method", NvEngineKind::compute, one({header(SecOp::inc_method, 0, 0x0c, 1), 0}),
       ChannelFaultKind::pbdma_error, "unknown host method 0xc"},
      {"unknown class method", NvEngineKind::compute,
       [](TestChannel& ch, TestHost&) {
         Push p;
         p.set_object(1, ch.compute_class().class_id);
         p.w.push_back(header(SecOp::inc_method, 1, 0x104, 1));
         p.w.push_back(0);
         ch.submit(p.w);
       },
       ChannelFaultKind::pbdma_error, "unknown method 0x104"},
      {"malformed header", NvEngineKind::compute, one({0xc0000000u | 0x10}), ChannelFaultKind::pbdma_error,
       "malformed method header"},
      {"nothing bound", NvEngineKind::compute, one({header(SecOp::inc_method, 5, 0x300, 1), 0}),
       ChannelFaultKind::pbdma_error, "subchannel 5, which has no object bound"},
      {"class not allocated", NvEngineKind::copy,
       [](TestChannel& ch, TestHost& host) {
         host.allow_classes({ch.info().classes.compute});
         Push p;
         p.set_object(4, ch.copy_class().class_id);
         ch.submit(p.w);
       },
       ChannelFaultKind::pbdma_error, "not allocated on this channel"},
      {"no such class", NvEngineKind::compute, one({header(SecOp::inc_method, 2, 0, 1), 0x1234}),
       ChannelFaultKind::pbdma_error, "names class 0x1234"},
      {"segment unmapped", NvEngineKind::compute, [](TestChannel& ch, TestHost&) { ch.entry(0x7700000000, 4); },
       ChannelFaultKind::mmu_fault, "is not mapped; read of address 0x7700000000", 0x7700000000},
      {"control entry", NvEngineKind::compute,
       [](TestChannel& ch, TestHost&) {
         ch.raw_entry(nv::gpfifo::kOpcode.place(nv::gpfifo::kOpcode.value_of("ILLEGAL")));
       },
       ChannelFaultKind::pbdma_error, "opcode ILLEGAL"},
      {"GPPut outside the ring", NvEngineKind::compute,
       [](TestChannel& ch, TestHost& host) {
         host.set<uint32_t>(ch.desc().userd_va + nv::gpfifo::kUserdGpPutOffset, 999);
         ch.runner().doorbell();
       },
       ChannelFaultKind::pbdma_error, "GPPut 999"},
      {"count past the segment", NvEngineKind::compute, one({header(SecOp::inc_method, 0, 0x5c, 4), 0, 0}),
       ChannelFaultKind::pbdma_error, "past the end of the segment"},
      {"release unmapped", NvEngineKind::compute,
       [](TestChannel& ch, TestHost&) {
         Push p;
         p.inc(0, ch.host_class(), "SEM_ADDR_LO", {0x10000, 0x66, 1, 0, sem_exec(ch.host_class(), "RELEASE", true)});
         ch.submit(p.w);
       },
       ChannelFaultKind::mmu_fault,
       "SEM_EXECUTE: semaphore release to an unmapped address; write of address 0x6600010000", 0x6600010000,
       MmuAccess::write},
      {"reduction unmapped", NvEngineKind::compute,
       [](TestChannel& ch, TestHost&) {
         const nv::ClassMethods& h = ch.host_class();
         Push p;
         p.inc(0, h, "SEM_ADDR_LO",
               {0x10000, 0x66, 1, 0,
                sem_exec(h, "REDUCTION", false) | field(h, "SEM_EXECUTE", "REDUCTION", std::string_view("IADD"))});
         ch.submit(p.w);
       },
       ChannelFaultKind::mmu_fault,
       "SEM_EXECUTE: semaphore reduction on an unmapped address; atomic of address 0x6600010000", 0x6600010000,
       MmuAccess::atomic},
      {"acquire unmapped", NvEngineKind::compute,
       [](TestChannel& ch, TestHost&) {
         Push p;
         p.inc(0, ch.host_class(), "SEM_ADDR_LO",
               {0x10000, 0x66, 1, 0, sem_exec(ch.host_class(), "ACQ_CIRC_GEQ", false)});
         ch.submit(p.w);
       },
       ChannelFaultKind::mmu_fault, "semaphore acquire from an unmapped address; read of address 0x6600010000",
       0x6600010000, MmuAccess::read},
      {"64-bit semaphore misaligned", NvEngineKind::compute,
       [](TestChannel& ch, TestHost&) {
         Push p;
         p.inc(0, ch.host_class(), "SEM_ADDR_LO",
               {static_cast<uint32_t>(kDataVa + 4), 0, 1, 0, sem_exec(ch.host_class(), "RELEASE", true)});
         ch.submit(p.w);
       },
       ChannelFaultKind::pbdma_error, "not 8-byte aligned"},
      {"copy unmapped", NvEngineKind::copy,
       [](TestChannel& ch, TestHost&) {
         const auto& c = ch.copy_class();
         Push p;
         p.set_object(4, c.class_id);
         p.inc(4, c, "OFFSET_IN_UPPER", {0, static_cast<uint32_t>(kDataVa), 0x55, 0});
         p.inc(4, c, "LINE_LENGTH_IN", {64});
         p.inc(4, c, "LAUNCH_DMA",
               {field(c, "LAUNCH_DMA", "SRC_MEMORY_LAYOUT", std::string_view("PITCH")) |
                field(c, "LAUNCH_DMA", "DST_MEMORY_LAYOUT", std::string_view("PITCH")) |
                field(c, "LAUNCH_DMA", "DATA_TRANSFER_TYPE", std::string_view("NON_PIPELINED"))});
         ch.submit(p.w);
       },
       ChannelFaultKind::mmu_fault, "touches unmapped memory; write of address 0x5500000000", 0x5500000000,
       MmuAccess::write},
      {"copy from unmapped", NvEngineKind::copy,
       [](TestChannel& ch, TestHost&) {
         const auto& c = ch.copy_class();
         Push p;
         p.set_object(4, c.class_id);
         p.inc(4, c, "OFFSET_IN_UPPER", {0x55, 0, 0, static_cast<uint32_t>(kDataVa)});
         p.inc(4, c, "LINE_LENGTH_IN", {64});
         p.inc(4, c, "LAUNCH_DMA",
               {field(c, "LAUNCH_DMA", "SRC_MEMORY_LAYOUT", std::string_view("PITCH")) |
                field(c, "LAUNCH_DMA", "DST_MEMORY_LAYOUT", std::string_view("PITCH")) |
                field(c, "LAUNCH_DMA", "DATA_TRANSFER_TYPE", std::string_view("NON_PIPELINED"))});
         ch.submit(p.w);
       },
       ChannelFaultKind::mmu_fault, "touches unmapped memory; read of address 0x5500000000", 0x5500000000,
       MmuAccess::read},
      {"block-linear copy", NvEngineKind::copy,
       [](TestChannel& ch, TestHost&) {
         const auto& c = ch.copy_class();
         Push p;
         p.set_object(4, c.class_id);
         p.inc(4, c, "LINE_LENGTH_IN", {64});
         p.inc(4, c, "LAUNCH_DMA", {field(c, "LAUNCH_DMA", "DATA_TRANSFER_TYPE", std::string_view("NON_PIPELINED"))});
         ch.submit(p.w);
       },
       ChannelFaultKind::ce_error, "block-linear"},
  };
}

class NvEngineFault : public ::testing::TestWithParam<NvArch> {};

TEST_P(NvEngineFault, BadStreamsFaultTheChannel) {
  const nv::NvArchInfo& a = nv::arch_info(GetParam());
  EngineGroup group{EngineOptions{}};
  for (const StreamCase& c : cases()) {
    SCOPED_TRACE(c.name);
    TestHost host;
    host.map(kDataVa, 4096);
    host.allow_classes({a.classes.compute, a.classes.copy});
    TestChannel ch(host, group, GetParam(), c.engine);
    // A good entry first: the fault is at GPFIFO entry 1.
    Push ok;
    ok.inc(0, ch.host_class(), "SEM_ADDR_LO",
           {static_cast<uint32_t>(kDataVa), 0, 1, 0, sem_exec(ch.host_class(), "RELEASE", false)});
    ch.submit(ok.w);
    ASSERT_EQ(ch.settle(), RunnerState::idle) << ch.runner().describe();
    c.submit(ch, host);
    ASSERT_EQ(ch.settle(), RunnerState::faulted) << ch.runner().describe();
    const auto faults = host.faults();
    ASSERT_EQ(faults.size(), 1u);
    const ChannelFault& f = faults[0];
    EXPECT_EQ(f.kind, c.kind) << f.reason;
    EXPECT_NE(f.reason.find(c.expect), std::string::npos) << f.reason;
    if (c.address) {
      EXPECT_EQ(f.address, c.address) << f.reason;
    }
    if (c.kind == ChannelFaultKind::mmu_fault) {
      EXPECT_EQ(f.access, c.access) << f.reason;
    }
    if (std::string_view(c.name) != "GPPut outside the ring") {
      EXPECT_EQ(f.gpfifo_position, 1u) << f.reason;
      EXPECT_NE(f.reason.find("GPFIFO entry 1"), std::string::npos) << f.reason;
    }
    EXPECT_EQ(ch.gpget(), 1u) << "GPGet stays on the faulting entry";
    EXPECT_NE(ch.runner().describe().find("faulted"), std::string::npos);
    // The channel stays stopped: a good entry after the fault does not run.
    host.set<uint32_t>(kDataVa, 0);
    ch.submit(ok.w);
    ch.settle();
    EXPECT_EQ(host.get<uint32_t>(kDataVa), 0u);
    EXPECT_EQ(host.faults().size(), 1u);
  }
}

TEST_P(NvEngineFault, UnknownChannelClassFaults) {
  TestHost host;
  EngineGroup group{EngineOptions{}};
  ChannelDesc d;
  d.arch = GetParam();
  d.gpfifo_class = 0xc6c0;  // a compute class is no GPFIFO class
  d.gpfifo_va = kGpfifoVa;
  d.gpfifo_entries = 4;
  d.userd_va = kUserdVa;
  host.map(kGpfifoVa, 32);
  host.map(kUserdVa, 4096);
  auto r = group.create(d, host);
  ASSERT_TRUE(r->wait_settled(std::chrono::seconds(5)));
  EXPECT_EQ(r->state(), RunnerState::faulted);
  EXPECT_NE(r->fault().reason.find("not a known GPFIFO class"), std::string::npos) << r->fault().reason;
  d.gpfifo_entries = 3;
  EXPECT_THROW(group.create(d, host), std::invalid_argument);
}

// A channel stopped with its group runs no further method, even one in the step that is running: here the stop
// becomes visible between two releases of one segment (as when the process, having seen the group's notifier, opens
// an acquire the channel was waiting on), and the second release must not land.
TEST_P(NvEngineFault, AStopByTheGroupEndsTheRunningStep) {
  const nv::NvArchInfo& a = nv::arch_info(GetParam());
  EngineGroup group{EngineOptions{}};
  TestHost host;
  host.map(kDataVa, 4096);
  host.allow_classes({a.classes.compute});
  TestChannel ch(host, group, GetParam(), NvEngineKind::compute);
  host.stop_with_group_once(kDataVa, 1);
  Push p;
  p.inc(0, ch.host_class(), "SEM_ADDR_LO",
        {static_cast<uint32_t>(kDataVa), 0, 1, 0, sem_exec(ch.host_class(), "RELEASE", false)});
  p.inc(0, ch.host_class(), "SEM_ADDR_LO",
        {static_cast<uint32_t>(kDataVa + 16), 0, 7, 0, sem_exec(ch.host_class(), "RELEASE", false)});
  ch.submit(p.w);
  ASSERT_EQ(ch.settle(), RunnerState::faulted) << ch.runner().describe();
  EXPECT_EQ(host.get<uint32_t>(kDataVa), 1u);
  EXPECT_EQ(host.get<uint32_t>(kDataVa + 16), 0u) << "a method ran after the channel's group was stopped";
  EXPECT_TRUE(host.faults().empty()) << "a channel stopped by its group reports no fault of its own";
  EXPECT_EQ(ch.runner().fault().reason, "stopped with its channel group");
}

// Garbage never crashes: random words (biased towards valid headers for the bound classes' methods, and towards
// addresses in mapped memory) end idle, waiting or faulted, and a fault is always reported with a reason.
TEST_P(NvEngineFault, RandomStreamsNeverCrash) {
  const nv::NvArchInfo& a = nv::arch_info(GetParam());
  std::vector<const nv::ClassMethods*> classes = {nv::find_class(a.classes.gpfifo), nv::find_class(a.classes.compute),
                                                  nv::find_class(a.classes.copy)};
  EngineGroup group{EngineOptions{}};
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(GetParam());
  auto next = [&] {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    return seed;
  };
  int faulted = 0;
  for (int round = 0; round < 150; ++round) {
    TestHost host;
    host.map(kDataVa, 1 << 16);
    host.allow_classes({a.classes.compute, a.classes.copy});
    TestChannel ch(host, group, GetParam(), round % 2 ? NvEngineKind::copy : NvEngineKind::compute);
    Push p;
    p.set_object(1, a.classes.compute);
    p.set_object(4, a.classes.copy);
    const int n = 1 + static_cast<int>(next() % 40);
    for (int i = 0; i < n; ++i) {
      const uint64_t r = next();
      if (r % 3 == 0) {  // a method of a real class, with one data word
        const nv::ClassMethods* c = classes[r % classes.size()];
        const nv::Method& m = c->methods[(r >> 8) % c->methods.size()];
        const uint32_t sub = c->kind == nv::ClassKind::host ? 0 : c->kind == nv::ClassKind::compute ? 1 : 4;
        p.w.push_back(header(SecOp::inc_method, sub, m.offset, 1));
        p.w.push_back(r % 5 == 0 ? static_cast<uint32_t>(kDataVa + ((r >> 20) % 0x10000))
                                 : static_cast<uint32_t>(r >> 32));
      } else {
        p.w.push_back(static_cast<uint32_t>(r >> (r % 2 ? 32 : 0)));
      }
    }
    ch.submit(p.w);
    const RunnerState s = ch.settle();
    if (s == RunnerState::faulted) {
      ++faulted;
      ASSERT_EQ(host.faults().size(), 1u);
      EXPECT_FALSE(host.faults()[0].reason.empty());
    } else {
      EXPECT_TRUE(host.faults().empty());
    }
  }
  EXPECT_GT(faulted, 0);
}

INSTANTIATE_TEST_SUITE_P(Arch, NvEngineFault, ::testing::Values(NvArch::ampere, NvArch::hopper, NvArch::blackwell),
                         [](const auto& i) { return std::string(nv::to_string(i.param)); });

}  // namespace
}  // namespace hcq::sim::nv_engine::testing
