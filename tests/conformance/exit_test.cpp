// Process exit with work still in flight: a child process (hcq-exit-child, exit_child.cpp) opens devices, leaves a
// kernel and a queue blocked on a signal nobody writes in flight on each, and leaves by returning from main or by
// exit(). The exit-time teardown (the device registry synchronizes every device, which times out and describes the
// hung rings, then closes them) must end in exit status 0 on every device: no signal, no sanitizer report. It runs
// after the statics made after the registry are destroyed (vendor tables built on first use were among them), so
// whatever the devices read there must outlive it.
//
// The SIM-NV cases carry "SimNv" in their names: scripts/test.sh leaves SIM-NV out of the ASan run by that name.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "conformance/exit_child.hpp"

extern char** environ;

namespace hcq::conformance {
namespace {

struct ChildResult {
  int status = 0;
  std::string output;
};

// Runs hcq-exit-child (built next to this binary, in conformance/) in `mode` on `devices`, its stdout and stderr
// captured. Waits time out after 200 ms there: the registry's synchronize at exit times out on the blocked queues.
ChildResult run_child_process(std::span<const std::string_view> devices, std::string_view mode) {
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe");
  const std::string child = (self.parent_path() / "conformance" / "hcq-exit-child").string();
  ChildResult r;
  if (!std::filesystem::exists(child)) {
    ADD_FAILURE() << child << " is missing: build it (ninja builds it with everything, as scripts/test.sh does)";
    return r;
  }
  const std::string log =
      (std::filesystem::path(::testing::TempDir()) / ("hcq-exit-test-" + std::to_string(::getpid()) + ".log")).string();
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e)
    if (!std::string_view(*e).starts_with("HCQ_WAIT_TIMEOUT_MS=")) env_text.emplace_back(*e);
  env_text.emplace_back("HCQ_WAIT_TIMEOUT_MS=200");
  std::vector<char*> envp;
  for (std::string& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> arg_text{child, std::string(mode)};
  arg_text.insert(arg_text.end(), devices.begin(), devices.end());
  std::vector<char*> argv;
  for (std::string& s : arg_text) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, child.c_str(), &actions, nullptr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    ADD_FAILURE() << "posix_spawn of " << child << " failed: " << std::strerror(spawned);
    return r;
  }
  EXPECT_EQ(::waitpid(pid, &r.status, 0), pid);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  r.output = text.str();
  std::filesystem::remove(log);
  return r;
}

void expect_clean_exit(std::span<const std::string_view> devices, std::string_view mode) {
  const ChildResult r = run_child_process(devices, mode);
  EXPECT_FALSE(WIFSIGNALED(r.status)) << "the child died of signal " << WTERMSIG(r.status) << "; its output:\n"
                                      << r.output;
  EXPECT_TRUE(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0)
      << "the child exited with status " << (WIFEXITED(r.status) ? WEXITSTATUS(r.status) : -1) << "; its output:\n"
      << r.output;
  EXPECT_NE(r.output.find(kExitingMarker), std::string::npos)
      << "the child did not get to its exit with work in flight; its output:\n"
      << r.output;
}

constexpr std::string_view kCpuAndSimAmd[] = {"CPU:0", "SIM-AMD:gfx1100"};
constexpr std::string_view kCpuSimAmdAndSimNv[] = {"CPU:0", "SIM-AMD:gfx1100", "SIM-NV:hopper"};

TEST(ExitWithWorkInFlight, ReturnFromMainOnCpuAndSimAmd) { expect_clean_exit(kCpuAndSimAmd, "return"); }
TEST(ExitWithWorkInFlight, ExitMidSubmissionOnCpuAndSimAmd) { expect_clean_exit(kCpuAndSimAmd, "exit"); }
TEST(ExitWithWorkInFlight, ReturnFromMainOnSimNvCpuAndSimAmd) { expect_clean_exit(kCpuSimAmdAndSimNv, "return"); }
TEST(ExitWithWorkInFlight, ExitMidSubmissionOnSimNvCpuAndSimAmd) { expect_clean_exit(kCpuSimAmdAndSimNv, "exit"); }

}  // namespace
}  // namespace hcq::conformance
