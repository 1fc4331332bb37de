// TracingOs: an hcq::Os decorator that logs every open, close, ioctl, mmap and munmap it passes to the Os beneath,
// decoded (drivers/trace/ioctl_decode), with results and the driver version once a call has told it. Wrap a SimOs
// (or real_os()) in it to watch a device's bring-up, allocations, queues and teardown.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "hcq/backend/os.hpp"
#include "trace/tracer.hpp"

namespace hcq::trace {

class TracingOs final : public Os {
 public:
  // Each call's line goes to `sink` (called under no lock of ours, from the calling thread). `inner` outlives
  // nothing here: it is kept alive by this object.
  using Sink = std::function<void(const std::string& line)>;
  TracingOs(std::shared_ptr<Os> inner, Sink sink);

  int open(const char* path, int flags) override;
  int close(int fd) override;
  int ioctl(int fd, unsigned long request, void* arg) override;
  void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) override;
  int munmap(void* addr, size_t length) override;
  std::optional<std::string> read_file(const std::string& path) override { return inner_->read_file(path); }
  std::vector<std::string> list_dir(const std::string& path) override { return inner_->list_dir(path); }
  int eventfd(unsigned initval, int flags) override { return inner_->eventfd(initval, flags); }
  void write_doorbell32(volatile uint32_t* where, uint32_t value) override { inner_->write_doorbell32(where, value); }
  void write_doorbell64(volatile uint64_t* where, uint64_t value) override { inner_->write_doorbell64(where, value); }

  Os& inner() { return *inner_; }
  const Tracer& tracer() const { return tracer_; }

 private:
  std::shared_ptr<Os> inner_;
  Sink sink_;
  Tracer tracer_;
};

}  // namespace hcq::trace
