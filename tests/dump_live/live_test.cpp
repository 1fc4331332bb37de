// Live capture, hang bundles and replay on CPU, SIM-AMD:gfx1100 and SIM-NV:hopper.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "../../tools/hcq-dump/live_commands.hpp"
#include "../common/device_param_name.hpp"
#include "hcq/allocator.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/bundle.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"

namespace hcq {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("hcq-dump-live-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class DumpLive : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    bundles_ = temp_dir("bundles-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    if (const char* v = std::getenv("HCQ_BUNDLE_DIR")) saved_dir_ = v;
    if (const char* v = std::getenv("HCQ_BUNDLE_MAX")) saved_max_ = v;
    ::setenv("HCQ_BUNDLE_DIR", bundles_.c_str(), 1);
    // The per-process cap counts every bundle the test binary wrote before (fault and hang tests): lift it.
    ::setenv("HCQ_BUNDLE_MAX", "1000000", 1);
    try {
      dev_ = &open_device(GetParam());
    } catch (const std::exception& e) {
      GTEST_SKIP() << GetParam() << " does not open here: " << e.what();
    }
  }
  void TearDown() override {
    if (saved_dir_) ::setenv("HCQ_BUNDLE_DIR", saved_dir_->c_str(), 1);
    else ::unsetenv("HCQ_BUNDLE_DIR");
    if (saved_max_) ::setenv("HCQ_BUNDLE_MAX", saved_max_->c_str(), 1);
    else ::unsetenv("HCQ_BUNDLE_MAX");
    fs::remove_all(bundles_);
  }
  // Runs `hcq-dump replay` in-process on `words`.
  int replay(const std::vector<uint32_t>& words, const char* timeout_ms, std::string* out) {
    const fs::path file = bundles_ / "words.bin";
    std::ofstream(file, std::ios::binary)
        .write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
    const std::string path = file.string();
    const std::string_view args[] = {"--device", GetParam(), "--queue", "compute", "--timeout-ms", timeout_ms, path};
    std::ostringstream o, e;
    const int rc = dump::run_replay(args, o, e);
    *out = o.str() + e.str();
    return rc;
  }
  static std::string bundle_of(const std::string& text) {
    const size_t at = text.find("hang bundle: ");
    if (at == std::string::npos) return {};
    const size_t start = at + 13;
    const size_t end = text.find_first_of("\n;", start);
    return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  }
  fs::path bundles_;
  std::optional<std::string> saved_dir_, saved_max_;
  Device* dev_ = nullptr;
};

// A submission lands in the device's recent ring; written as capture lines beside the allocation it writes to, it
// reads back decoded with the address annotated as that buffer.
TEST_P(DumpLive, CaptureRoundTripAnnotatesAllocations) {
  Allocation a = dev_->allocator().alloc(4096, BufferSpec{.cpu_access = true});
  const uint64_t before = dev_->recent_submissions().size();
  OwnedSignal s(0, "capture test");
  auto q = dev_->compute_queue();
  q->write(Sym(a.va + 0x40), Sym(uint64_t{7})).signal(s, 1);
  q->submit();
  dev_->wait_signal(s, 1);
  EXPECT_EQ(static_cast<uint32_t*>(a.host_ptr())[0x10], 7u);
  const std::vector<capture::Submission> recent = dev_->recent_submissions();
  ASSERT_FALSE(recent.empty());
  EXPECT_TRUE(recent.size() > before || recent.size() == capture::kRecent);
  const capture::Submission& last = recent.back();
  EXPECT_EQ(last.device, dev_->name());
  EXPECT_EQ(last.qid, q->id());
  EXPECT_EQ(last.queue, "compute");
  EXPECT_GE(last.words.size(), q->words().size());

  std::string text = capture::header_line() + "\n" +
                     capture::to_line(capture::AllocEvent{false, dev_->name(), "buffer", a.va, a.size}) + "\n" +
                     capture::to_line(last) + "\n";
  const capture::Capture back = capture::parse(text);
  EXPECT_TRUE(back.problems.empty());
  ASSERT_EQ(back.events.size(), 2u);
  ASSERT_TRUE(back.events[1].submit);
  EXPECT_EQ(back.events[1].submit->words, last.words);
  std::ostringstream shown;
  EXPECT_EQ(dump::show_text(text, shown), dump::kExitOk) << shown.str();
  if (last.format != "cpu") {
    EXPECT_NE(shown.str().find("-> buf#1+0x40"), std::string::npos) << shown.str();
  }

  // Once freed, the same address reads as a stale pointer.
  text = capture::header_line() + "\n" +
         capture::to_line(capture::AllocEvent{false, dev_->name(), "buffer", a.va, a.size}) + "\n" +
         capture::to_line(capture::AllocEvent{true, dev_->name(), "buffer", a.va, a.size}) + "\n" +
         capture::to_line(last) + "\n";
  shown.str("");
  dump::show_text(text, shown);
  if (last.format != "cpu") {
    EXPECT_NE(shown.str().find("-> freed buf#1+0x40"), std::string::npos) << shown.str();
  }
  dev_->allocator().free(a);
}

TEST_P(DumpLive, TimeoutWritesReadableBundle) {
  OwnedSignal never(0, "never written");
  std::string msg;
  try {
    dev_->wait_signal(never, 1, std::chrono::milliseconds(30));
    FAIL() << "the wait did not time out";
  } catch (const TimeoutError& e) {
    msg = e.what();
  }
  const std::string dir = bundle_of(msg);
  ASSERT_FALSE(dir.empty()) << msg;
  std::ostringstream shown;
  EXPECT_EQ(dump::show_text(read_all(fs::path(dir) / bundle::kFileName), shown), dump::kExitOk) << shown.str();
  EXPECT_NE(shown.str().find("hang bundle (timeout)"), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("signal never written at"), std::string::npos) << shown.str();
  EXPECT_NE(shown.str().find("driver_version"), std::string::npos) << shown.str();
}

// Good words from the encoders complete; a wait that never ends times out with a bundle; garbage faults or times
// out, and in every case the process lives and the replay reports it.
TEST_P(DumpLive, ReplayOutcomes) {
  Allocation a = dev_->allocator().alloc(4096, BufferSpec{.cpu_access = true});
  std::vector<uint32_t> good;
  {
    auto q = dev_->compute_queue();
    q->write(Sym(a.va), Sym(uint64_t{0x1234}));
    good.assign(q->words().begin(), q->words().end());
  }
  std::string out;
  EXPECT_EQ(replay(good, "5000", &out), dump::kExitOk) << out;
  EXPECT_NE(out.find("completed"), std::string::npos) << out;
  EXPECT_EQ(static_cast<uint32_t*>(a.host_ptr())[0], 0x1234u);

  OwnedSignal never(0, "replay never");
  std::vector<uint32_t> hang;
  {
    auto q = dev_->compute_queue();
    q->wait(never, Sym(uint64_t{1}));
    hang.assign(q->words().begin(), q->words().end());
  }
  EXPECT_EQ(replay(hang, "200", &out), dump::kExitTimedOut) << out;
  const std::string dir = bundle_of(out);
  ASSERT_FALSE(dir.empty()) << out;
  EXPECT_TRUE(fs::exists(fs::path(dir) / bundle::kFileName));
  {
    // The bundle holds the stuck queue's ring from read to write pointer: the replayed wait is still there.
    const capture::Capture b = capture::parse(read_all(fs::path(dir) / bundle::kFileName));
    EXPECT_TRUE(b.problems.empty());
    size_t rings = 0, pending = 0;
    for (const capture::Event& e : b.events) {
      if (!e.ring) continue;
      ++rings;
      EXPECT_EQ(e.ring->device, GetParam());
      pending += e.ring->words.size();
    }
    EXPECT_GE(rings, 1u);
    EXPECT_GT(pending, 0u) << read_all(fs::path(dir) / bundle::kFileName);
    std::ostringstream shown;
    EXPECT_EQ(dump::show_text(read_all(fs::path(dir) / bundle::kFileName), shown), dump::kExitOk) << shown.str();
    EXPECT_NE(shown.str().find("ring " + GetParam()), std::string::npos) << shown.str();
  }
  never->set_value(1);  // let the queue drain so the device is clean for what follows
  dev_->synchronize();

  const std::vector<uint32_t> garbage = {0xdeadbeef, 0xffffffff, 0x12345678, 0xc0de0000,
                                         0x0,        0xffff0001, 0x80000000, 0xc0ffee00};
  const int rc = replay(garbage, "300", &out);
  EXPECT_TRUE(rc == dump::kExitFaulted || rc == dump::kExitTimedOut || rc == dump::kExitOk) << out;
  if (rc != dump::kExitOk) {
    EXPECT_NE(out.find("device after: "), std::string::npos) << out;
  }
  if (rc == dump::kExitOk) dev_->allocator().free(a);
}

// CPU:6, not CPU:0: these tests leave their device hung and faulted (a sticky error), and the tests that run after
// them (the framework's op suite among them) use CPU:0.
INSTANTIATE_TEST_SUITE_P(Devices, DumpLive, ::testing::Values("CPU:6", "SIM-AMD:gfx1100", "SIM-NV:hopper"),
                         test::device_param_name);

// The readers take anything: hostile lines are problems, never crashes.
TEST(DumpLiveReader, HostileLinesAreReportedNotFatal) {
  const std::string text =
      "{\"hcq_capture\":1}\n{\"t\":\"submit\"}\nnot json\n{\"t\":\"submit\",\"n\":1,\"dev\":\"X\",\"arch\":\"gfx1100\","
      "\"queue\":\"compute\",\"qid\":0,\"format\":\"pm4\",\"ring_end\":4,\"words\":\"c0ffee\"}\n"
      "{\"t\":\"alloc\",\"dev\":\"X\",\"va\":18446744073709551615,\"size\":18446744073709551615,\"kind\":\"buffer\"}\n"
      "{\"t\":\"submit\",\"n\":2,\"dev\":\"X\",\"arch\":\"nope\",\"queue\":\"compute\",\"qid\":0,\"format\":\"pm4\","
      "\"ring_end\":4,\"words\":\"ffffffff00000000\"}\n";
  const capture::Capture c = capture::parse(text);
  EXPECT_EQ(c.problems.size(), 3u);
  std::ostringstream out;
  EXPECT_EQ(dump::show_text(text, out), dump::kExitMalformed);
  EXPECT_NE(out.str().find("unknown here"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace hcq
