// (4) Robustness: random, mutated and truncated words decode without crashing or reading out of bounds, and the
// decoded packets always tile the input exactly (every dword is accounted for, in order).
#include <gtest/gtest.h>

#include <random>

#include "amd/decode.hpp"
#include "amd/encode.hpp"

namespace hcq::amd {
namespace {

void check_tiling(const std::vector<DecodedPacket>& ps, size_t n_words, const char* what) {
  size_t at = 0;
  for (const DecodedPacket& p : ps) {
    ASSERT_EQ(p.offset, at * 4) << what;
    ASSERT_GE(p.words, 1u) << what;
    at += p.words;
  }
  ASSERT_EQ(at, n_words) << what;
}

void decode_all(std::span<const uint32_t> w, const Target& t) {
  // Copy into an exactly-sized heap buffer so sanitizers catch any read past the end.
  const std::vector<uint32_t> exact(w.begin(), w.end());
  check_tiling(decode_pm4(exact, t), exact.size(), "pm4");
  check_tiling(decode_sdma(exact, t), exact.size(), "sdma");
  const auto aql = decode_aql(exact, t);
  size_t aql_words = 0;
  for (const DecodedPacket& p : aql) aql_words += p.words;
  ASSERT_EQ(aql_words, exact.size());
}

std::vector<uint32_t> sample_stream(const Target& t) {
  std::vector<uint32_t> w;
  Pm4Encoder e(t, w);
  e.memory_barrier();
  KernelInfo k;
  k.wave32 = t.wave32;
  DispatchArgs a;
  e.exec(k, a);
  e.signal(0x1000u, 1u);
  e.signal_event(0x2000u, 2);
  SdmaEncoder s(t, w);
  s.copy(0x1000u, 0x2000u, 64);
  s.wait(0x1000u, 1u);
  return w;
}

TEST(DecodeRobustness, RandomWords) {
  std::mt19937 rng(1234);
  for (const Target& t : Target::known()) {
    for (int iter = 0; iter < 300; ++iter) {
      std::vector<uint32_t> w(rng() % 64);
      for (uint32_t& x : w) x = rng();
      // Bias some words towards plausible headers so deeper paths run.
      for (size_t i = 0; i < w.size(); i += 3) {
        if (rng() % 2) w[i] = (3u << 30) | ((rng() % 12) << 16) | ((rng() % 256) << 8);
        else w[i] = rng() % 20 | ((rng() % 4) << 8);
      }
      decode_all(w, t);
    }
  }
}

TEST(DecodeRobustness, EveryPrefixAndEveryBitFlipOfARealStream) {
  for (const Target& t : Target::known()) {
    const std::vector<uint32_t> w = sample_stream(t);
    for (size_t n = 0; n <= w.size(); ++n) decode_all(std::span<const uint32_t>(w).first(n), t);
    std::mt19937 rng(99);
    for (int iter = 0; iter < 200; ++iter) {
      std::vector<uint32_t> m = w;
      m[rng() % m.size()] ^= 1u << (rng() % 32);
      decode_all(m, t);
    }
  }
}

TEST(DecodeRobustness, MalformedPacketsAreReportedAndDecodingResynchronizes) {
  const Target& t = Target::from_gfx("gfx1100");
  std::vector<uint32_t> w;
  Pm4Encoder e(t, w);
  w.push_back(pm4::header(0xf3, 2));  // an opcode AMD does not document
  w.push_back(0);
  w.push_back(0);
  w.push_back(pm4::header(pm4::RELEASE_MEM, 3));  // RELEASE_MEM of the wrong length
  w.insert(w.end(), {0, 0, 0});
  e.signal(0x1000u, 1u);  // a good packet after the bad ones
  const auto p = decode_pm4(w, t);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_FALSE(p[0].ok());
  EXPECT_EQ(p[0].op, "OPCODE_0xf3");
  EXPECT_FALSE(p[1].ok());
  EXPECT_EQ(p[1].op, "RELEASE_MEM");
  EXPECT_TRUE(p[2].ok());
  EXPECT_EQ(p[2].field("data")->value, 1u);

  std::vector<uint32_t> s = {0xee, 0xee};  // unknown SDMA op: one dword at a time
  SdmaEncoder(t, s).fence(0x1000u, 2u);
  const auto q = decode_sdma(s, t);
  ASSERT_EQ(q.size(), 3u);
  EXPECT_FALSE(q[0].ok());
  EXPECT_FALSE(q[1].ok());
  EXPECT_EQ(q[2].op, "FENCE");
  EXPECT_TRUE(q[2].ok());

  const std::vector<uint32_t> cut = {pm4::header(pm4::WAIT_REG_MEM, 6), 0x15};
  const auto c = decode_pm4(cut, t);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].ok());
  EXPECT_NE(c[0].error.find("truncated"), std::string::npos);
}

}  // namespace
}  // namespace hcq::amd
