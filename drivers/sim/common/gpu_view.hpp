// A simulated GPU's page tables made real for its kernels: a mirror of the process's unified VA range in which exactly
// the memory mapped on that GPU is mapped, with that GPU's permissions, at the same offset. A kernel's host twin runs
// on mirror addresses, so its every load, store and atomic is checked by the CPU's MMU against this GPU's mappings:
// memory another GPU maps, memory the host maps and unmapped VA all fault (guarded_run.hpp turns the SIGSEGV into the
// GPU's page fault with the address and the access), a store to a page mapped read-only faults as a write.
//
// How: one PROT_NONE reservation the size of the unified VA (address space only), and for each mapping an mmap of
// the memory's memfd (MemfdBacking) at the mirror address, MAP_SHARED: the very bytes the host and the engines see.
// Memory without an fd (userptr / OS-descriptor host pages) cannot be mapped twice and is not mirrored; twins reach it
// through the driver's translate(), checked at its first byte only (docs/architecture.md, "The simulated GPUs' MMU").
//
// Cost: one mmap per GPU mapping made or removed; nothing per access (a twin runs at native speed).
//
// Thread-safe: mappings change under a lock while kernels run on other mappings; a kernel touching memory that is
// being unmapped faults, as it would on hardware.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <vector>

namespace hcq::sim {

class GpuView {
 public:
  // One GPU mapping: [va, va + size) shows `fd` from `offset` on.
  struct Range {
    uint64_t va = 0, size = 0;
    int fd = -1;
    uint64_t offset = 0;
    bool writable = true, executable = false;
    bool operator==(const Range&) const = default;
  };

  // A mirror of GPU VA [base, base + size), nothing mapped yet. Throws OutOfMemory when the address space is refused.
  GpuView(uint64_t base, uint64_t size);
  // A mirror of the process's unified VA range (hcq::process().va), where the backends place GPU memory.
  static std::unique_ptr<GpuView> of_unified_va();
  ~GpuView();
  GpuView(const GpuView&) = delete;
  GpuView& operator=(const GpuView&) = delete;

  uint64_t base() const { return base_; }
  uint64_t size() const { return size_; }
  bool covers(uint64_t va, uint64_t bytes) const {
    return va >= base_ && bytes <= size_ && va - base_ <= size_ - bytes;
  }
  // The mirror address of `va` (covers(va, 1) must hold), and back.
  std::byte* at(uint64_t va) const { return mirror_ + (va - base_); }
  bool in_mirror(const void* p) const {
    const auto a = reinterpret_cast<uintptr_t>(p), m = reinterpret_cast<uintptr_t>(mirror_);
    return a >= m && a - m < size_;
  }
  uint64_t va_of(const void* p) const {
    return base_ + (reinterpret_cast<uintptr_t>(p) - reinterpret_cast<uintptr_t>(mirror_));
  }

  // Shows `r`, replacing whatever the mirror showed there. A range not covered, not page aligned or without an fd is
  // not mirrored (false); so is one the OS refuses to map.
  bool map(const Range& r);
  // Stops showing [va, va + size) (page aligned; what lies outside the mirror is ignored).
  void unmap(uint64_t va, uint64_t size);
  // Makes the mirror show exactly `ranges`, remapping only what differs from what it shows now (a driver whose GPU
  // mappings change in many places re-derives the whole list after each change). Overlapping ranges: the later wins
  // where they start at the same VA; a range overlapping an earlier one otherwise is left out.
  void show(const std::vector<Range>& ranges);

  // The mapping that holds `va`, if the mirror shows one.
  std::optional<Range> find(uint64_t va) const;

 private:
  bool map_locked(const Range& r);
  void unmap_locked(uint64_t va, uint64_t size);

  uint64_t base_ = 0, size_ = 0;
  std::byte* mirror_ = nullptr;
  mutable std::shared_mutex mu_;
  std::map<uint64_t, Range> shown_;  // va -> what the mirror maps there
};

}  // namespace hcq::sim
