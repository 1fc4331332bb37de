// The OS seam: the only way any driver touches the kernel. The real implementation calls libc; the simulated GPUs
// plug in a simulated kernel driver behind the same interface. Calls follow POSIX: -1 (or MAP_FAILED) and errno.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hcq {

class Os {
 public:
  virtual ~Os() = default;
  virtual int open(const char* path, int flags) = 0;
  virtual int close(int fd) = 0;
  virtual int ioctl(int fd, unsigned long request, void* arg) = 0;
  virtual void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) = 0;
  virtual int munmap(void* addr, size_t length) = 0;
  // The text of a sysfs (or any) file, or nullopt if it cannot be read.
  virtual std::optional<std::string> read_file(const std::string& path) = 0;
  // Entry names in a directory (no "." or ".."), sorted; empty if it cannot be listed.
  virtual std::vector<std::string> list_dir(const std::string& path) = 0;
  virtual int eventfd(unsigned initval, int flags) = 0;
  // A doorbell or MMIO register store. Real hardware: a volatile store; a simulator sees it at once.
  virtual void write_doorbell32(volatile uint32_t* where, uint32_t value) { *where = value; }
  virtual void write_doorbell64(volatile uint64_t* where, uint64_t value) { *where = value; }
};

// libc-backed seam. One per process; stateless.
Os& real_os();

// Owns a file descriptor opened through an Os; closes it through the same Os.
class UniqueFd {
 public:
  UniqueFd() = default;
  UniqueFd(Os& os, int fd) : os_(&os), fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : os_(o.os_), fd_(o.fd_) { o.fd_ = -1; }
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  Os* os_ = nullptr;
  int fd_ = -1;
};

// Owns an mmap'ed range; unmaps it through the same Os.
class Mapping {
 public:
  Mapping() = default;
  Mapping(Os& os, void* addr, size_t length) : os_(&os), addr_(addr), length_(length) {}
  Mapping(Mapping&& o) noexcept : os_(o.os_), addr_(o.addr_), length_(o.length_) { o.addr_ = nullptr; }
  Mapping& operator=(Mapping&& o) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping();
  void* get() const { return addr_; }
  size_t size() const { return length_; }

 private:
  Os* os_ = nullptr;
  void* addr_ = nullptr;
  size_t length_ = 0;
};

// Throws OsError("<what>: <strerror(errno)>") when rc < 0; returns rc otherwise.
int check_os(int rc, const std::string& what);

}  // namespace hcq
