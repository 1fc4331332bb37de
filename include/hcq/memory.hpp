// Memory: the process-wide unified VA space, buffer options, and what a device allocation is.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <mutex>

#include "hcq/os.hpp"

namespace hcq {

// Host-visible device memory for kernel arguments (and other side data a queue points at). Freed blocks are held
// until the timeline passes the value current at free time, then reused.
struct SideBlock {
  std::byte* host = nullptr;
  uint64_t va = 0;
  uint64_t size = 0;
};


class Device;

// Options of an allocation (the LRU cache keys on size + these).
struct BufferSpec {
  bool uncached = false;    // bypass GPU caches (signals, rings)
  bool cpu_access = false;  // must be mapped on the host
  bool host = false;        // lives in host memory (GTT / sysmem) rather than VRAM
  bool nolru = false;       // never cached on free
  bool zero = false;        // zero-filled on allocation; never cached on free
  void* external_ptr = nullptr;  // wrap memory the caller owns; never cached, never freed by us
  auto operator<=>(const BufferSpec&) const = default;
};

// One device allocation. `va` is the same on the host and on every device it is mapped to.
struct Allocation {
  uint64_t va = 0;
  uint64_t size = 0;
  BufferSpec spec;
  Device* device = nullptr;
  bool host_mapped = false;  // the host may read/write [va, va+size)
  uint64_t handle = 0;       // backend's own (KFD handle, RM handle, ...)
  void* host_ptr() const { return host_mapped ? reinterpret_cast<void*>(va) : nullptr; }
};

// The one process-wide VA reservation. Ranges handed out here are reserved (PROT_NONE) until a backend maps them
// with MAP_FIXED; freeing returns them to the reservation. Thread-safe.
class VaSpace {
 public:
  VaSpace(Os& os, uint64_t size);
  ~VaSpace();
  VaSpace(const VaSpace&) = delete;
  VaSpace& operator=(const VaSpace&) = delete;

  // An aligned range; throws OutOfMemory when the reservation is full.
  uint64_t alloc(uint64_t size, uint64_t align = 4096);
  // Puts the range back (re-reserving it PROT_NONE). Throws InvalidArgument for a range it did not hand out.
  void free(uint64_t va, uint64_t size);
  bool contains(uint64_t va) const { return va >= base_ && va < base_ + size_; }
  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  uint64_t bytes_in_use() const;

 private:
  Os& os_;
  uint64_t base_ = 0, size_ = 0;
  mutable std::mutex mu_;
  std::map<uint64_t, uint64_t> free_;  // start -> length, coalesced
  std::map<uint64_t, uint64_t> used_;  // start -> length
  uint64_t in_use_ = 0;                // sum of used_ lengths
};

}  // namespace hcq
