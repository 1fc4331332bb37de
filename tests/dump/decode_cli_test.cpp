// hcq-dump decode on bad input: bad command lines, unusable files, malformed and unknown packets (reported, decoding
// resumes after them), and random words in every format (every output line is still valid JSON, nothing crashes).
#include <gtest/gtest.h>

#include <random>

#include "../../tools/hcq-dump/commands.hpp"
#include "amd/encode.hpp"
#include "cli.hpp"

namespace hcq::dump {
namespace {

using testing::Json;
using testing::run_decode_cli;

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

TEST(DumpDecodeCli, BadCommandLinesAreUsageErrors) {
  const std::string file = testing::write_words("one.bin", {0x80000000u});
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {file},                                            // no --format
           {"--format", "pm4"},                               // no FILE
           {"--format", "pm5", file},                         // unknown format
           {"--format"},                                      // --format without its value
           {"--format", "pm4", "--arch", "gfx9999", file},    // unknown target
           {"--format", "nv-push", "--arch", "sm_11", file},  // unknown NV architecture
           {"--format", "pm4", "--bogus", file},
           {"--format", "pm4", file, file},
       }) {
    const auto r = run_decode_cli(args);
    EXPECT_EQ(r.status, kExitUsage) << args.back();
    EXPECT_TRUE(contains(r.err, "hcq-dump decode: ")) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  const auto arch = run_decode_cli({"--format", "pm4", "--arch", "gfx9999", file});
  EXPECT_TRUE(contains(arch.err, "gfx1100")) << "the message lists the known targets: " << arch.err;
  EXPECT_EQ(run_decode_cli({"--help"}).status, kExitOk);
}

TEST(DumpDecodeCli, UnusableFilesSayWhy) {
  const auto missing = run_decode_cli({"--format", "pm4", "/nonexistent/words.bin"});
  EXPECT_EQ(missing.status, kExitInput);
  EXPECT_TRUE(contains(missing.err, "cannot read /nonexistent/words.bin")) << missing.err;
  const auto empty = run_decode_cli({"--format", "sdma", testing::write_bytes("empty.bin", "")});
  EXPECT_EQ(empty.status, kExitInput);
  EXPECT_TRUE(contains(empty.err, "is empty")) << empty.err;
  const auto tiny = run_decode_cli({"--format", "aql", testing::write_bytes("tiny.bin", "abc")});
  EXPECT_EQ(tiny.status, kExitInput);
  EXPECT_TRUE(contains(tiny.err, "3 bytes, shorter than one dword")) << tiny.err;
  // Whole dwords are decoded, the tail is named.
  const auto odd =
      run_decode_cli({"--format", "pm4", "--json",
                      testing::write_bytes("odd.bin", std::string("\x00\x00\x00\x80\x00\x00\x00\x80\x01", 9))});
  EXPECT_EQ(odd.status, kExitMalformed);
  EXPECT_TRUE(contains(odd.err, "9 bytes, not a whole number of dwords: the last 1 byte was not decoded")) << odd.err;
  EXPECT_EQ(std::count(odd.out.begin(), odd.out.end(), '\n'), 2) << odd.out;
}

TEST(DumpDecodeCli, UnknownPacketIsReportedAndDecodingResumes) {
  const amd::Target& t = amd::Target::from_gfx("gfx1100");
  std::vector<uint32_t> w;
  amd::Pm4Encoder(t, w).signal(0x1000u, 1u);
  const size_t bad = w.size();
  w.push_back(0xc001f300u);  // type-3 header, opcode 0xf3 (not a PM4 opcode), two payload dwords
  w.push_back(0x11111111u);
  w.push_back(0x22222222u);
  amd::Pm4Encoder(t, w).wait(0x1000u, 1u);
  const std::string file = testing::write_words("unknown.bin", w);

  const auto r = run_decode_cli({"--format", "pm4", "--json", file});
  EXPECT_EQ(r.status, kExitMalformed);
  EXPECT_TRUE(contains(r.err, "1 of 3 packets malformed or unknown")) << r.err;
  std::vector<Json> got;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) got.push_back(Json::parse(line));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0]["op"].str(), "RELEASE_MEM");
  EXPECT_EQ(got[1]["op"].str(), "OPCODE_0xf3");
  EXPECT_EQ(got[1]["offset"].u64(), bad * 4);
  EXPECT_EQ(got[1]["words"].u64(), 3u);
  EXPECT_TRUE(contains(got[1]["error"].str(), "unknown PM4 opcode")) << got[1]["error"].str();
  EXPECT_EQ(got[2]["op"].str(), "WAIT_REG_MEM");
  EXPECT_FALSE(got[2].has("error"));

  const auto text = run_decode_cli({"--format", "pm4", file});
  EXPECT_TRUE(contains(text.out, "OPCODE_0xf3  3 dwords\n        MALFORMED: unknown PM4 opcode")) << text.out;
  EXPECT_TRUE(contains(text.out, "WAIT_REG_MEM")) << text.out;
}

// Random words in every format: whatever the decoder makes of them, the tool prints valid JSON objects with the
// four keys, at increasing offsets inside the input, and exits 0 or 1.
TEST(DumpDecodeCli, RandomWordsGiveValidJsonInEveryFormat) {
  std::mt19937 rng(1234);
  for (const char* format : {"pm4", "sdma", "aql", "nv-gpfifo", "nv-push", "nv-qmd"}) {
    for (int round = 0; round < 20; ++round) {
      std::vector<uint32_t> w(1 + rng() % 200);
      for (uint32_t& x : w) x = rng();
      const auto r = run_decode_cli({"--format", format, "--json", testing::write_words("random.bin", w)});
      ASSERT_TRUE(r.status == kExitOk || r.status == kExitMalformed) << format << ": " << r.err;
      std::istringstream in(r.out);
      uint64_t last = 0;
      bool first = true;
      for (std::string line; std::getline(in, line);) {
        const Json j = Json::parse(line);  // throws (fails the test) on invalid JSON
        for (const char* key : {"offset", "op", "words", "fields"}) ASSERT_TRUE(j.has(key)) << format << ": " << line;
        EXPECT_LT(j["offset"].u64(), w.size() * 4) << format;
        if (!first) {
          EXPECT_GE(j["offset"].u64(), last) << format;
        }
        last = j["offset"].u64();
        first = false;
      }
    }
  }
}

}  // namespace
}  // namespace hcq::dump
