// TracingOs: call through, then log. errno is kept as the inner call left it, for the caller.
#include "trace/tracing_os.hpp"

#include <cerrno>

namespace hcq::trace {

TracingOs::TracingOs(std::shared_ptr<Os> inner, Sink sink) : inner_(std::move(inner)), sink_(std::move(sink)) {}

int TracingOs::open(const char* path, int flags) {
  const int rc = inner_->open(path, flags);
  const int err = errno;
  sink_(tracer_.on_open(path, flags, rc, err));
  errno = err;
  return rc;
}

int TracingOs::close(int fd) {
  const int rc = inner_->close(fd);
  const int err = errno;
  sink_(tracer_.on_close(fd, rc, err));
  errno = err;
  return rc;
}

int TracingOs::ioctl(int fd, unsigned long request, void* arg) {
  const int rc = inner_->ioctl(fd, request, arg);
  const int err = errno;
  sink_(tracer_.on_ioctl(fd, request, arg, rc, err));
  errno = err;
  return rc;
}

void* TracingOs::mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  void* result = inner_->mmap(addr, length, prot, flags, fd, offset);
  const int err = errno;
  sink_(tracer_.on_mmap(addr, length, prot, flags, fd, offset, result, err));
  errno = err;
  return result;
}

int TracingOs::munmap(void* addr, size_t length) {
  const int rc = inner_->munmap(addr, length);
  const int err = errno;
  sink_(tracer_.on_munmap(addr, length, rc, err));
  errno = err;
  return rc;
}

}  // namespace hcq::trace
