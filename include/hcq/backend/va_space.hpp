// The process-wide unified VA reservation that backends map device memory into (see process.hpp).
// Ownership: the process owns the one reservation (process().va) and never gives it back before exit; a range belongs
// to whoever allocated it until freed.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "hcq/backend/os.hpp"

namespace hcq {

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
