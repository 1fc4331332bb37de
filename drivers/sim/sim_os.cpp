// Routing of the OS seam between simulated drivers and the real OS.
#include "sim/sim_os.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

namespace hcq::sim {

SimOs::SimOs(std::vector<std::shared_ptr<SimDriver>> drivers, Os& fallback)
    : drivers_(std::move(drivers)), fallback_(fallback) {
  for (const auto& d : drivers_) d->attach(*this);
}

SimOs::~SimOs() {
  std::unique_lock lock(mu_);
  for (auto& [fd, f] : files_) {
    f.driver->close(f.file);
    ::close(fd);
  }
  files_.clear();
}

SimDriver* SimOs::driver_for(std::string_view path) const {
  for (const auto& d : drivers_)
    if (d->handles_path(path)) return d.get();
  return nullptr;
}

std::optional<SimOs::OpenFile> SimOs::lookup(int fd) const {
  std::shared_lock lock(mu_);
  auto it = files_.find(fd);
  if (it == files_.end()) return std::nullopt;
  return it->second;
}

int SimOs::open(const char* path, int flags) {
  if (path == nullptr) {
    errno = EFAULT;
    return -1;
  }
  SimDriver* d = driver_for(path);
  if (d == nullptr) return fallback_.open(path, flags);
  const int file = d->open(path, flags);
  if (file < 0) {
    errno = -file;
    return -1;
  }
  // The placeholder gives the simulated file a descriptor number no real file can have at the same time.
  const int fd = ::memfd_create("hcq-sim-file", MFD_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    d->close(file);
    errno = err;
    return -1;
  }
  std::unique_lock lock(mu_);
  files_[fd] = OpenFile{d, file};
  return fd;
}

int SimOs::close(int fd) {
  std::optional<OpenFile> f;
  {
    std::unique_lock lock(mu_);
    auto it = files_.find(fd);
    if (it != files_.end()) {
      f = it->second;
      files_.erase(it);
    }
  }
  if (!f) return fallback_.close(fd);
  f->driver->close(f->file);
  return ::close(fd);
}

int SimOs::ioctl(int fd, unsigned long request, void* arg) {
  const std::optional<OpenFile> f = lookup(fd);
  if (!f) return fallback_.ioctl(fd, request, arg);
  const int rc = f->driver->ioctl(f->file, request, arg);
  if (rc < 0) {
    errno = -rc;
    return -1;
  }
  return rc;
}

void* SimOs::mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  // MAP_FIXED replaces whatever was mapped there, as the kernel does: the drivers hear of that as an unmap (a
  // buffer's host mapping replaced by a PROT_NONE reservation is no longer the process's view of the buffer).
  if ((flags & MAP_FIXED) != 0 && addr != nullptr)
    for (const auto& d : drivers_) d->on_munmap(addr, length);
  const std::optional<OpenFile> f = fd >= 0 ? lookup(fd) : std::nullopt;
  if (!f) return fallback_.mmap(addr, length, prot, flags, fd, offset);
  int err = 0;
  void* p = f->driver->mmap(f->file, addr, length, prot, flags, offset, &err);
  if (p == MAP_FAILED) errno = err;
  return p;
}

int SimOs::munmap(void* addr, size_t length) {
  for (const auto& d : drivers_) d->on_munmap(addr, length);
  return fallback_.munmap(addr, length);
}

std::optional<std::string> SimOs::read_file(const std::string& path) {
  if (SimDriver* d = driver_for(path)) return d->read_file(path);
  return fallback_.read_file(path);
}

std::vector<std::string> SimOs::list_dir(const std::string& path) {
  if (SimDriver* d = driver_for(path)) return d->list_dir(path);
  return fallback_.list_dir(path);
}

int SimOs::eventfd(unsigned initval, int flags) { return fallback_.eventfd(initval, flags); }

void SimOs::write_doorbell32(volatile uint32_t* where, uint32_t value) {
  for (const auto& d : drivers_)
    if (d->write_doorbell(where, value, 4)) return;
  *where = value;
}

void SimOs::write_doorbell64(volatile uint64_t* where, uint64_t value) {
  for (const auto& d : drivers_)
    if (d->write_doorbell(where, value, 8)) return;
  *where = value;
}

}  // namespace hcq::sim
