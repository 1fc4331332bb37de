// Environment knobs (hcq/knobs.cpp): each number knob's range is checked where it is read, with a message naming
// the knob, its text and the range; HCQ_WAIT_TIMEOUT_MS, read once per process, is checked in re-executed
// children; a queue destroyed while that knob is bad neither throws nor terminates.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../common/device_param_name.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"
#include "hcq/signal.hpp"

namespace hcq {
namespace {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The message `read` throws with `name` set to `text`, or "(no error)".
std::string error_of(const char* name, const std::string& text, const std::function<void()>& read) {
  ScopedEnv env(name, text);
  try {
    read();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no error)";
}

// Texts no number knob accepts, whatever its range: a sign, 2^63-1 and 2^64-1 (which once wrapped into an
// immediate timeout and into -1), 2^64 (past 64 bits), words, suffixes and spaces.
const std::vector<std::string> kNeverANumber = {"-1",
                                                "-0",
                                                "+5",
                                                "9223372036854775807",
                                                "18446744073709551615",
                                                "18446744073709551616",
                                                "abc",
                                                "12ms",
                                                " 5",
                                                "5 ",
                                                "0x10",
                                                "1e3",
                                                "1.5"};

struct NumberKnob {
  const char* name;
  const char* what;  // the phrase in its message
  uint64_t lo, hi;
  std::function<uint64_t()> read;
};

std::vector<NumberKnob> number_knobs() {
  return {
      {"HCQ_VA_SIZE_GB", "a whole number of GiB", 1, 131072, [] { return knobs::va_size_bytes() >> 30; }},
      {"HCQ_CPU_THREADS", "a whole number of threads", 1, 4096, [] { return uint64_t{knobs::cpu_threads()}; }},
      {"HCQ_DEBUG", "a debug level", 0, 7, [] { return static_cast<uint64_t>(knobs::debug()); }},
      {"HCQ_BUNDLE_MAX", "a whole number of bundles", 0, 1048576, [] { return uint64_t{knobs::bundle_max()}; }},
      {"HCQ_BEAM", "a number of candidates", 0, 64, [] { return uint64_t{knobs::beam()}; }},
  };
}

TEST(KnobsRange, NumberKnobsAcceptTheirRangeAndRejectEveryOtherTextNamingIt) {
  for (const NumberKnob& k : number_knobs()) {
    for (const uint64_t v : {k.lo, k.hi}) {
      ScopedEnv env(k.name, std::to_string(v));
      EXPECT_EQ(k.read(), v) << k.name;
    }
    std::vector<std::string> bad = kNeverANumber;
    bad.push_back(std::to_string(k.hi + 1));
    if (k.lo > 0) bad.push_back(std::to_string(k.lo - 1));
    for (const std::string& text : bad) {
      const std::string expected = std::string(k.name) + "=\"" + text + "\" is not " + k.what + " in " +
                                   std::to_string(k.lo) + ".." + std::to_string(k.hi);
      EXPECT_EQ(error_of(k.name, text, [&] { k.read(); }), expected);
    }
  }
}

TEST(KnobsRange, SwitchesAcceptOnlyZeroAndOne) {
  const std::vector<std::pair<const char*, std::function<bool()>>> switches = {
      {"HCQ_ASSERT_COMPILE", [] { return knobs::assert_compile(); }},
      {"HCQ_NOOPT", [] { return knobs::noopt(); }},
      {"HCQ_SIM_L2", [] { return knobs::sim_l2(); }},
  };
  for (const auto& [name, read] : switches) {
    for (const std::string text : {"2", "-1", "yes", "true", " 1", "01", "18446744073709551615"})
      EXPECT_EQ(error_of(name, text, [&] { read(); }), std::string(name) + "=\"" + text + "\" is not 0 or 1");
    {
      ScopedEnv on(name, "1");
      EXPECT_TRUE(read()) << name;
    }
    ScopedEnv off(name, "0");
    EXPECT_FALSE(read()) << name;
  }
}

// The one switch that is on unless turned off: the simulated GPUs' L2 model.
TEST(KnobsRange, TheSimulatedL2IsOnByDefault) {
  ScopedEnv restore("HCQ_SIM_L2", "0");  // put back as it was afterwards
  ::unsetenv("HCQ_SIM_L2");
  EXPECT_TRUE(knobs::sim_l2());
}

// POSIX extended regex matching `text` literally (death tests match the child's stderr with a regex).
std::string literally(const std::string& text) {
  std::string re;
  for (const char c : text) {
    if (std::string_view(".[]{}()*+?^$|\\").find(c) != std::string_view::npos) re += '\\';
    re += c;
  }
  return re;
}

// Runs `body` in a re-executed child (HCQ_WAIT_TIMEOUT_MS is read once per process, and this process has read it
// already) with the knob set to `text`.
class KnobsWaitTimeout : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_style_ = GTEST_FLAG_GET(death_test_style);
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
  void TearDown() override { GTEST_FLAG_SET(death_test_style, saved_style_); }
  std::string saved_style_;
};

// The child prints what wait_timeout() gives (the value or the message, between markers) and what
// wait_timeout_or_default() gives, then exits 3 after an error and 0 after a value.
[[noreturn]] void report_wait_timeout(const std::string& text) {
  ::setenv("HCQ_WAIT_TIMEOUT_MS", text.c_str(), 1);
  int status = 0;
  for (int read = 0; read < 2; ++read) {  // twice: a bad value is remembered, not re-read into something else
    try {
      std::fprintf(stderr, "<<%lld ms>>", static_cast<long long>(knobs::wait_timeout().count()));
    } catch (const InvalidArgument& e) {
      std::fprintf(stderr, "<<%s>>", e.what());
      status = 3;
    }
  }
  std::fprintf(stderr, " fallback %lld ms\n", static_cast<long long>(knobs::wait_timeout_or_default().count()));
  std::fflush(stderr);
  std::_Exit(status);
}

TEST_F(KnobsWaitTimeout, TheRangeIsAcceptedAndBadValuesThrowNamingItWithTheDefaultAsFallback) {
  EXPECT_EXIT(report_wait_timeout("0"), ::testing::ExitedWithCode(0), literally("<<0 ms>><<0 ms>> fallback 0 ms"));
  EXPECT_EXIT(report_wait_timeout("86400000"), ::testing::ExitedWithCode(0),
              literally("<<86400000 ms>><<86400000 ms>> fallback 86400000 ms"));
  for (const std::string& text :
       {std::string("-1"), std::string("9223372036854775807"), std::string("18446744073709551615"),
        std::string("18446744073709551616"), std::string("abc"), std::string("30s"), std::string("86400001")}) {
    const std::string message =
        "<<HCQ_WAIT_TIMEOUT_MS=\"" + text + "\" is not a whole number of milliseconds in 0..86400000>>";
    EXPECT_EXIT(report_wait_timeout(text), ::testing::ExitedWithCode(3),
                literally(message + message + " fallback 30000 ms"))
        << text;
  }
}

// A queue whose destructor waits for the device to finish reading its side memory (a bound queue, still blocked
// on a gate when it goes) is destroyed while HCQ_WAIT_TIMEOUT_MS is bad: the destructor waits with the default
// instead of throwing (which terminated the process), and the work completes once the gate opens.
class KnobsQueueDestructor : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    saved_style_ = GTEST_FLAG_GET(death_test_style);
    GTEST_FLAG_SET(death_test_style, "threadsafe");
  }
  void TearDown() override { GTEST_FLAG_SET(death_test_style, saved_style_); }
  std::string saved_style_;
};

[[noreturn]] void destroy_a_waiting_queue(const std::string& device) {
  Device* dev = nullptr;
  try {
    dev = &open_device(device);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s does not open with the bad knob: %s\n", device.c_str(), e.what());
    std::_Exit(4);
  }
  OwnedSignal gate(0, "knobs test gate");
  OwnedSignal done(0, "knobs test done");
  {
    auto q = dev->compute_queue();
    q->wait(gate, 1).signal(done, 1).bind();
    q->submit();
    std::thread opener([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      gate->set_value(1);
    });
    opener.detach();
  }  // ~queue: waits until the device has read the bound words; used to throw InvalidArgument here
  std::fprintf(stderr, "queue destroyed\n");
  // Not Signal::wait: it reads the bad knob too. A plain poll, bounded by 10 s.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (done->value() < 1 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  std::fprintf(stderr, "done = %llu\n", static_cast<unsigned long long>(done->value()));
  std::fflush(stderr);
  std::_Exit(0);  // the device stays open: process teardown is another test's subject
}

TEST_P(KnobsQueueDestructor, BadWaitTimeoutDoesNotTerminate) {
  // First thing in the body: the re-executed child runs it from the top, and must read the knob only once it is bad.
  // (This process read it long ago; setting it here changes nothing for it.)
  const ScopedEnv bad("HCQ_WAIT_TIMEOUT_MS", "-1");
  try {
    open_device(GetParam());
  } catch (const std::exception& e) {
    GTEST_SKIP() << GetParam() << " does not open here: " << e.what();
  }
  EXPECT_EXIT(destroy_a_waiting_queue(GetParam()), ::testing::ExitedWithCode(0), "queue destroyed\ndone = 1\n");
}

INSTANTIATE_TEST_SUITE_P(Devices, KnobsQueueDestructor, ::testing::Values("CPU:4", "SIM-AMD:gfx1100", "SIM-NV:hopper"),
                         test::device_param_name);

}  // namespace
}  // namespace hcq
