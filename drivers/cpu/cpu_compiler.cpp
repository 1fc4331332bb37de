// Runs the compiler with memfds as stdin, stdout and stderr: nothing touches the disk, and since no pipe is
// involved there is no deadlock to avoid (a full stderr pipe) and no SIGPIPE when the compiler exits early.
#include "cpu_compiler.hpp"

#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "hcq/os.hpp"
#include "kernel_abi_text.hpp"

extern char** environ;

namespace hcq::cpu {
namespace {

struct RunResult {
  int spawn_error = 0;  // errno of posix_spawnp, 0 when the program ran
  int status = 0;       // waitpid status
  std::vector<uint8_t> out;
  std::string err;
};

// An anonymous in-memory file, closed on destruction.
class MemFd {
 public:
  explicit MemFd(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) throw OsError(cat("memfd_create(", name, "): ", std::strerror(errno)), errno);
  }
  MemFd(const MemFd&) = delete;
  MemFd& operator=(const MemFd&) = delete;
  ~MemFd() { ::close(fd_); }
  int get() const { return fd_; }

  void write_all(std::string_view data) const {
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw OsError(cat("write to a memfd: ", std::strerror(errno)), errno);
      done += static_cast<size_t>(n);
    }
    ::lseek(fd_, 0, SEEK_SET);
  }
  std::vector<uint8_t> read_all() const {
    std::vector<uint8_t> data;
    ::lseek(fd_, 0, SEEK_SET);
    uint8_t chunk[65536];
    for (;;) {
      const ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw OsError(cat("read from a memfd: ", std::strerror(errno)), errno);
      if (n == 0) return data;
      data.insert(data.end(), chunk, chunk + n);
    }
  }

 private:
  int fd_;
};

// posix_spawn file actions and their cleanup.
class FileActions {
 public:
  FileActions() { posix_spawn_file_actions_init(&fa_); }
  FileActions(const FileActions&) = delete;
  FileActions& operator=(const FileActions&) = delete;
  ~FileActions() { posix_spawn_file_actions_destroy(&fa_); }
  void dup2(int from, int to) { posix_spawn_file_actions_adddup2(&fa_, from, to); }
  const posix_spawn_file_actions_t* get() const { return &fa_; }

 private:
  posix_spawn_file_actions_t fa_;
};

RunResult run(const std::vector<std::string>& args, std::string_view input) {
  MemFd in("hcq-cc-in"), out("hcq-cc-out"), err("hcq-cc-err");
  in.write_all(input);
  FileActions actions;
  actions.dup2(in.get(), 0);
  actions.dup2(out.get(), 1);
  actions.dup2(err.get(), 2);

  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  RunResult r;
  pid_t pid = 0;
  r.spawn_error = posix_spawnp(&pid, argv[0], actions.get(), nullptr, argv.data(), environ);
  if (r.spawn_error != 0) return r;
  while (::waitpid(pid, &r.status, 0) < 0) {
    if (errno != EINTR) throw OsError(cat("waitpid for ", args[0], ": ", std::strerror(errno)), errno);
  }
  r.out = out.read_all();
  const std::vector<uint8_t> diag = err.read_all();
  r.err.assign(diag.begin(), diag.end());
  return r;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return cat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return cat("signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return cat("wait status ", status);
}

std::string missing_compiler_message(const std::string& cc, int err) {
  return cat("CPU compiler '", cc, "' could not run (", std::strerror(err),
             "): install it with `apt-get install clang-19`, or point HCQ_CC at a clang");
}

// The value of "<key>\t: value" in /proc/cpuinfo's first processor block.
std::string cpuinfo_field(const std::string& text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t eol = std::min(text.find('\n', pos), text.size());
    std::string_view line(text.data() + pos, eol - pos);
    if (line.substr(0, key.size()) == key) {
      const size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        std::string_view v = line.substr(colon + 1);
        while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
        return std::string(v);
      }
    }
    pos = eol + 1;
  }
  return {};
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

std::string host_target(Os& os) {
  const std::string info = os.read_file("/proc/cpuinfo").value_or("");
  std::string model = cpuinfo_field(info, "model name");
  for (char& c : model)
    if (c == ' ' || c == '\t') c = '_';
  if (model.empty()) model = "unknown";
  return cat("x86_64-", model, "-", hex(fnv1a(cpuinfo_field(info, "flags"))));
}

}  // namespace

const std::vector<std::string>& cpu_compile_flags() {
  static const std::vector<std::string> flags = {
      "-x", "c", "-std=c11", "-O2", "-march=native", "-ffreestanding", "-fPIC", "-fno-common",
      "-fno-stack-protector", "-fno-asynchronous-unwind-tables", "-fvisibility=hidden"};
  return flags;
}

CpuCompiler::CpuCompiler(Os& os) : cc_(knobs::cpu_cc()), target_(host_target(os)) {}

std::string CpuCompiler::options() const {
  std::string s;
  for (const std::string& f : cpu_compile_flags()) s += (s.empty() ? "" : " ") + f;
  // The prelude is part of every kernel: a changed ABI must never be served a binary cached for the old one.
  return s + "\nprelude:\n" + kKernelAbiSource;
}

std::string CpuCompiler::identity() const {
  std::call_once(identity_once_, [this] {
    try {
      const RunResult r = run({cc_, "--version"}, {});
      if (r.spawn_error != 0) {
        identity_ = cc_ + " (unavailable)";
        return;
      }
      const std::string text(r.out.begin(), r.out.end());
      identity_ = cc_ + " " + text.substr(0, text.find('\n'));
    } catch (const Error&) {
      identity_ = cc_ + " (unavailable)";
    }
  });
  return identity_;
}

std::vector<uint8_t> CpuCompiler::compile(std::string_view source) {
  std::vector<std::string> args{cc_};
  for (const std::string& f : cpu_compile_flags()) args.push_back(f);
  args.insert(args.end(), {"-c", "-", "-o", "-"});

  // #line keeps diagnostics pointing at the user's own lines, not at the prepended ABI.
  std::string text = kKernelAbiSource;
  text += "\n#line 1 \"kernel.c\"\n";
  text += source;

  const RunResult r = run(args, text);
  if (r.spawn_error != 0) throw CompileError(missing_compiler_message(cc_, r.spawn_error));
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
    // posix_spawnp may report a missing program as the child's exit status 127.
    if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127 && r.out.empty() && r.err.empty())
      throw CompileError(missing_compiler_message(cc_, ENOENT));
    throw CompileError(cat("CPU kernel compile failed (", cc_, ", ", describe_status(r.status), "):\n", r.err));
  }
  if (r.out.empty()) throw CompileError(cat("CPU kernel compile produced no object (", cc_, "):\n", r.err));
  return r.out;
}

}  // namespace hcq::cpu
