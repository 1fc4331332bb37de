// What the commands of one CPU device may touch: the memory ranges mapped into it (its allocations, the signal
// pages, external host memory, peers' buffers mapped with map_memory) and the programs loaded on it. This is the CPU
// device's page table: the worker checks every address and program handle a command names against it, and an
// access outside faults the queue instead of crashing the process.
//
// Thread-safety: readers (the workers) hold a shared lock for the whole of a command that touches memory, so a
// range cannot be unmapped (and a program not unloaded) while a command uses it; writers wait for that command.
#pragma once

#include <cstdint>
#include <map>
#include <shared_mutex>
#include <unordered_map>
#include <utility>

#include "host_kernel.hpp"  // KernelEntry

namespace hcq::cpu {

class CpuMappings {
 public:
  // A consistent view for the duration of one command.
  class Reader {
   public:
    explicit Reader(const CpuMappings& m) : m_(m), lock_(m.mu_) {}
    // True when every byte of [addr, addr + size) is mapped (size 0: nothing is touched, always true).
    bool contains(uint64_t addr, uint64_t size) const { return m_.contains_locked(addr, size); }
    // The program loaded under `handle`, or nullptr.
    const KernelEntry* program(uint64_t handle) const;

   private:
    const CpuMappings& m_;
    std::shared_lock<std::shared_mutex> lock_;
  };
  Reader read() const { return Reader(*this); }

  // Ranges are reference-counted: the same range may be added twice (external memory wrapped twice) and stays
  // mapped until removed as often. Removing a range that is not there does nothing.
  void add_range(uint64_t addr, uint64_t size);
  void remove_range(uint64_t addr, uint64_t size);
  void add_program(uint64_t handle, KernelEntry entry);
  void remove_program(uint64_t handle);

 private:
  bool contains_locked(uint64_t addr, uint64_t size) const;
  void rebuild_covered();  // mu_ held exclusively

  mutable std::shared_mutex mu_;
  std::map<std::pair<uint64_t, uint64_t>, uint32_t> ranges_;  // [begin, end) -> reference count
  std::map<uint64_t, uint64_t> covered_;                      // union of ranges_: begin -> end, disjoint
  std::unordered_map<uint64_t, KernelEntry> programs_;
};

}  // namespace hcq::cpu
