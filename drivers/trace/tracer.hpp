// The state and the line format shared by the TracingOs and the preload shim: which path each descriptor was opened
// from (so ioctls on it are decoded by their driver), the driver versions calls have revealed, and one log line per
// call. Every on_* is told about a call after it ran, with its result and errno, and returns its line.
//
//   open("/dev/kfd", O_RDWR|O_CLOEXEC) = 3
//   ioctl(3 /dev/kfd, AMDKFD_IOC_GET_VERSION {major_version=1, minor_version=11}) = 0  [driver KFD 1.11]
//   ioctl(4 /dev/null, NV_ESC_RM_ALLOC) = -1 ENOTTY (Inappropriate ioctl for device)
//   mmap(0x7f0000000000, 0x2000, PROT_READ|PROT_WRITE, MAP_SHARED|MAP_FIXED, 3 /dev/kfd, 0x1000) = 0x7f0000000000
//
// Thread-safe: calls may come from any thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>

#include "trace/ioctl_decode.hpp"

namespace hcq::trace {

class Tracer {
 public:
  std::string on_open(const char* path, int flags, int rc, int err);
  std::string on_close(int fd, int rc, int err);
  // `arg` is read only if the call did not fail with EFAULT or ENOTTY (then the driver never looked at it).
  std::string on_ioctl(int fd, unsigned long request, const void* arg, int rc, int err);
  std::string on_mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset, void* result, int err);
  std::string on_munmap(void* addr, size_t length, int rc, int err);

  // What calls have told so far: family ("KFD", "RM", "UVM") -> version ("KFD 1.11", "NVIDIA 580.65.06").
  std::map<std::string, std::string> driver_versions() const;

 private:
  std::string fd_text(int fd) const;  // "3 /dev/kfd", or "3" for a descriptor we did not see opened

  mutable std::mutex mu_;
  std::map<int, std::string> paths_;
  std::map<std::string, std::string> versions_;
};

// "= 3", or "= -1 ENOTTY (Inappropriate ioctl for device)".
std::string result_text(long rc, int err);

}  // namespace hcq::trace
