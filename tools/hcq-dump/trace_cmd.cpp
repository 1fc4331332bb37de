// hcq-dump trace: runs a command with libhcq-trace.so preloaded, so its GPU ioctls are logged, decoded.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "commands.hpp"

extern char** environ;

namespace hcq::dump {

const char* const kTraceHelp =
    "usage: hcq-dump trace [-o LOG] -- CMD [ARGS...]\n"
    "\n"
    "Runs CMD with libhcq-trace.so preloaded: every open, openat, close, ioctl and file mmap of CMD (and of the\n"
    "programs it starts) is logged, KFD, RM and UVM ioctls by name with their decoded arguments, results and the\n"
    "driver versions, to LOG (appended) or else to stderr. The shim is $HCQ_TRACE_SHIM, else the one this build made,\n"
    "else the installed one.\n"
    "\n"
    "exit status: CMD's (128 + the signal if it was killed), 2 bad command line, 4 the shim was not found or CMD\n"
    "could not be started.\n";

namespace {

int usage(std::ostream& err, const std::string& message) {
  err << "hcq-dump trace: " << message << "\nrun 'hcq-dump help trace' for usage\n";
  return kExitUsage;
}

std::string find_shim() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (const char* env = std::getenv("HCQ_TRACE_SHIM"); env && *env) return fs::exists(env, ec) ? env : "";
  for (const char* candidate : {HCQ_TRACE_SHIM_BUILD, HCQ_TRACE_SHIM_INSTALLED})
    if (fs::exists(candidate, ec)) return candidate;
  return "";
}

}  // namespace

int run_trace(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  std::string log;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string_view a = args[i];
    if (a == "--help" || a == "-h") {
      out << kTraceHelp;
      return kExitOk;
    }
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-o") {
      if (i + 1 >= args.size()) return usage(err, "-o needs a file");
      log = std::string(args[++i]);
    } else {
      return usage(err, "unexpected '" + std::string(a) + "' (the command goes after --)");
    }
  }
  if (i >= args.size()) return usage(err, "no command given after --");

  const std::string shim = find_shim();
  if (shim.empty()) {
    err << "hcq-dump trace: libhcq-trace.so not found (set HCQ_TRACE_SHIM to its path)\n";
    return kExitTool;
  }

  // The child's environment: ours, with the shim first in LD_PRELOAD and the log named by an absolute path (the
  // command may change directory, and its children log to the same file).
  std::vector<std::string> env;
  std::string preload = shim;
  for (char** e = environ; *e; ++e) {
    const std::string_view kv(*e);
    if (kv.starts_with("LD_PRELOAD=")) {
      if (kv.size() > 11) preload.append(":").append(kv.substr(11));
    } else if (!kv.starts_with("HCQ_TRACE_LOG=")) {
      env.emplace_back(kv);
    }
  }
  env.push_back("LD_PRELOAD=" + preload);
  if (!log.empty()) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(log, ec);
    env.push_back("HCQ_TRACE_LOG=" + (ec ? log : abs.string()));
  }
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_s(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  out.flush();
  err.flush();
  if (const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()); rc != 0) {
    err << "hcq-dump trace: cannot run " << argv_s[0] << ": " << std::strerror(rc) << "\n";
    return kExitTool;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      err << "hcq-dump trace: waiting for " << argv_s[0] << ": " << std::strerror(errno) << "\n";
      return kExitTool;
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitTool;
}

}  // namespace hcq::dump
