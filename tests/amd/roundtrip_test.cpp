// (3) Round trip: every encoder's output decodes to the same ops and fields, on every target; symbolic operands
// are reported where they live, and patching them gives the words a constant encoding would.
#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

#include "amd/decode.hpp"
#include "amd/encode.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

std::vector<std::string> ops(const std::vector<DecodedPacket>& ps) {
  std::vector<std::string> out;
  for (const DecodedPacket& p : ps) {
    EXPECT_TRUE(p.ok()) << p.op << ": " << p.error;
    out.push_back(p.op);
  }
  return out;
}

uint64_t field(const DecodedPacket& p, const char* name) {
  const DecodedField* f = p.field(name);
  EXPECT_NE(f, nullptr) << p.op << " lacks " << name;
  return f ? f->value : ~uint64_t{0};
}

class RoundTrip : public ::testing::TestWithParam<std::string> {
 protected:
  const Target& t() const { return Target::from_gfx(GetParam()); }
};

TEST_P(RoundTrip, Pm4SignalWaitTimestampBarrier) {
  std::vector<uint32_t> w;
  Pm4Encoder e(t(), w);
  e.signal(0x1000u, 7u);
  e.signal_event(0x2000u, 9);
  e.wait(0x1000u, 6u);
  e.timestamp(0x1008u);
  e.memory_barrier();
  e.indirect_buffer(0x40000u, 24);
  e.write(0x3000u, 0x1122334455ull, true);
  e.poll_bits(0x4000u, 0x10, 0x10);
  e.nop(1);
  e.nop(3);
  const auto p = decode_pm4(w, t());
  EXPECT_EQ(ops(p), (std::vector<std::string>{"RELEASE_MEM", "RELEASE_MEM", "WAIT_REG_MEM", "RELEASE_MEM",
                                              "RELEASE_MEM", "ACQUIRE_MEM", "WAIT_REG_MEM", "ACQUIRE_MEM",
                                              "INDIRECT_BUFFER", "RELEASE_MEM", "WAIT_REG_MEM", "NOP", "NOP"}));
  ASSERT_EQ(p.size(), 13u);
  EXPECT_EQ(field(p[0], "address"), 0x1000u);
  EXPECT_EQ(field(p[0], "data"), 7u);
  EXPECT_EQ(p[0].field("data_sel")->text, "data_sel__mec_release_mem__send_32_bit_low");
  EXPECT_EQ(p[0].field("event_index")->text, "event_index__mec_release_mem__end_of_pipe");
  EXPECT_EQ(field(p[1], "int_ctxid"), 9u);
  EXPECT_EQ(field(p[1], "int_sel"), 2u);
  EXPECT_EQ(field(p[2], "poll_address"), 0x1000u);
  EXPECT_EQ(field(p[2], "reference"), 6u);
  EXPECT_EQ(p[2].field("function")->text, "GREATER_THAN_OR_EQUAL_REFERENCE_VALUE");
  EXPECT_EQ(field(p[4], "address"), 0x1008u);
  EXPECT_EQ(field(p[4], "data_sel"), 3u);
  EXPECT_EQ(p[6].field("poll_reg")->text, "BIF_BX_PF0_GPU_HDP_FLUSH_REQ");
  EXPECT_EQ(p[6].field("write_reg2")->text, "BIF_BX_PF0_GPU_HDP_FLUSH_DONE");
  EXPECT_EQ(field(p[6], "operation"), 1u);
  EXPECT_EQ(field(p[8], "ib_base"), 0x40000u);
  EXPECT_EQ(field(p[8], "ib_size"), 24u);
  EXPECT_EQ(field(p[8], "valid"), 1u);
  EXPECT_EQ(field(p[9], "data"), 0x1122334455ull);
  EXPECT_EQ(field(p[10], "mask"), 0x10u);
  EXPECT_EQ(p[11].words, 1u);
  EXPECT_EQ(p[12].words, 3u);
}

TEST_P(RoundTrip, Pm4ExecWritesTheRegistersItWasGiven) {
  KernelDescriptor kd;
  kd.compute_pgm_rsrc1 = 0x40af0040;
  kd.compute_pgm_rsrc2 = 0x84;
  kd.group_segment_fixed_size = 1000;
  kd.kernel_code_properties = KernelDescriptor::kKernargSegmentPtr | KernelDescriptor::kDispatchPtr |
                              (t().wave32 ? KernelDescriptor::kWavefrontSize32 : 0);
  const KernelInfo k = KernelInfo::from_descriptor(kd, t());
  DispatchArgs a;
  a.code_addr = 0x7f0012345600ull;
  a.kernarg_addr = 0x7f00aaaa0000ull;
  a.dispatch_packet_addr = 0x7f00bbbb0000ull;
  a.scratch_addr = 0x7f00cc000000ull;
  a.tmpring_size = 0x20200;
  a.groups = {4u, 5u, 6u};
  a.local = {64u, 2u, 1u};
  std::vector<uint32_t> w;
  Pm4Encoder(t(), w).exec(k, a);
  const auto p = decode_pm4(w, t());
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.front().op, "ACQUIRE_MEM");
  EXPECT_EQ(p[p.size() - 2].op, "DISPATCH_DIRECT");
  EXPECT_EQ(p.back().op, "EVENT_WRITE");
  EXPECT_EQ(p.back().field("event_type")->text, "CS_PARTIAL_FLUSH");
  std::map<std::string, uint64_t> regs;
  for (const DecodedPacket& q : p) {
    EXPECT_TRUE(q.ok()) << q.op << ": " << q.error;
    if (q.op == "SET_SH_REG")
      for (const DecodedField& f : q.fields) regs[f.name] = f.value;
  }
  EXPECT_EQ(regs["COMPUTE_PGM_LO"], (0x7f0012345600ull >> 8) & 0xffffffff);
  EXPECT_EQ(regs["COMPUTE_PGM_HI"], 0x7f0012345600ull >> 40);
  EXPECT_EQ(regs["COMPUTE_PGM_RSRC1"], k.rsrc1);
  EXPECT_EQ(regs["COMPUTE_PGM_RSRC2.lds_size"], 2u);    // 1000 bytes in 512-byte blocks
  EXPECT_EQ(regs["COMPUTE_USER_DATA_0"], 0xbbbb0000u);  // dispatch pointer first
  EXPECT_EQ(regs["COMPUTE_USER_DATA_2"], 0xaaaa0000u);  // then kernarg pointer
  EXPECT_EQ(regs["COMPUTE_NUM_THREAD_X.num_thread_full"], 64u);
  EXPECT_EQ(regs["COMPUTE_NUM_THREAD_Y.num_thread_full"], 2u);
  EXPECT_EQ(regs["COMPUTE_TMPRING_SIZE"], 0x20200u);
  EXPECT_EQ(regs.count("COMPUTE_PGM_RSRC3"), 1u);
  const DecodedPacket& d = p[p.size() - 2];
  EXPECT_EQ(field(d, "dim_x"), 4u);
  EXPECT_EQ(field(d, "dim_z"), 6u);
  EXPECT_EQ(field(d, "dispatch_initiator.compute_shader_en"), 1u);
  if (t().wave32) {
    EXPECT_EQ(field(d, "dispatch_initiator.cs_w32_en"), 1u);
  }
}

// exec() reuses the words of the previous identical launch on the same thread, rewriting the kernarg and dispatch
// packet addresses: what it emits must equal a cold encoding (a fresh thread has no memo) in every case.
TEST_P(RoundTrip, Pm4ExecRepeatedLaunchesEncodeAsFresh) {
  KernelDescriptor kd;
  kd.compute_pgm_rsrc1 = 0x40af0040;
  kd.compute_pgm_rsrc2 = 0x84;
  kd.kernel_code_properties = KernelDescriptor::kKernargSegmentPtr | KernelDescriptor::kDispatchPtr;
  const KernelInfo with_packet = KernelInfo::from_descriptor(kd, t());
  kd.kernel_code_properties = KernelDescriptor::kKernargSegmentPtr;
  const KernelInfo plain = KernelInfo::from_descriptor(kd, t());
  auto launch = [](uint64_t kernargs, uint32_t groups_x, uint64_t scratch) {
    DispatchArgs a;
    a.code_addr = 0x7f0012345600ull;
    a.kernarg_addr = kernargs;
    a.dispatch_packet_addr = kernargs - 0x40;
    a.scratch_addr = scratch;
    a.groups = {groups_x, 5u, 6u};
    a.local = {64u, 2u, 1u};
    return a;
  };
  const std::vector<std::pair<const KernelInfo*, DispatchArgs>> seq = {
      {&plain, launch(0x7f00aaaa0000ull, 4, 0)},       {&plain, launch(0x7f00aaaa1000ull, 4, 0)},
      {&plain, launch(0x7f00aaaa2000ull, 7, 0)},       {&plain, launch(0x7f00aaaa3000ull, 7, 0x7f00cc000000ull)},
      {&with_packet, launch(0x7f00aaab0000ull, 7, 0)}, {&with_packet, launch(0x7f00aaab1000ull, 7, 0)},
      {&plain, launch(0x7f00aaac0000ull, 7, 0)},
  };
  for (size_t i = 0; i < seq.size(); ++i) {
    std::vector<uint32_t> warm, cold;
    Pm4Encoder(t(), warm).exec(*seq[i].first, seq[i].second);
    std::thread([&] { Pm4Encoder(t(), cold).exec(*seq[i].first, seq[i].second); }).join();
    EXPECT_EQ(warm, cold) << "launch " << i;
  }
  // Symbolic operands are never served from the memo: their patches must be reported.
  DispatchArgs sym = launch(0x7f00aaad0000ull, 7, 0);
  sym.kernarg_addr = Sym(Var{0});
  std::vector<uint32_t> w;
  RecordingSink sink;
  Pm4Encoder(t(), w, &sink).exec(plain, sym);
  EXPECT_EQ(sink.entries.size(), 1u);
}

TEST_P(RoundTrip, SdmaPackets) {
  std::vector<uint32_t> w;
  SdmaEncoder e(t(), w);
  const uint64_t big = t().sdma->max_copy_bytes * 2 + 100;
  e.wait(0x1000u, 3u);
  e.copy(0x200000000ull, 0x100000000ull, big);
  e.fence(0x1000u, 4u);
  e.signal_event(0x2000u, 5);
  e.timestamp(0x1008u);
  e.write(0x3000u, 0xabcdu, false);
  e.nop(3);
  const auto p = decode_sdma(w, t());
  EXPECT_EQ(ops(p), (std::vector<std::string>{"POLL_REGMEM", "COPY_LINEAR", "COPY_LINEAR", "COPY_LINEAR", "FENCE",
                                              "FENCE", "TRAP", "TIMESTAMP", "WRITE_LINEAR", "NOP"}));
  ASSERT_EQ(p.size(), 10u);
  EXPECT_EQ(field(p[0], "func"), 5u);
  EXPECT_EQ(field(p[0], "value"), 3u);
  EXPECT_EQ(field(p[1], "byte_count"), t().sdma->max_copy_bytes);
  EXPECT_EQ(field(p[2], "src_addr"), 0x100000000ull + t().sdma->max_copy_bytes);
  EXPECT_EQ(field(p[3], "byte_count"), 100u);
  EXPECT_EQ(field(p[3], "dst_addr"), 0x200000000ull + 2 * t().sdma->max_copy_bytes);
  EXPECT_EQ(field(p[5], "data"), 5u);
  EXPECT_EQ(field(p[6], "int_context"), 5u);
  EXPECT_EQ(field(p[7], "write_addr"), 0x1008u);
  EXPECT_EQ(p[7].field("sub_op")->text, "GET_GLOBAL");
  EXPECT_EQ(field(p[8], "data0"), 0xabcdu);
}

TEST_P(RoundTrip, AqlPackets) {
  std::vector<uint32_t> w;
  AqlEncoder e(t(), w);
  AqlDispatch d;
  d.kernel_object = 0x7000u;
  d.kernarg_addr = 0x8000u;
  d.groups = {3u, 2u, 1u};
  d.local = {64u, 4u, 1u};
  d.group_segment_size = 512;
  e.dispatch(d);
  const Sym deps[] = {0x100u, 0x200u};
  e.barrier_and(deps, 0x300u);
  e.pm4_ib(0x9000u, 40);
  const auto p = decode_aql(w, t());
  EXPECT_EQ(ops(p), (std::vector<std::string>{"KERNEL_DISPATCH", "BARRIER_AND", "PM4_IB"}));
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(field(p[0], "workgroup_size_x"), 64u);
  EXPECT_EQ(field(p[0], "workgroup_size_y"), 4u);
  EXPECT_EQ(field(p[0], "grid_size_x"), 192u);
  EXPECT_EQ(field(p[0], "grid_size_y"), 8u);
  EXPECT_EQ(field(p[0], "kernarg_address"), 0x8000u);
  EXPECT_EQ(p[0].field("release_fence_scope")->text, "SYSTEM");
  EXPECT_EQ(field(p[1], "dep_signal1"), 0x200u);
  EXPECT_EQ(field(p[1], "completion_signal"), 0x300u);
  EXPECT_EQ(field(p[2], "ib_base"), 0x9000u);
  EXPECT_EQ(field(p[2], "ib_size"), 40u);
  // The IB packet inside the vendor packet is itself a valid PM4 INDIRECT_BUFFER.
  const auto inner = decode_pm4(std::span<const uint32_t>(w).subspan(33, 4), t());
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(inner[0].op, "INDIRECT_BUFFER");
}

// Symbolic operands: encode with variables, patch them in, and compare with the constant encoding.
TEST_P(RoundTrip, SymbolicOperandsPatchToTheConstantEncoding) {
  const std::vector<uint64_t> vars = {0x7f0011223300ull, 41, 0x7f00aabb0000ull, 16, 3, 0x7f00cc000000ull};
  const Var addr{0}, value{1}, kernarg{2}, dimx{3}, localx{4}, code{5};
  KernelInfo k;
  k.wave32 = t().wave32;
  auto encode = [&](bool symbolic, std::vector<uint32_t>& w, PatchSink* sink) {
    auto S = [&](Var v, int64_t off = 0) { return symbolic ? Sym(v, off) : Sym(vars[v.id] + off); };
    Pm4Encoder p(t(), w, sink);
    p.wait(S(addr), S(value));
    p.signal(S(addr, 8), S(value, 1));
    DispatchArgs a;
    a.code_addr = S(code);
    a.kernarg_addr = S(kernarg);
    a.groups = {S(dimx), 1u, 1u};
    a.local = {S(localx), 1u, 1u};
    p.exec(k, a);
    SdmaEncoder s(t(), w, sink);
    s.copy(S(addr), S(kernarg), 100);
    s.timestamp(S(addr, 8));
    AqlEncoder q(t(), w, sink);
    AqlDispatch d;
    d.kernel_object = S(code);
    d.kernarg_addr = S(kernarg);
    d.groups = {S(dimx), 1u, 1u};
    d.local = {1u, S(localx), 1u};
    q.dispatch(d);
  };
  std::vector<uint32_t> want, got;
  encode(false, want, nullptr);
  RecordingSink sink;
  encode(true, got, &sink);
  EXPECT_FALSE(sink.entries.empty());
  EXPECT_NE(got, want);
  sink.apply(got, vars);
  EXPECT_EQ(got, want);
}

TEST_P(RoundTrip, SymbolicOperandWithoutSinkIsAnError) {
  std::vector<uint32_t> w;
  EXPECT_THROW(Pm4Encoder(t(), w).signal(Sym(Var{0}), 1u), InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(AllTargets, RoundTrip,
                         ::testing::Values("gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201"));

TEST(Target, UnknownTargetListsTheKnownOnes) {
  try {
    (void)Target::from_gfx("gfx906");
    FAIL() << "no error";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("gfx906"), std::string::npos) << m;
    EXPECT_NE(m.find("gfx942"), std::string::npos) << m;
    EXPECT_NE(m.find("gfx1201"), std::string::npos) << m;
  }
}

TEST(Target, PerGenerationTablesDiffer) {
  const Target& mi300 = Target::from_gfx("gfx942");
  const Target& navi = Target::from_gfx("gfx1100");
  const Target& rdna4 = Target::from_gfx("gfx1201");
  EXPECT_EQ(mi300.cregs.rsrc3, 0x2e2du);
  EXPECT_EQ(navi.cregs.rsrc3, 0x2e28u);
  EXPECT_EQ(mi300.sdma->max_copy_bytes, 4u << 20);
  EXPECT_EQ(navi.sdma->max_copy_bytes, 1u << 30);
  EXPECT_EQ(mi300.pm4->acquire_mem->words, 7u);
  EXPECT_EQ(navi.pm4->acquire_mem->words, 8u);
  EXPECT_TRUE(mi300.aql_compute);
  EXPECT_FALSE(mi300.wave32);
  EXPECT_NE(navi.regs, rdna4.regs);
}

TEST(KernelInfo, RejectsUserSgprsWeDoNotSetUp) {
  KernelDescriptor kd;
  kd.kernel_code_properties = KernelDescriptor::kPrivateSegmentBuffer;
  EXPECT_THROW(KernelInfo::from_descriptor(kd, Target::from_gfx("gfx1100")), InvalidArgument);
  kd.kernel_code_properties = 0;
  kd.group_segment_fixed_size = 1u << 20;
  EXPECT_THROW(KernelInfo::from_descriptor(kd, Target::from_gfx("gfx1100")), InvalidArgument);
  std::vector<std::byte> short_kd(10);
  EXPECT_THROW(KernelDescriptor::parse(short_kd), InvalidArgument);
}

}  // namespace
}  // namespace hcq::amd
