// libhcq-trace.so: preloaded into any program (LD_PRELOAD, or `hcq-dump trace -- CMD`), it logs the program's
// open/openat/close/ioctl/mmap calls (mmap of files only), GPU ioctls decoded, to $HCQ_TRACE_LOG (appended; stderr when unset).
// Each call goes to the next definition (libc) first; the line is written after it, with its result. errno is kept
// as libc left it. Calls the shim itself makes (opening the log, reading driver versions) are not logged.
// Both open and open64 (mmap, mmap64, ...) are defined below, so the headers must not rename one to the other, and
// the fortified inline open() must not clash with our definition.
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <string>

#include "hcq/error.hpp"
#include "trace/tracer.hpp"

namespace {

thread_local bool in_shim = false;  // set while the shim runs its own calls, so they are not traced

template <class Fn>
Fn next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

using OpenFn = int (*)(const char*, int, ...);
using OpenatFn = int (*)(int, const char*, int, ...);
using CloseFn = int (*)(int);
using IoctlFn = int (*)(int, unsigned long, ...);
using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);

struct Shim {
  OpenFn open = next<OpenFn>("open");
  OpenFn open64 = next<OpenFn>("open64");
  OpenatFn openat = next<OpenatFn>("openat");
  OpenatFn openat64 = next<OpenatFn>("openat64");
  CloseFn close = next<CloseFn>("close");
  IoctlFn ioctl = next<IoctlFn>("ioctl");
  MmapFn mmap = next<MmapFn>("mmap");
  MmapFn mmap64 = next<MmapFn>("mmap64");
  hcq::trace::Tracer tracer;
  int log_fd = 2;

  Shim() {
    in_shim = true;
    if (const char* path = std::getenv("HCQ_TRACE_LOG"); path && *path) {
      const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
      if (fd >= 0) log_fd = fd;
    }
    write_line("# hcq-trace pid " + std::to_string(getpid()) + ": " + self_command() + module_versions());
    in_shim = false;
  }

  // One write(2) per line, so lines of several threads or processes appending to one log do not interleave.
  void write_line(const std::string& text) {
    std::string line = hcq::cat("[", getpid(), "] ", text, "\n");
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = ::write(log_fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      p += n;
      left -= static_cast<size_t>(n);
    }
  }

  std::string read_small(const char* path) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    char buf[256];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    close(fd);
    std::string s(buf, n > 0 ? static_cast<size_t>(n) : 0);
    for (char& c : s)
      if (c == '\0') c = ' ';
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
  }

  std::string self_command() { return read_small("/proc/self/cmdline"); }

  // The kernel modules' versions, when loaded: what the tracer knows before any ioctl tells it.
  std::string module_versions() {
    std::string s;
    for (const char* module : {"amdgpu", "nvidia", "nvidia_uvm"}) {
      const std::string v = read_small(("/sys/module/" + std::string(module) + "/version").c_str());
      if (!v.empty()) s += "; " + std::string(module) + " " + v;
    }
    return s;
  }
};

// Deliberately never destroyed: the program may make calls while static destructors run and after.
Shim& shim() {
  static Shim* s = new Shim();
  return *s;
}

// At load, so every traced process logs its header line even if it never makes a call the shim sees (libc's own
// internal opens, as in opendir or fopen, do not go through these symbols).
__attribute__((constructor)) void announce() { shim(); }

// Runs `log` (which builds the line) unless the call came from the shim itself; keeps errno.
template <class Log>
void trace(Log&& log) {
  if (in_shim) return;
  const int err = errno;
  in_shim = true;
  try {
    Shim& s = shim();
    s.write_line(log(s.tracer, err));
  } catch (...) {
    // A tracer that cannot allocate must not take the program down with it.
  }
  in_shim = false;
  errno = err;
}

bool wants_mode(int flags) { return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE; }

std::string at_path(int dirfd, const char* path) {
  if (!path || path[0] == '/' || dirfd == AT_FDCWD) return path ? path : "(null)";
  return "<dirfd " + std::to_string(dirfd) + ">/" + path;
}

int do_open(OpenFn fn, const char* path, int flags, mode_t mode) {
  if (!fn) {
    errno = ENOSYS;
    return -1;
  }
  const int rc = fn(path, flags, mode);
  trace([&](hcq::trace::Tracer& t, int err) { return t.on_open(path, flags, rc, err); });
  return rc;
}

int do_openat(OpenatFn fn, int dirfd, const char* path, int flags, mode_t mode) {
  if (!fn) {
    errno = ENOSYS;
    return -1;
  }
  const int rc = fn(dirfd, path, flags, mode);
  trace([&](hcq::trace::Tracer& t, int err) { return t.on_open(at_path(dirfd, path).c_str(), flags, rc, err); });
  return rc;
}

}  // namespace

extern "C" {

int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (wants_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  return do_open(shim().open, path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (wants_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  return do_open(shim().open64, path, flags, mode);
}

int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (wants_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  return do_openat(shim().openat, dirfd, path, flags, mode);
}

int openat64(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (wants_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = va_arg(ap, mode_t);
    va_end(ap);
  }
  return do_openat(shim().openat64, dirfd, path, flags, mode);
}

int close(int fd) {
  Shim& s = shim();
  if (fd == s.log_fd && fd != 2) return 0;  // the program closing every descriptor must not silence the log
  const int rc = s.close(fd);
  trace([&](hcq::trace::Tracer& t, int err) { return t.on_close(fd, rc, err); });
  return rc;
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  const int rc = shim().ioctl(fd, request, arg);
  trace([&](hcq::trace::Tracer& t, int err) { return t.on_ioctl(fd, request, arg, rc, err); });
  return rc;
}

void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  void* result = shim().mmap(addr, length, prot, flags, fd, offset);
  // Anonymous mappings are the allocator's business, not the driver's: only file mappings are logged.
  if (!(flags & MAP_ANONYMOUS))
    trace(
        [&](hcq::trace::Tracer& t, int err) { return t.on_mmap(addr, length, prot, flags, fd, offset, result, err); });
  return result;
}

void* mmap64(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  void* result = shim().mmap64(addr, length, prot, flags, fd, offset);
  if (!(flags & MAP_ANONYMOUS))
    trace(
        [&](hcq::trace::Tracer& t, int err) { return t.on_mmap(addr, length, prot, flags, fd, offset, result, err); });
  return result;
}

}  // extern "C"
