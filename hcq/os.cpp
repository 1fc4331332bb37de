// The libc-backed OS seam and the RAII owners of what it hands out.
#include "hcq/backend/os.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "hcq/error.hpp"

namespace hcq {
namespace {

class RealOs final : public Os {
 public:
  // O_CLOEXEC always: a device fd must not leak into a compiler we fork.
  int open(const char* path, int flags) override { return ::open(path, flags | O_CLOEXEC); }
  int close(int fd) override { return ::close(fd); }

  int ioctl(int fd, unsigned long request, void* arg) override {
    int rc;
    do {
      rc = ::ioctl(fd, request, arg);
    } while (rc < 0 && errno == EINTR);  // a signal arrived mid-call; the kernel driver expects a retry
    return rc;
  }

  void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) override {
    return ::mmap(addr, length, prot, flags, fd, offset);
  }
  int munmap(void* addr, size_t length) override { return ::munmap(addr, length); }

  std::optional<std::string> read_file(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    UniqueFd owner(*this, fd);
    // sysfs reports a size of 4096 for every file, so read until EOF instead of trusting fstat.
    std::string text;
    char chunk[4096];
    for (;;) {
      ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return std::nullopt;
      if (n == 0) break;
      text.append(chunk, static_cast<size_t>(n));
    }
    return text;
  }

  std::vector<std::string> list_dir(const std::string& path) override {
    std::vector<std::string> names;
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(path.c_str()), &::closedir);
    if (!dir) return names;
    while (const dirent* entry = ::readdir(dir.get())) {
      std::string_view name(entry->d_name);
      if (name != "." && name != "..") names.emplace_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  int eventfd(unsigned initval, int flags) override { return ::eventfd(initval, flags); }
};

}  // namespace

Os& real_os() {
  static RealOs os;  // stateless: nothing to order at exit
  return os;
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) os_->close(fd_);
    os_ = o.os_;
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) os_->close(fd_);
}

Mapping& Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    if (addr_ != nullptr) os_->munmap(addr_, length_);
    os_ = o.os_;
    addr_ = o.addr_;
    length_ = o.length_;
    o.addr_ = nullptr;
  }
  return *this;
}

Mapping::~Mapping() {
  if (addr_ != nullptr) os_->munmap(addr_, length_);
}

int check_os(int rc, const std::string& what) {
  if (rc < 0) throw OsError(what, errno);
  return rc;
}

}  // namespace hcq
