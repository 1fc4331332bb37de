// The process-wide unified VA reservation: one PROT_NONE mapping carved first-fit into aligned ranges.
#include <sys/mman.h>

#include <bit>
#include <cerrno>

#include "hcq/backend/align.hpp"
#include "hcq/backend/va_space.hpp"
#include "hcq/error.hpp"
#include "va_layout.hpp"

namespace hcq {
namespace {

constexpr uint64_t kPage = 4096;
constexpr int kReserveFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;

}  // namespace

VaSpace::VaSpace(Os& os, uint64_t size) : os_(os) {
  if (size == 0 || size % kPage != 0)
    throw InvalidArgument(cat("VA space size ", size, " must be a non-zero multiple of ", kPage));
  void* base = os_.mmap(reinterpret_cast<void*>(va_layout::kPreferredBase), size, PROT_NONE, kReserveFlags, -1, 0);
  if (base == MAP_FAILED) throw OsError(cat("reserving ", size >> 20, " MiB of VA space"), errno);
  base_ = reinterpret_cast<uint64_t>(base);
  size_ = size;
  free_.emplace(base_, size_);
}

VaSpace::~VaSpace() { os_.munmap(reinterpret_cast<void*>(base_), size_); }

uint64_t VaSpace::alloc(uint64_t size, uint64_t align) {
  if (size == 0) throw InvalidArgument("VA space: allocation of 0 bytes");
  if (!std::has_single_bit(align)) throw InvalidArgument(cat("VA space: alignment ", align, " is not a power of two"));
  if (align < kPage) align = kPage;
  if (size > size_) throw OutOfMemory(cat("VA space: ", size, " bytes asked, the reservation holds ", size_));
  size = align_up(size, kPage);

  std::lock_guard lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const uint64_t start = it->first, end = it->first + it->second;
    const uint64_t va = align_up(start, align);
    if (va < start || va > end || end - va < size) continue;  // va < start: alignment overflowed
    free_.erase(it);
    if (va > start) free_.emplace(start, va - start);
    if (va + size < end) free_.emplace(va + size, end - (va + size));
    used_.emplace(va, size);
    in_use_ += size;
    return va;
  }
  throw OutOfMemory(cat("VA space full: ", size, " bytes (aligned to ", hex(align), ") asked, ", size_ - in_use_,
                        " of ", size_, " bytes free but fragmented into ", free_.size(), " ranges"));
}

void VaSpace::free(uint64_t va, uint64_t size) {
  size = align_up(size, kPage);
  std::lock_guard lock(mu_);
  auto used = used_.find(va);
  if (used == used_.end())
    throw InvalidArgument(cat("VA space: free of ", hex(va), " which was not handed out (double free?)"));
  if (used->second != size)
    throw InvalidArgument(
        cat("VA space: free of ", hex(va), " with size ", size, " but ", used->second, " bytes were handed out there"));
  // Re-reserve PROT_NONE over whatever a backend mapped here, so a stale host pointer faults instead of reading
  // memory that the range's next owner will use.
  void* p = os_.mmap(reinterpret_cast<void*>(va), size, PROT_NONE, kReserveFlags | MAP_FIXED, -1, 0);
  if (p == MAP_FAILED) throw OsError(cat("VA space: re-reserving ", hex(va), " (", size, " bytes)"), errno);
  used_.erase(used);
  in_use_ -= size;

  // Insert and coalesce with the neighbours on either side.
  uint64_t start = va, length = size;
  auto next = free_.lower_bound(va);
  if (next != free_.end() && next->first == va + size) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == va) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(start, length);
}

uint64_t VaSpace::bytes_in_use() const {
  std::lock_guard lock(mu_);
  return in_use_;
}

}  // namespace hcq
