// A memfd and the simulator's own shared mapping of it: a simulated GPU's memory (VRAM, GTT/sysmem, doorbell and
// MMIO pages, USERD). The fd is what the process's mmap() of the buffer maps, so both sides see the same bytes.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace hcq::sim {

struct MemfdBacking {
  int fd = -1;
  std::byte* host = nullptr;
  uint64_t size = 0;

  // `size` bytes of fresh zeroed memory named `name` (for /proc/<pid>/fd), or nullopt when the OS refuses.
  static std::optional<MemfdBacking> make(const char* name, uint64_t size) {
    MemfdBacking b;
    b.size = size;
    b.fd = ::memfd_create(name, MFD_CLOEXEC);
    if (b.fd < 0) return std::nullopt;
    if (::ftruncate(b.fd, static_cast<off_t>(size)) != 0) {
      ::close(b.fd);
      return std::nullopt;
    }
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, b.fd, 0);
    if (p == MAP_FAILED) {
      ::close(b.fd);
      return std::nullopt;
    }
    b.host = static_cast<std::byte*>(p);
    return b;
  }
  // Unmaps and closes; the backing is empty afterwards.
  void release() {
    if (host != nullptr) ::munmap(host, size);
    if (fd >= 0) ::close(fd);
    host = nullptr;
    fd = -1;
  }
};

}  // namespace hcq::sim
