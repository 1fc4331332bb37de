#include "common/subprocess.hpp"

#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "hcq/error.hpp"

extern char** environ;

namespace hcq::drivers {
namespace {

class MemFd {
 public:
  explicit MemFd(const char* name) : fd_(::memfd_create(name, MFD_CLOEXEC)) {
    if (fd_ < 0) throw OsError(cat("memfd_create(", name, "): ", std::strerror(errno)), errno);
  }
  MemFd(const MemFd&) = delete;
  MemFd& operator=(const MemFd&) = delete;
  ~MemFd() { ::close(fd_); }
  int get() const { return fd_; }
  void write_all(std::span<const uint8_t> data) const {
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

}  // namespace

bool ToolResult::ok() const { return spawn_error == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string ToolResult::describe() const {
  if (spawn_error) return cat("could not start (", std::strerror(spawn_error), ")");
  if (WIFEXITED(status)) return cat("exit status ", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return cat("signal ", WTERMSIG(status), " (", strsignal(WTERMSIG(status)), ")");
  return cat("wait status ", status);
}

ToolResult run_tool(const std::vector<std::string>& args, std::string_view stdin_data,
                    std::optional<std::span<const uint8_t>> fd3_input) {
  MemFd in("hcq-amd-in"), out("hcq-amd-out"), err("hcq-amd-err");
  in.write_all({reinterpret_cast<const uint8_t*>(stdin_data.data()), stdin_data.size()});
  std::optional<MemFd> extra;
  FileActions actions;
  actions.dup2(in.get(), 0);
  actions.dup2(out.get(), 1);
  actions.dup2(err.get(), 2);
  if (fd3_input) {
    extra.emplace("hcq-amd-input");
    extra->write_all(*fd3_input);
    actions.dup2(extra->get(), 3);  // dup2 clears close-on-exec on the copy
  }
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  ToolResult r;
  pid_t pid = 0;
  r.spawn_error = posix_spawnp(&pid, argv[0], actions.get(), nullptr, argv.data(), environ);
  if (r.spawn_error != 0) return r;
  while (::waitpid(pid, &r.status, 0) < 0)
    if (errno != EINTR) throw OsError(cat("waitpid for ", args[0], ": ", std::strerror(errno)), errno);
  // posix_spawnp reports a program it could not exec as exit status 127 with no output.
  r.out = out.read_all();
  const std::vector<uint8_t> diag = err.read_all();
  r.err.assign(diag.begin(), diag.end());
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127 && r.out.empty() && r.err.empty()) r.spawn_error = ENOENT;
  return r;
}

}  // namespace hcq::drivers
