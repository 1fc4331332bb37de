// Tracer: descriptor bookkeeping and the log line format.
#include "trace/tracer.hpp"

#include <fcntl.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace hcq::trace {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// "A|B|0x40": the named bits set in `v`, then whatever is left.
std::string bits_text(uint64_t v, std::initializer_list<std::pair<uint64_t, const char*>> names, const char* zero) {
  std::string s;
  for (const auto& [bit, name] : names) {
    if ((v & bit) != bit || bit == 0) continue;
    s += s.empty() ? "" : "|";
    s += name;
    v &= ~bit;
  }
  if (v) {
    if (!s.empty()) s += '|';
    s += hex(v);
  }
  return s.empty() ? zero : s;
}

std::string open_flags_text(int flags) {
  const int acc = flags & O_ACCMODE;
  std::string s = acc == O_RDONLY ? "O_RDONLY" : acc == O_WRONLY ? "O_WRONLY" : acc == O_RDWR ? "O_RDWR" : hex(acc);
  const std::string rest = bits_text(static_cast<unsigned>(flags & ~O_ACCMODE),
                                     {{O_CLOEXEC, "O_CLOEXEC"},
                                      {O_CREAT, "O_CREAT"},
                                      {O_TRUNC, "O_TRUNC"},
                                      {O_APPEND, "O_APPEND"},
                                      {O_NONBLOCK, "O_NONBLOCK"},
                                      {O_EXCL, "O_EXCL"},
                                      {O_DIRECTORY, "O_DIRECTORY"},
                                      {O_NOCTTY, "O_NOCTTY"}},
                                     "");
  return rest.empty() ? s : s + "|" + rest;
}

}  // namespace

std::string result_text(long rc, int err) {
  if (rc >= 0) return "= " + std::to_string(rc);
  const char* name = strerrorname_np(err);
  return "= -1 " + std::string(name ? name : std::to_string(err).c_str()) + " (" + std::strerror(err) + ")";
}

std::string Tracer::fd_text(int fd) const {
  const auto it = paths_.find(fd);
  return it == paths_.end() ? std::to_string(fd) : std::to_string(fd) + " " + it->second;
}

std::string Tracer::on_open(const char* path, int flags, int rc, int err) {
  const std::string p = path ? path : "(null)";
  std::lock_guard lock(mu_);
  if (rc >= 0) paths_[rc] = p;
  return "open(\"" + p + "\", " + open_flags_text(flags) + ") " + result_text(rc, err);
}

std::string Tracer::on_close(int fd, int rc, int err) {
  std::lock_guard lock(mu_);
  std::string line = "close(" + fd_text(fd) + ") " + result_text(rc, err);
  if (rc == 0) paths_.erase(fd);
  return line;
}

std::string Tracer::on_ioctl(int fd, unsigned long request, const void* arg, int rc, int err) {
  std::lock_guard lock(mu_);
  const auto it = paths_.find(fd);
  const Family path_family = it == paths_.end() ? Family::unknown : family_of_path(it->second);
  const bool readable = !(rc < 0 && (err == EFAULT || err == ENOTTY));
  const DecodedIoctl d = decode_ioctl(path_family, request, arg, readable);
  std::string line = "ioctl(" + fd_text(fd) + ", ";
  line += d.name.empty() ? hex(request) : d.name;
  if (!d.args.empty()) line += " " + d.args;
  line += ") " + result_text(rc, err);
  if (!d.driver_version.empty() && rc == 0) {
    line += "  [driver " + d.driver_version + "]";
    versions_[std::string(family_name(d.family))] = d.driver_version;
  }
  return line;
}

std::string Tracer::on_mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset, void* result,
                            int err) {
  const std::string prot_s =
      bits_text(static_cast<unsigned>(prot),
                {{PROT_READ, "PROT_READ"}, {PROT_WRITE, "PROT_WRITE"}, {PROT_EXEC, "PROT_EXEC"}}, "PROT_NONE");
  const unsigned type = static_cast<unsigned>(flags) & MAP_TYPE;
  const std::string type_s = type == MAP_SHARED ? "MAP_SHARED" : type == MAP_PRIVATE ? "MAP_PRIVATE" : hex(type);
  const std::string rest = bits_text(static_cast<unsigned>(flags) & ~MAP_TYPE,
                                     {{MAP_FIXED, "MAP_FIXED"},
                                      {MAP_ANONYMOUS, "MAP_ANONYMOUS"},
                                      {MAP_NORESERVE, "MAP_NORESERVE"},
                                      {MAP_POPULATE, "MAP_POPULATE"},
                                      {MAP_FIXED_NOREPLACE, "MAP_FIXED_NOREPLACE"}},
                                     "");
  std::lock_guard lock(mu_);
  std::string line = "mmap(" + hex(reinterpret_cast<uintptr_t>(addr)) + ", " + hex(length) + ", " + prot_s + ", " +
                     type_s + (rest.empty() ? "" : "|" + rest) + ", " + fd_text(fd) + ", " +
                     hex(static_cast<uint64_t>(offset)) + ") ";
  if (result == MAP_FAILED) return line + result_text(-1, err);
  return line + "= " + hex(reinterpret_cast<uintptr_t>(result));
}

std::string Tracer::on_munmap(void* addr, size_t length, int rc, int err) {
  return "munmap(" + hex(reinterpret_cast<uintptr_t>(addr)) + ", " + hex(length) + ") " + result_text(rc, err);
}

std::map<std::string, std::string> Tracer::driver_versions() const {
  std::lock_guard lock(mu_);
  return versions_;
}

}  // namespace hcq::trace
