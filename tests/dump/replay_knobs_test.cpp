// `hcq-dump replay` with a bad HCQ_WAIT_TIMEOUT_MS (the real command, in its own process: the knob is read once per
// process) or a bad --timeout-ms: an error naming the value and its range, and the usage exit status. Never an
// abort, and never a huge or negative value wrapped into an immediate timeout.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../../tools/hcq-dump/live_commands.hpp"
#include "cli.hpp"

namespace hcq {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct CommandRun {
  int status = -1;  // the exit status, or -1 when the command did not exit (a signal: an abort)
  std::string out, err;
};

// hcq-dump replay of one NOP-sized dword on the CPU device, with HCQ_WAIT_TIMEOUT_MS set to `knob`.
CommandRun replay_with_knob(const std::string& knob) {
  const std::string build = dump::testing::build_dir();
  EXPECT_FALSE(build.empty()) << "tools/hcq-dump/hcq-dump not built next to the tests";
  const std::string words = dump::testing::write_words("replay-knob.bin", {0u});
  const std::string out = dump::testing::write_bytes("replay-knob.out", "");
  const std::string err = dump::testing::write_bytes("replay-knob.err", "");
  const std::string command = "HCQ_BUNDLE_DIR=off HCQ_WAIT_TIMEOUT_MS='" + knob + "' '" + build +
                              "/tools/hcq-dump/hcq-dump' replay --device CPU --queue compute '" + words + "' >'" + out +
                              "' 2>'" + err + "'";
  const int raw = std::system(command.c_str());
  CommandRun r;
  if (raw != -1 && WIFEXITED(raw)) r.status = WEXITSTATUS(raw);
  r.out = read_file(out);
  r.err = read_file(err);
  return r;
}

TEST(DumpReplayKnobs, BadWaitTimeoutKnobIsAnErrorAndTheUsageStatus) {
  for (const std::string knob :
       {"-1", "9223372036854775807", "18446744073709551615", "18446744073709551616", "abc", "86400001"}) {
    const CommandRun r = replay_with_knob(knob);
    EXPECT_EQ(r.status, dump::kExitUsage) << knob << "\n" << r.out << r.err;
    EXPECT_EQ(r.err, "hcq-dump replay: HCQ_WAIT_TIMEOUT_MS=\"" + knob +
                         "\" is not a whole number of milliseconds in 0..86400000\n");
    EXPECT_EQ(r.out, "") << knob;
  }
}

TEST(DumpReplayKnobs, BadTimeoutOptionIsAnErrorAndTheUsageStatus) {
  const std::string words = dump::testing::write_words("replay-option.bin", {0u});
  for (const std::string ms : {"0", "-1", "18446744073709551615", "86400001", "5s", ""}) {
    const std::string_view args[] = {"--device", "CPU:3", "--queue", "compute", "--timeout-ms", ms, words};
    std::ostringstream out, err;
    EXPECT_EQ(dump::run_replay(args, out, err), dump::kExitUsage) << ms << "\n" << out.str() << err.str();
    EXPECT_EQ(err.str(), "hcq-dump replay: --timeout-ms takes a whole number of milliseconds in 1..86400000\n") << ms;
    EXPECT_EQ(out.str(), "") << ms;
  }
}

}  // namespace
}  // namespace hcq
