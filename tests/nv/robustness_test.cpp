// Untrusted input into every NV decoder: seeded random words and hand-made malformed streams never crash, every
// input dword is accounted for, and garbage is reported as such while decoding resynchronises.
#include <gtest/gtest.h>

#include <random>

#include "nv/decode.hpp"
#include "nv/facts/methods.hpp"
#include "nv/facts/qmd.hpp"

namespace hcq::nv {
namespace {

// Entries of a pushbuffer decode cover the input exactly once, in order.
void expect_covers(const std::vector<DecodedEntry>& d, size_t nwords) {
  size_t next = 0;
  for (const DecodedEntry& e : d) {
    ASSERT_GE(e.words, 1u);
    // A header's first method starts at the header; later methods of the same header start at their data word.
    ASSERT_EQ(e.offset, next * 4) << e.op;
    next += e.words;
  }
  EXPECT_EQ(next, nwords);
}

TEST(NvDecodeRobustness, RandomWordsIntoEveryDecoder) {
  std::mt19937 rng(20261130);
  for (const NvArchInfo& arch : nv_arch_table()) {
    for (int round = 0; round < 300; ++round) {
      std::vector<uint32_t> w(rng() % 200);
      for (uint32_t& x : w) {
        // Mix raw noise with plausible headers so that the method tables are exercised, not only the error paths.
        const uint32_t r = rng();
        x = (r & 3) == 0 ? pb::header(static_cast<SecOp>(rng() % 8), rng() % 8, (rng() % 0x2000) & ~3u, rng() % 6)
                         : rng();
      }
      const auto d = decode_pushbuffer(w, arch);
      expect_covers(d, w.size());
      const auto g = decode_gpfifo(w);
      EXPECT_EQ(g.size(), (w.size() + 1) / 2);
      for (uint32_t v : {3u, 5u, 4u}) {
        const DecodedEntry q = decode_qmd(w, v);
        if (v == 4) {
          EXPECT_FALSE(q.ok());
        }
        if (w.size() < 64) {
          EXPECT_FALSE(q.ok());
        }
      }
      (void)qmd::detect_version(w);
    }
  }
}

TEST(NvDecodeRobustness, MalformedStreamsAreReportedAndSkipped) {
  const NvArchInfo& a = arch_info(NvArch::ampere);
  const uint32_t release = pb::header(SecOp::inc_method, 0, 0x20, 1);  // NON_STALL_INTERRUPT
  // clang-format off: one method (header and payload) per row
  std::vector<uint32_t> w{
      pb::header(SecOp::inc_method, 1, 0x2b4, 0),  // count 0
      pb::header(SecOp::reserved6, 0, 0, 1),       // reserved SEC_OP
      pb::header(SecOp::inc_method, 1, 0x1ffc, 1), 7,  // unknown compute method
      pb::header(SecOp::inc_method, 2, 0x300, 1), 7,   // subchannel 2 unbound
      pb::header(SecOp::inc_method, 3, 0x000, 1), 0xbeef,  // SET_OBJECT of a class hcq has no table for
      0,                                                 // DMA NOP
      release, 0,                                        // a good method after all of it
      pb::header(SecOp::inc_method, 0, 0x5c, 5), 1, 2,   // truncated: wants 5, has 2
  };
  // clang-format on
  const auto d = decode_pushbuffer(w, a);
  expect_covers(d, w.size());
  ASSERT_EQ(d.size(), 8u);
  EXPECT_NE(d[0].error.find("count of 0"), std::string::npos) << d[0].error;
  EXPECT_NE(d[1].error.find("reserved"), std::string::npos);
  EXPECT_NE(d[2].error.find("unknown method"), std::string::npos) << d[2].error;
  EXPECT_EQ(d[2].cls, "NVC7C0");  // SIM-NV:ampere's sm_86: AMPERE_COMPUTE_B
  EXPECT_NE(d[3].error.find("no class bound"), std::string::npos) << d[3].error;
  EXPECT_EQ(d[4].op, "SET_OBJECT");
  EXPECT_FALSE(d[4].ok());
  EXPECT_EQ(d[5].op, "NOP");
  EXPECT_TRUE(d[5].ok());
  EXPECT_EQ(d[6].op, "NON_STALL_INTERRUPT");
  EXPECT_TRUE(d[6].ok());
  EXPECT_NE(d[7].error.find("wants 5"), std::string::npos) << d[7].error;
}

TEST(NvDecodeRobustness, SetObjectRebindsAndImmediateAndNonIncDecode) {
  const NvArchInfo& h = arch_info(NvArch::hopper);
  // clang-format off: one method (header and payload) per row
  std::vector<uint32_t> w{
      pb::header(SecOp::inc_method, 2, 0x000, 1), h.classes.copy,             // bind copy to subchannel 2
      pb::header(SecOp::non_inc_method, 2, 0x418, 3), 1, 2, 3,                // LINE_LENGTH_IN three times
      pb::header(SecOp::one_inc, 2, 0x404, 3), 10, 11, 12,                    // OFFSET_IN_LOWER, then UPPER x2
      pb::header(SecOp::immd_data_method, 1, 0x1698, 0x1011),                 // INVALIDATE_SHADER_CACHES_NO_WFI
  };
  // clang-format on
  SubchannelMap map = SubchannelMap::for_arch(h);
  const auto d = decode_pushbuffer(w, map);
  expect_covers(d, w.size());
  EXPECT_EQ(map.class_id[2], h.classes.copy);
  ASSERT_EQ(d.size(), 8u);
  for (const DecodedEntry& e : d) EXPECT_TRUE(e.ok()) << e.op << ": " << e.error;
  EXPECT_EQ(d[1].op, "LINE_LENGTH_IN");
  EXPECT_EQ(d[3].op, "LINE_LENGTH_IN");
  EXPECT_EQ(d[3].data, 3u);
  EXPECT_EQ(d[4].op, "OFFSET_IN_LOWER");
  EXPECT_EQ(d[5].op, "OFFSET_OUT_UPPER");
  EXPECT_EQ(d[6].op, "OFFSET_OUT_UPPER");
  EXPECT_EQ(d[7].op, "INVALIDATE_SHADER_CACHES_NO_WFI");
  EXPECT_EQ(d[7].sec_op, "IMMD_DATA_METHOD");
  EXPECT_EQ(d[7].field("GLOBAL_DATA")->text, "TRUE");
}

TEST(NvDecodeRobustness, QmdOfTheWrongShape) {
  std::vector<uint32_t> q(64, 0xffffffffu);
  EXPECT_FALSE(decode_qmd(q, 5).ok()) << "a V5 QMD is 96 dwords";
  const DecodedEntry v3 = decode_qmd(q, 3);
  EXPECT_FALSE(v3.ok()) << "QMD_MAJOR_VERSION of all-ones is not 3";
  EXPECT_FALSE(v3.fields.empty());
  EXPECT_FALSE(decode_qmd({}, 3).ok());
  EXPECT_EQ(qmd::detect_version(std::vector<uint32_t>(10)), 0u);
}

}  // namespace
}  // namespace hcq::nv
