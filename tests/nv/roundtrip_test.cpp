// Encode -> decode for every operation on every architecture, symbolic operands patched to the constant encoding,
// and QMD V3 / V5 built and read back through the same roles the simulator uses.
#include <gtest/gtest.h>

#include <numeric>

#include "hcq/error.hpp"
#include "nv/decode.hpp"
#include "nv/encode.hpp"
#include "nv/facts/methods.hpp"
#include "nv/facts/qmd.hpp"

namespace hcq::nv {
namespace {

class NvRoundTrip : public ::testing::TestWithParam<uint32_t> {
 protected:
  const NvArchInfo& arch() const { return *find_arch_by_sm(GetParam()); }
  std::vector<DecodedEntry> decode(const std::vector<uint32_t>& w) const { return decode_pushbuffer(w, arch()); }
};

std::vector<std::string> ops(const std::vector<DecodedEntry>& d) {
  std::vector<std::string> out;
  for (const DecodedEntry& e : d) {
    EXPECT_TRUE(e.ok()) << e.op << ": " << e.error;
    out.push_back(e.op);
  }
  return out;
}

uint64_t sem_address(const std::vector<DecodedEntry>& d, size_t at) {
  return (d[at].field("OFFSET")->value << 2) | (d[at + 1].field("OFFSET")->value << 32);
}

TEST_P(NvRoundTrip, HostSemaphores) {
  const uint64_t addr = 0x00ab'cdef'1230ull;  // 40 bits: fits Ampere's SEM_ADDR_HI too
  std::vector<uint32_t> w;
  PushbufferEncoder e(arch(), w);
  e.wait(addr, 0x1'2345'6789ull);
  auto d = decode(w);
  EXPECT_EQ(ops(d), (std::vector<std::string>{"SEM_ADDR_LO", "SEM_ADDR_HI", "SEM_PAYLOAD_LO", "SEM_PAYLOAD_HI",
                                              "SEM_EXECUTE"}));
  EXPECT_EQ(sem_address(d, 0), addr);
  EXPECT_EQ(d[2].data | (uint64_t{d[3].data} << 32), 0x1'2345'6789ull);
  EXPECT_EQ(d[4].field("OPERATION")->text, "ACQ_CIRC_GEQ");
  EXPECT_EQ(d[4].field("PAYLOAD_SIZE")->text, "64BIT");
  EXPECT_EQ(d[4].cls, find_class(arch().classes.gpfifo)->prefix);

  w.clear();
  e.signal(addr, 9);
  d = decode(w);
  ASSERT_EQ(d.size(), 6u);
  EXPECT_EQ(d[4].field("OPERATION")->text, "RELEASE");
  EXPECT_EQ(d[4].field("RELEASE_TIMESTAMP")->text, "EN");
  EXPECT_EQ(d[4].field("RELEASE_WFI")->text, "EN");
  EXPECT_EQ(d[5].op, "NON_STALL_INTERRUPT");

  w.clear();
  e.signal(addr, 9, /*timestamp=*/false);
  EXPECT_EQ(decode(w)[4].field("RELEASE_TIMESTAMP")->text, "DIS");

  w.clear();
  e.write(addr, 0x55, false);
  d = decode(w);
  EXPECT_EQ(d[4].field("PAYLOAD_SIZE")->text, "32BIT");
  EXPECT_EQ(d[4].field("OPERATION")->text, "RELEASE");

  w.clear();
  e.poll_bit(addr, 0x10, true);
  e.poll_bit(addr, 0x10, false);
  d = decode(w);
  ASSERT_EQ(d.size(), 10u);
  EXPECT_EQ(d[4].field("OPERATION")->text, "ACQ_AND");
  EXPECT_EQ(d[2].data, 0x10u);
  EXPECT_EQ(d[9].field("OPERATION")->text, "ACQ_NOR");
  EXPECT_EQ(d[7].data, ~0x10u);
  EXPECT_THROW(e.poll_bit(addr, 0x11, true), InvalidArgument);

  w.clear();
  e.set_object(pb::kComputeSubchannel, arch().classes.compute);
  d = decode(w);
  EXPECT_EQ(d[0].op, "SET_OBJECT");
  EXPECT_EQ(d[0].field("NVCLASS")->value, arch().classes.compute);
}

TEST_P(NvRoundTrip, ComputeMethods) {
  std::vector<uint32_t> w;
  PushbufferEncoder e(arch(), w);
  e.memory_barrier();
  e.launch(0x12'3456'7800ull);
  e.compute_setup(0x7293'0000'0000ull, 0x7294'0000'0000ull);
  e.set_local_memory(0x1'0000'0000ull, 0x20000, 0x40);
  const auto d = decode(w);
  EXPECT_EQ(ops(d),
            (std::vector<std::string>{
                "INVALIDATE_SHADER_CACHES_NO_WFI", "SEND_PCAS_A", "SEND_SIGNALING_PCAS2_B",
                "SET_SHADER_LOCAL_MEMORY_WINDOW_A", "SET_SHADER_LOCAL_MEMORY_WINDOW_B",
                "SET_SHADER_SHARED_MEMORY_WINDOW_A", "SET_SHADER_SHARED_MEMORY_WINDOW_B", "SET_SHADER_LOCAL_MEMORY_A",
                "SET_SHADER_LOCAL_MEMORY_B", "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A",
                "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_B", "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_C"}));
  for (const char* f : {"INSTRUCTION", "GLOBAL_DATA", "CONSTANT"}) EXPECT_EQ(d[0].field(f)->text, "TRUE") << f;
  EXPECT_EQ(d[1].field("QMD_ADDRESS_SHIFTED8")->value, 0x12'3456'7800ull >> 8);
  EXPECT_EQ(d[2].field("PCAS_ACTION")->text, "PREFETCH_SCHEDULE");
  EXPECT_EQ(d[3].data, 0x7293u);
  EXPECT_EQ(d[11].field("MAX_SM_COUNT")->value, 0x40u);
  for (const DecodedEntry& x : d) EXPECT_EQ(x.subchannel, pb::kComputeSubchannel);
  EXPECT_THROW(e.launch(0x1234'5600ull + 0x10), InvalidArgument);  // not 256-byte aligned
  EXPECT_THROW(e.launch(uint64_t{1} << 40), InvalidArgument);      // beyond SEND_PCAS_A's reach
}

TEST_P(NvRoundTrip, CopySplitsAtTheEngineLimit) {
  const uint64_t src = 0x20'0000'0000ull, dst = 0x30'0000'0000ull;
  const uint64_t size = 2 * kMaxCopyBytes + 12345;
  std::vector<uint32_t> w;
  PushbufferEncoder e(arch(), w);
  e.copy(dst, src, size);
  const auto d = decode(w);
  ASSERT_EQ(d.size(), 3u * 6u);
  uint64_t total = 0;
  for (size_t piece = 0; piece < 3; ++piece) {
    const DecodedEntry* m = &d[piece * 6];
    EXPECT_EQ(m[0].op, "OFFSET_IN_UPPER");
    const uint64_t in = (m[0].data * (uint64_t{1} << 32)) | m[1].data;
    const uint64_t out = (m[2].data * (uint64_t{1} << 32)) | m[3].data;
    EXPECT_EQ(in, src + total);
    EXPECT_EQ(out, dst + total);
    EXPECT_EQ(m[4].op, "LINE_LENGTH_IN");
    EXPECT_LE(m[4].data, kMaxCopyBytes);
    total += m[4].data;
    EXPECT_EQ(m[5].op, "LAUNCH_DMA");
    EXPECT_EQ(m[5].field("DATA_TRANSFER_TYPE")->text, "NON_PIPELINED");
    EXPECT_EQ(m[5].field("SRC_MEMORY_LAYOUT")->text, "PITCH");
    EXPECT_EQ(m[5].field("DST_MEMORY_LAYOUT")->text, "PITCH");
    EXPECT_EQ(m[5].subchannel, pb::kCopySubchannel);
  }
  EXPECT_EQ(total, size);

  w.clear();
  e.copy(dst, src, 0);
  EXPECT_TRUE(w.empty());

  e.copy_signal(0x10'0000'1000ull, 0x1'0000'0007ull);
  const auto s = decode(w);
  if (!copy_releases_semaphore64(*find_class(arch().classes.copy))) {
    // AMPERE_DMA_COPY_A releases 32-bit semaphores only: the 64-bit signal is the host's release on the channel,
    // after the copy engine goes idle (RELEASE_WFI), with the timestamp and the wake-up interrupt.
    EXPECT_EQ(ops(s), (std::vector<std::string>{"SEM_ADDR_LO", "SEM_ADDR_HI", "SEM_PAYLOAD_LO", "SEM_PAYLOAD_HI",
                                                "SEM_EXECUTE", "NON_STALL_INTERRUPT"}));
    EXPECT_EQ(s[0].data, 0x1000u);
    EXPECT_EQ(s[1].data, 0x10u);
    EXPECT_EQ(s[2].data, 7u);
    EXPECT_EQ(s[3].data, 1u);
    EXPECT_EQ(s[4].field("OPERATION")->text, "RELEASE");
    EXPECT_EQ(s[4].field("RELEASE_WFI")->text, "EN");
    EXPECT_EQ(s[4].field("PAYLOAD_SIZE")->text, "64BIT");
    return;
  }
  EXPECT_EQ(ops(s), (std::vector<std::string>{"SET_SEMAPHORE_A", "SET_SEMAPHORE_B", "SET_SEMAPHORE_PAYLOAD",
                                              "SET_SEMAPHORE_PAYLOAD_UPPER", "LAUNCH_DMA"}));
  EXPECT_EQ(s[0].data, 0x10u);
  EXPECT_EQ(s[1].data, 0x1000u);
  EXPECT_EQ(s[2].data, 7u);
  EXPECT_EQ(s[3].data, 1u);
  EXPECT_EQ(s[4].field("SEMAPHORE_TYPE")->text, "RELEASE_FOUR_WORD_SEMAPHORE");
  EXPECT_EQ(s[4].field("FLUSH_ENABLE")->text, "TRUE");
  EXPECT_EQ(s[4].field("DATA_TRANSFER_TYPE")->text, "NONE");
}

// Every operation with symbolic operands, patched through the sink, equals the constant encoding.
TEST_P(NvRoundTrip, SymbolsPatchToTheConstantEncoding) {
  const std::vector<uint64_t> vars{0x00ab'cdef'1230ull, 0x1'2345'6789ull, 0x12'3456'7800ull, 0x20'0000'0040ull,
                                   0x30'0000'0080ull};
  auto encode_all = [&](PushbufferEncoder& e, auto sym) {
    e.wait(sym(0), sym(1));
    e.signal(sym(0), sym(1));
    e.timestamp(sym(0));
    e.write(sym(0), sym(1), true);
    e.launch(sym(2));
    e.copy(sym(4), sym(3), kMaxCopyBytes + 64);
    e.copy_signal(sym(0), sym(1));
  };
  std::vector<uint32_t> constant, symbolic;
  PushbufferEncoder ec(arch(), constant);
  encode_all(ec, [&](uint16_t i) { return Sym(vars[i]); });
  RecordingSink sink;
  PushbufferEncoder es(arch(), symbolic, &sink);
  encode_all(es, [&](uint16_t i) { return Sym(Var{i}); });
  ASSERT_EQ(symbolic.size(), constant.size());
  EXPECT_NE(symbolic, constant);
  EXPECT_FALSE(sink.entries.empty());
  sink.apply(symbolic, vars);
  EXPECT_EQ(symbolic, constant);

  std::vector<uint32_t> w;
  PushbufferEncoder nosink(arch(), w);
  EXPECT_THROW(nosink.wait(Sym(Var{0}), 1), InvalidArgument);
}

TEST_P(NvRoundTrip, QmdProgramLaunchReleaseChain) {
  QmdBuilder b(arch());
  const qmd::QmdLayout& l = b.layout();
  EXPECT_EQ(l.major_version, arch().qmd_version);
  const qmd::QmdRoles& r = l.roles;
  QmdProgram p;
  p.code_address = 0x7f'1234'5600ull;
  p.code_size = 0x1280;
  p.registers = 40;
  p.shared_bytes = 0x2000;
  p.local_bytes_per_thread = 0x238;
  p.barriers = 2;
  p.banks[3] = {0x7f'0000'1000ull, 0x104};
  std::vector<uint32_t> q(l.size_words);
  b.program(q, p);
  const uint64_t cbank0 = 0x10'0860'0000ull, sig = 0x10'0850'0fa0ull, next = 0x10'0860'0c00ull;
  b.launch(q, cbank0, 0x170, {Sym(7u), Sym(5u), Sym(3u)}, {Sym(32u), Sym(4u), Sym(2u)});
  ASSERT_TRUE(b.release(q, 0, sig, 0x1'0000'0005ull));
  ASSERT_TRUE(b.release(q, 1, sig + 16, 6));
  EXPECT_FALSE(b.release(q, 0, sig, 1)) << "slot 0 is taken";
  EXPECT_EQ(b.free_release_slot(q), -1);
  b.chain(q, next);

  auto get = [&](const BitField* f) { return qmd::get(q, *f); };
  auto address = [&](const BitField* lo, const BitField* hi, uint8_t shift) {
    return ((get(hi) << 32) | get(lo)) << shift;
  };
  EXPECT_EQ(qmd::detect_version(q), l.major_version);
  EXPECT_EQ(get(r.major_version), l.major_version);
  EXPECT_EQ(address(r.program_address_lower, r.program_address_upper, r.program_address_shift), p.code_address);
  EXPECT_EQ(get(r.program_prefetch_size), p.code_size >> 8);
  EXPECT_EQ(get(r.register_count), 40u);
  EXPECT_EQ(get(r.barrier_count), 2u);
  EXPECT_EQ(get(r.shared_memory_size) << r.shared_memory_shift, 0x2000u + 1024u);
  EXPECT_EQ(get(r.min_sm_config_shared_mem_size), 32u / 4 + 1);
  EXPECT_EQ(get(r.max_sm_config_shared_mem_size), arch().shared_carveouts_kib.back() / 4u + 1);
  EXPECT_EQ(get(r.shader_local_memory_high_size) << r.local_memory_shift, 0x240u);
  EXPECT_EQ(get(r.sass_version), arch().sass_version());
  EXPECT_EQ(address(r.cbuf[0].address_lower, r.cbuf[0].address_upper, r.cbuf_address_shift), cbank0);
  EXPECT_EQ(get(r.cbuf[0].size_shifted4), 0x17u);
  EXPECT_EQ(get(r.cbuf[0].valid), 1u);
  EXPECT_EQ(address(r.cbuf[3].address_lower, r.cbuf[3].address_upper, r.cbuf_address_shift), 0x7f'0000'1000ull);
  EXPECT_EQ(get(r.cbuf[3].size_shifted4), 0x11u);
  EXPECT_EQ(get(r.cbuf[3].valid), 1u);
  EXPECT_EQ(get(r.cbuf[1].valid), 0u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(get(r.grid[i]), (std::array<uint64_t, 3>{7, 5, 3}[i]));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(get(r.block[i]), (std::array<uint64_t, 3>{32, 4, 2}[i]));
  const qmd::ReleaseRoles& r0 = r.release[0];
  EXPECT_EQ(address(r0.address_lower, r0.address_upper, 0), sig);
  EXPECT_EQ((get(r0.payload_upper) << 32) | get(r0.payload_lower), 0x1'0000'0005ull);
  EXPECT_EQ(get(r0.enable), 1u);
  EXPECT_EQ(get(r0.payload64b), 1u);
  EXPECT_EQ(get(r0.structure_size), qmd::kStructureFourWords);
  EXPECT_EQ(address(r.release[1].address_lower, r.release[1].address_upper, 0), sig + 16);
  EXPECT_EQ(get(r.dependent_qmd0_pointer) << 8, next);
  EXPECT_EQ(get(r.dependent_qmd0_enable), 1u);
  EXPECT_EQ(get(r.dependent_qmd0_action), qmd::kDependentActionSchedule);
  if (r.qmd_type) {
    EXPECT_EQ(get(r.qmd_type), qmd::kQmdTypeGridCta);
  }

  // The decoder names the same values.
  const DecodedEntry d = decode_qmd(q, l.major_version);
  EXPECT_TRUE(d.ok()) << d.error;
  EXPECT_EQ(d.field(r.grid[0]->name)->value, 7u);
  EXPECT_EQ(d.field(r0.enable->name)->text, "TRUE");
  EXPECT_EQ(d.field(r.dependent_qmd0_action->name)->text, "QMD_SCHEDULE");
}

TEST_P(NvRoundTrip, QmdSymbolsPatchToTheConstantBuild) {
  QmdBuilder b(arch());
  const std::vector<uint64_t> vars{0x10'0860'0000ull, 9, 17, 64, 0x10'0850'0fa0ull, 0x2'0000'0001ull,
                                   0x10'0860'0d00ull};
  QmdProgram p;
  p.code_address = 0x7f'1234'5600ull;
  std::vector<uint32_t> c(b.layout().size_words), s(b.layout().size_words);
  b.program(c, p);
  b.program(s, p);
  b.launch(c, vars[0], 0x160, {Sym(vars[1]), Sym(vars[2]), Sym(1u)}, {Sym(vars[3]), Sym(1u), Sym(1u)});
  b.release(c, 0, vars[4], vars[5]);
  b.chain(c, vars[6]);
  RecordingSink sink;
  b.launch(s, Var{0}, 0x160, {Sym(Var{1}), Sym(Var{2}), Sym(1u)}, {Sym(Var{3}), Sym(1u), Sym(1u)}, &sink);
  b.release(s, 0, Var{4}, Var{5}, &sink);
  b.chain(s, Var{6}, &sink);
  EXPECT_NE(s, c);
  sink.apply(s, vars);
  EXPECT_EQ(s, c);
}

TEST_P(NvRoundTrip, QmdRejectsWhatTheHardwareCannotTake) {
  QmdBuilder b(arch());
  std::vector<uint32_t> q(b.layout().size_words);
  QmdProgram p;
  p.code_address = 0x1000;
  p.registers = arch().max_registers_per_thread + 1;
  EXPECT_THROW(b.program(q, p), InvalidArgument);
  p.registers = 8;
  p.shared_bytes = arch().max_shared_per_block + 1;
  EXPECT_THROW(b.program(q, p), InvalidArgument);
  p.shared_bytes = 0;
  p.code_address = 0x1010;
  EXPECT_THROW(b.program(q, p), InvalidArgument);
  std::vector<uint32_t> short_qmd(b.layout().size_words - 1);
  p.code_address = 0x1000;
  EXPECT_THROW(b.program(short_qmd, p), InvalidArgument);
  b.program(q, p);
  EXPECT_THROW(b.launch(q, 0x1000, 0x160, {Sym(0u), Sym(1u), Sym(1u)}, {Sym(1u), Sym(1u), Sym(1u)}), InvalidArgument);
  EXPECT_THROW(b.launch(q, 0x1000, 0x160, {Sym(1u), Sym(1u << 16), Sym(1u)}, {Sym(1u), Sym(1u), Sym(1u)}),
               InvalidArgument)
      << "CTA raster height is 16 bits";
  EXPECT_THROW(b.launch(q, 0x1000, 0x160, {Sym(1u), Sym(1u), Sym(1u)}, {Sym(1024u), Sym(2u), Sym(1u)}), InvalidArgument)
      << "2048 threads per block";
  EXPECT_THROW(b.chain(q, 0x1080), InvalidArgument);
  EXPECT_THROW(b.release(q, 2, 0x1000, 1), InvalidArgument);
}

std::string sm_name(const ::testing::TestParamInfo<uint32_t>& info) { return "sm_" + std::to_string(info.param); }

INSTANTIATE_TEST_SUITE_P(Arch, NvRoundTrip, ::testing::Values(80u, 86u, 89u, 90u, 100u, 120u), sm_name);

TEST(NvGpfifo, EntryRoundTripAndLimits) {
  const uint64_t e = gpfifo_entry(0xab'1234'5678ull, 0x1234, true);
  const DecodedEntry d = decode_gpfifo_entry(e);
  EXPECT_TRUE(d.ok());
  EXPECT_EQ(d.op, "GP_ENTRY");
  EXPECT_EQ(d.field("ADDRESS")->value, 0xab'1234'5678ull);
  EXPECT_EQ(d.field("LENGTH")->value, 0x1234u);
  EXPECT_EQ(d.field("SYNC")->text, "WAIT");
  EXPECT_EQ(d.field("LEVEL")->text, "SUBROUTINE");
  EXPECT_THROW(gpfifo_entry(0x1002, 1), InvalidArgument);
  EXPECT_THROW(gpfifo_entry(uint64_t{1} << 40, 1), InvalidArgument);
  EXPECT_THROW(gpfifo_entry(0x1000, 0), InvalidArgument);
  EXPECT_THROW(gpfifo_entry(0x1000, 1u << 21), InvalidArgument);
  const auto ring =
      decode_gpfifo(std::vector<uint32_t>{static_cast<uint32_t>(e), static_cast<uint32_t>(e >> 32), 0, 0x0});
  ASSERT_EQ(ring.size(), 2u);
  EXPECT_EQ(ring[1].op, "GP_CONTROL");
  EXPECT_EQ(ring[1].field("OPCODE")->text, "NOP");
  EXPECT_EQ(ring[1].offset, 8u);
}

}  // namespace
}  // namespace hcq::nv
