// `hcq-dump replay` after a timeout: its signal stays with the stuck queue. The probe that follows, and every
// signal created later in the process, get other addresses; when the stuck queue is released it writes the
// quarantined slot and nothing else.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../../tools/hcq-dump/live_commands.hpp"
#include "../common/device_param_name.hpp"
#include "cli.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"
#include "hcq/signal.hpp"

namespace hcq {
namespace {

// The hex address after `prefix` in `text`, or nullopt.
std::optional<uint64_t> address_after(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  if (at == std::string::npos) return std::nullopt;
  size_t end = at + prefix.size();
  if (text.compare(end, 2, "0x") != 0) return std::nullopt;
  end += 2;
  const size_t start = end;
  while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == start) return std::nullopt;
  return std::stoull(text.substr(start, end - start), nullptr, 16);
}

std::string hex_of(uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

class DumpReplayQuarantine : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (const char* v = std::getenv("HCQ_BUNDLE_DIR")) saved_dir_ = v;
    ::setenv("HCQ_BUNDLE_DIR", "off", 1);  // the timeouts here need no bundle
    try {
      dev_ = &open_device(GetParam());
    } catch (const std::exception& e) {
      GTEST_SKIP() << GetParam() << " does not open here: " << e.what();
    }
  }
  void TearDown() override {
    if (saved_dir_) ::setenv("HCQ_BUNDLE_DIR", saved_dir_->c_str(), 1);
    else ::unsetenv("HCQ_BUNDLE_DIR");
  }
  std::optional<std::string> saved_dir_;
  Device* dev_ = nullptr;
};

TEST_P(DumpReplayQuarantine, TimedOutSignalIsNeverReused) {
  OwnedSignal never(0, "quarantine test gate");
  std::vector<uint32_t> hang;
  {
    auto q = dev_->compute_queue();
    q->wait(never, Sym(uint64_t{1}));
    hang.assign(q->words().begin(), q->words().end());
  }
  const std::string file = dump::testing::write_words("quarantine-" + std::to_string(::getpid()) + ".bin", hang);
  const std::string_view args[] = {"--device", GetParam(), "--queue", "compute", "--timeout-ms", "200", file};
  std::ostringstream o, e;
  ASSERT_EQ(dump::run_replay(args, o, e), dump::kExitTimedOut) << o.str() << e.str();
  const std::string out = o.str();

  // Both waits time out (the probe's queue is stuck behind the replayed one): each message names its address.
  const std::optional<uint64_t> replayed = address_after(out, "signal \"hcq-dump replay\" at ");
  const std::optional<uint64_t> probed = address_after(out, "signal \"hcq-dump replay probe\" at ");
  ASSERT_TRUE(replayed && probed) << out;
  EXPECT_NE(*replayed, *probed) << out;
  EXPECT_NE(out.find("quarantined: signal " + hex_of(*replayed) +
                     " (\"hcq-dump replay\") never returns to the pool: the stuck queue may still write it\n"),
            std::string::npos)
      << out;

  // The pool hands out the most recently freed slot first: had either signal gone back, these would get it.
  std::vector<OwnedSignal> later;
  for (int i = 0; i < 16; ++i) {
    later.emplace_back(0, "quarantine test later " + std::to_string(i));
    EXPECT_NE(later.back()->addr(), *replayed);
    EXPECT_NE(later.back()->addr(), *probed);
  }

  // Released, the stuck queue runs its signal command: the quarantined slot, and only it, becomes 1.
  never->set_value(1);
  const auto* slot = reinterpret_cast<const uint64_t*>(*replayed);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (__atomic_load_n(slot, __ATOMIC_ACQUIRE) < 1 && std::chrono::steady_clock::now() < until)
    std::this_thread::yield();
  EXPECT_EQ(__atomic_load_n(slot, __ATOMIC_ACQUIRE), 1u) << "the replayed signal command never ran";
  dev_->synchronize();
  for (const OwnedSignal& s : later) EXPECT_EQ(s->value(), 0u) << s->label();
}

// Devices no other test leaves hung or faulted (DumpLive does so to CPU:6, SIM-AMD:gfx1100 and SIM-NV:hopper).
INSTANTIATE_TEST_SUITE_P(Devices, DumpReplayQuarantine, ::testing::Values("CPU:5", "SIM-AMD:gfx1201", "SIM-NV:ga100"),
                         test::device_param_name);

}  // namespace
}  // namespace hcq
