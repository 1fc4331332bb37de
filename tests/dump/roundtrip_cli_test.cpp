// Round trip through the tool: every operation of the AMD and NV encoders, on every target and architecture, written
// to a file and decoded by `hcq-dump decode --json`, comes back as the same operations with the same operands, and
// the tool prints every field and name the decoder library gives (it drops nothing, renames nothing). The libraries'
// own round trips (tests/amd, tests/nv) check the fields in depth; this adds the file, the CLI, GPFIFO entries and
// QMDs of both layouts as a user meets them.
#include <gtest/gtest.h>

#include "amd/decode.hpp"
#include "amd/encode.hpp"
#include "cli.hpp"
#include "nv/decode.hpp"
#include "nv/encode.hpp"
#include "nv/facts/methods.hpp"
#include "nv/facts/qmd.hpp"

namespace hcq::dump {
namespace {

using testing::Json;

// The tool's JSON for `words` equals what the decoder library returns for them, packet by packet, field by field.
template <class Decoded>
std::vector<Json> decode_and_compare(const std::string& format, const std::string& arch,
                                     const std::vector<uint32_t>& words, const std::vector<Decoded>& lib) {
  const std::vector<Json> got =
      testing::decode_json(format, arch, testing::write_words(format + "-" + arch + ".bin", words));
  EXPECT_EQ(got.size(), lib.size()) << format << " " << arch;
  for (size_t i = 0; i < std::min(got.size(), lib.size()); ++i) {
    const std::string ctx = format + " " + arch + " packet " + std::to_string(i) + " " + lib[i].op;
    EXPECT_EQ(got[i]["op"].str(), lib[i].op) << ctx;
    EXPECT_EQ(got[i]["offset"].u64(), lib[i].offset) << ctx;
    EXPECT_EQ(got[i]["words"].u64(), lib[i].words) << ctx;
    EXPECT_FALSE(got[i].has("error")) << ctx << ": " << got[i]["error"].str();
    EXPECT_EQ(got[i]["fields"].members().size(), lib[i].fields.size()) << ctx;
    for (const auto& f : lib[i].fields) {
      const Json* v = got[i]["fields"].find(f.name);
      EXPECT_NE(v, nullptr) << ctx << ": no " << f.name;
      if (!v) continue;
      EXPECT_EQ(v->u64(), f.value) << ctx << ": " << f.name;
      const Json* n = got[i]["names"].find(f.name);
      EXPECT_EQ(n ? n->str() : "", f.text) << ctx << ": name of " << f.name;
    }
  }
  return got;
}

std::vector<std::string> ops(const std::vector<Json>& got) {
  std::vector<std::string> out;
  for (const Json& p : got) out.push_back(p["op"].str());
  return out;
}

uint64_t field(const Json& p, const char* name) {
  const Json* f = p["fields"].find(name);
  EXPECT_NE(f, nullptr) << p["op"].str() << " lacks " << name;
  return f ? f->u64() : ~uint64_t{0};
}

class DumpRoundTripAmd : public ::testing::TestWithParam<std::string> {
 protected:
  const amd::Target& t() const { return amd::Target::from_gfx(GetParam()); }
};

TEST_P(DumpRoundTripAmd, Pm4EveryOperation) {
  amd::KernelDescriptor kd;
  kd.compute_pgm_rsrc1 = 0x40af0040;
  kd.kernel_code_properties =
      amd::KernelDescriptor::kKernargSegmentPtr | (t().wave32 ? amd::KernelDescriptor::kWavefrontSize32 : 0);
  amd::DispatchArgs a;
  a.code_addr = 0x7f0000100000ull;
  a.kernarg_addr = 0x7f0000200000ull;
  a.groups = {8u, 1u, 1u};
  a.local = {32u, 1u, 1u};
  std::vector<uint32_t> w;
  amd::Pm4Encoder e(t(), w);
  e.wait(0x5000u, 41u);
  e.memory_barrier();
  e.exec(amd::KernelInfo::from_descriptor(kd, t()), a);
  e.signal(0x5000u, 42u);
  e.signal_event(0x6000u, 3);
  e.timestamp(0x5008u);
  e.write(0x7000u, 0x99u, false);
  e.poll_bits(0x7100u, 0x4, 0x4);
  e.indirect_buffer(0x80000u, 16);
  e.nop(2);
  const std::vector<Json> got = decode_and_compare("pm4", GetParam(), w, amd::decode_pm4(w, t()));
  const std::vector<std::string> names = ops(got);
  ASSERT_GE(names.size(), 10u);
  EXPECT_EQ(names.front(), "WAIT_REG_MEM");
  EXPECT_EQ(field(got.front(), "reference"), 41u);
  EXPECT_NE(std::find(names.begin(), names.end(), "DISPATCH_DIRECT"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "SET_SH_REG"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "ACQUIRE_MEM"), names.end());
  EXPECT_EQ(names[names.size() - 2], "INDIRECT_BUFFER");
  EXPECT_EQ(field(got[got.size() - 2], "ib_size"), 16u);
  EXPECT_EQ(names.back(), "NOP");
  for (const Json& p : got) {
    if (p["op"].str() == "DISPATCH_DIRECT") {
      EXPECT_EQ(field(p, "dim_x"), 8u);
    }
  }
  size_t releases = 0;
  for (const Json& p : got) releases += p["op"].str() == "RELEASE_MEM";
  EXPECT_GE(releases, 3u) << "signal, signal_event and timestamp each end in a RELEASE_MEM";
}

TEST_P(DumpRoundTripAmd, SdmaEveryOperation) {
  std::vector<uint32_t> w;
  amd::SdmaEncoder e(t(), w);
  e.wait(0x5000u, 9u);
  e.copy(0x300000u, 0x200000u, 4096);
  e.fence(0x5000u, 10u);
  e.signal_event(0x6000u, 2);
  e.trap(7);
  e.timestamp(0x5008u);
  e.write(0x7000u, 0x1234567890ull, true);
  e.nop(2);
  const std::vector<Json> got = decode_and_compare("sdma", GetParam(), w, amd::decode_sdma(w, t()));
  EXPECT_EQ(ops(got), (std::vector<std::string>{"POLL_REGMEM", "COPY_LINEAR", "FENCE", "FENCE", "TRAP", "TRAP",
                                                "TIMESTAMP", "WRITE_LINEAR", "NOP"}));
  ASSERT_EQ(got.size(), 9u);
  EXPECT_EQ(field(got[1], "byte_count"), 4096u);
  EXPECT_EQ(field(got[1], "dst_addr"), 0x300000u);
  EXPECT_EQ(field(got[2], "data"), 10u);
  EXPECT_EQ(field(got[5], "int_context"), 7u);
}

TEST_P(DumpRoundTripAmd, AqlEveryOperation) {
  std::vector<uint32_t> w;
  amd::AqlEncoder e(t(), w);
  amd::AqlDispatch d;
  d.kernel_object = 0x9000u;
  d.kernarg_addr = 0xa000u;
  d.groups = {2u, 2u, 2u};
  d.local = {16u, 1u, 1u};
  e.dispatch(d);
  const Sym deps[] = {0x10u};
  e.barrier_and(deps, 0x20u);
  e.pm4_ib(0xb000u, 8);
  const std::vector<Json> got = decode_and_compare("aql", GetParam(), w, amd::decode_aql(w, t()));
  EXPECT_EQ(ops(got), (std::vector<std::string>{"KERNEL_DISPATCH", "BARRIER_AND", "PM4_IB"}));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(field(got[0], "grid_size_z"), 2u);
  EXPECT_EQ(field(got[0], "kernel_object"), 0x9000u);
  EXPECT_EQ(field(got[1], "dep_signal0"), 0x10u);
  EXPECT_EQ(field(got[2], "ib_base"), 0xb000u);
}

std::vector<std::string> amd_targets() {
  std::vector<std::string> out;
  for (const amd::Target& t : amd::Target::known()) out.emplace_back(t.name);
  return out;
}
INSTANTIATE_TEST_SUITE_P(AllTargets, DumpRoundTripAmd, ::testing::ValuesIn(amd_targets()),
                         [](const auto& info) { return info.param; });

class DumpRoundTripNv : public ::testing::TestWithParam<uint32_t> {
 protected:
  const nv::NvArchInfo& arch() const { return *nv::find_arch_by_sm(GetParam()); }
  std::string name() const { return "sm_" + std::to_string(GetParam()); }
};

TEST_P(DumpRoundTripNv, PushbufferEveryOperation) {
  std::vector<uint32_t> w;
  nv::PushbufferEncoder e(arch(), w);
  e.wait(0x10'0000'1000ull, 3u);
  e.memory_barrier();
  e.launch(0x10'0000'2000ull);
  e.signal(0x10'0000'1000ull, 4u);
  e.timestamp(0x10'0000'1008ull);
  e.write(0x10'0000'3000ull, 5u, true);
  e.poll_bit(0x10'0000'3000ull, 0x1, true);
  e.non_stall_interrupt();
  e.copy(0x20'0000'0000ull, 0x21'0000'0000ull, 8);
  e.copy_signal(0x10'0000'1000ull, 6u);
  const std::vector<Json> got = decode_and_compare("nv-push", name(), w, nv::decode_pushbuffer(w, arch()));
  const std::vector<std::string> names = ops(got);
  for (const char* op : {"SEM_EXECUTE", "SEND_PCAS_A", "SEND_SIGNALING_PCAS2_B", "LAUNCH_DMA", "NON_STALL_INTERRUPT",
                         "OFFSET_IN_UPPER", "LINE_LENGTH_IN"})
    EXPECT_NE(std::find(names.begin(), names.end(), op), names.end()) << op;
  // The copy engine's own semaphore, where it has a 64-bit one (not AMPERE_DMA_COPY_A: the host releases it there).
  const bool copy_semaphore64 = nv::copy_releases_semaphore64(*nv::find_class(arch().classes.copy));
  EXPECT_EQ(std::find(names.begin(), names.end(), "SET_SEMAPHORE_A") != names.end(), copy_semaphore64);
  for (const Json& p : got) {
    EXPECT_FALSE(p["class"].str().empty()) << p["op"].str();
    if (p["op"].str() == "LINE_LENGTH_IN") {
      EXPECT_EQ(p["data"].u64(), 8u);
    }
  }
}

TEST_P(DumpRoundTripNv, GpfifoEntriesAndQmd) {
  const uint64_t entry = nv::gpfifo_entry(0x10'0000'4000ull, 24);
  const std::vector<uint32_t> ring = {static_cast<uint32_t>(entry), static_cast<uint32_t>(entry >> 32),
                                      static_cast<uint32_t>(entry), static_cast<uint32_t>(entry >> 32)};
  const std::vector<Json> gp = decode_and_compare("nv-gpfifo", name(), ring, nv::decode_gpfifo(ring));
  ASSERT_EQ(gp.size(), 2u);
  EXPECT_EQ(field(gp[1], "ADDRESS"), 0x10'0000'4000u);
  EXPECT_EQ(field(gp[1], "LENGTH"), 24u);

  nv::QmdBuilder b(arch());
  std::vector<uint32_t> q(b.layout().size_words);
  nv::QmdProgram p;
  p.code_address = 0x7f'0000'0000ull;
  p.code_size = 0x400;
  p.registers = 32;
  b.program(q, p);
  b.launch(q, 0x10'0000'8000ull, 0x200, {Sym(3u), Sym(1u), Sym(1u)}, {Sym(64u), Sym(1u), Sym(1u)});
  std::vector<nv::DecodedEntry> lib{nv::decode_qmd(q, arch().qmd_version)};
  lib[0].offset = 0;
  const std::vector<Json> qd = decode_and_compare("nv-qmd", name(), q, lib);
  ASSERT_EQ(qd.size(), 1u);
  EXPECT_EQ(qd[0]["op"].str(), arch().qmd_version == 3 ? "QMD_V03_00" : "QMD_V05_00");
  EXPECT_EQ(qd[0]["words"].u64(), b.layout().size_words);
}

INSTANTIATE_TEST_SUITE_P(AllArchitectures, DumpRoundTripNv, ::testing::Values(80u, 86u, 89u, 90u, 100u, 120u),
                         [](const auto& info) { return "sm_" + std::to_string(info.param); });

}  // namespace
}  // namespace hcq::dump
