// `hcq-dump record [-o FILE] -- CMD...`: runs CMD with HCQ_DUMP pointing at FILE, so every hcq submission and
// allocation it makes is captured (include/hcq/backend/capture.hpp); `hcq-dump show FILE` prints it.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "live_commands.hpp"

extern char** environ;

namespace hcq::dump {

int run_record(std::span<const std::string_view> args, std::ostream& out, std::ostream& err) {
  std::string file = "hcq-capture.jsonl";
  size_t i = 0;
  for (; i < args.size(); ++i) {
    if (args[i] == "--help" || args[i] == "-h") {
      out << "usage: hcq-dump record [-o FILE] -- CMD [ARGS...]\n"
             "runs CMD with HCQ_DUMP=FILE (default ./hcq-capture.jsonl, truncated first); exit status: CMD's\n";
      return kExitOk;
    }
    if (args[i] == "--") {
      ++i;
      break;
    }
    if (args[i] == "-o" && i + 1 < args.size()) {
      file = std::string(args[++i]);
    } else {
      err << "hcq-dump record: unexpected '" << args[i] << "'\n";
      return kExitUsage;
    }
  }
  if (i >= args.size()) {
    err << "hcq-dump record: no command given after --\n";
    return kExitUsage;
  }
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(file, ec).string();
  // The library appends; a fresh recording starts from an empty file.
  if (FILE* f = std::fopen(abs.c_str(), "w")) {
    std::fclose(f);
  } else {
    err << "hcq-dump record: cannot create " << abs << ": " << std::strerror(errno) << "\n";
    return kExitInput;
  }
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with("HCQ_DUMP=")) env.emplace_back(*e);
  env.push_back("HCQ_DUMP=" + abs);
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_s(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  out.flush();
  err.flush();
  pid_t pid = 0;
  if (const int rc = posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()); rc != 0) {
    err << "hcq-dump record: cannot run " << argv_s[0] << ": " << std::strerror(rc) << "\n";
    return kExitTool;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return kExitTool;
  }
  err << "hcq-dump record: capture in " << abs << "\n";
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kExitTool;
}

}  // namespace hcq::dump
