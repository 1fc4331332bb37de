// Memory: buffer options, what a device allocation is, and side memory blocks.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>

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
  bool uncached = false;         // bypass GPU caches (signals, rings)
  bool cpu_access = false;       // must be mapped on the host
  bool host = false;             // lives in host memory (GTT / sysmem) rather than VRAM
  bool nolru = false;            // never cached on free
  bool zero = false;             // zero-filled on allocation; never cached on free
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

}  // namespace hcq
