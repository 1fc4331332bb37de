#include "cpu_mappings.hpp"

#include <mutex>

namespace hcq::cpu {

const KernelEntry* CpuMappings::Reader::program(uint64_t handle) const {
  auto it = m_.programs_.find(handle);
  return it == m_.programs_.end() ? nullptr : &it->second;
}

bool CpuMappings::contains_locked(uint64_t addr, uint64_t size) const {
  if (size == 0) return true;
  const uint64_t end = addr + size;
  if (end < addr) return false;  // wraps around the address space
  auto it = covered_.upper_bound(addr);
  if (it == covered_.begin()) return false;
  --it;
  return it->first <= addr && end <= it->second;
}

void CpuMappings::add_range(uint64_t addr, uint64_t size) {
  if (size == 0 || addr + size < addr) return;
  std::unique_lock lock(mu_);
  ++ranges_[{addr, addr + size}];
  rebuild_covered();
}

void CpuMappings::remove_range(uint64_t addr, uint64_t size) {
  std::unique_lock lock(mu_);
  auto it = ranges_.find({addr, addr + size});
  if (it == ranges_.end()) return;
  if (--it->second == 0) ranges_.erase(it);
  rebuild_covered();
}

// Changes are rare (allocation, free) and lookups constant (every command), so the union is recomputed on change
// and kept as disjoint intervals: a lookup is one tree search.
void CpuMappings::rebuild_covered() {
  covered_.clear();
  uint64_t begin = 0, end = 0;
  bool open = false;
  for (const auto& [range, count] : ranges_) {
    if (open && range.first <= end) {
      end = std::max(end, range.second);
      continue;
    }
    if (open) covered_.emplace(begin, end);
    begin = range.first;
    end = range.second;
    open = true;
  }
  if (open) covered_.emplace(begin, end);
}

void CpuMappings::add_program(uint64_t handle, KernelEntry entry) {
  std::unique_lock lock(mu_);
  programs_[handle] = entry;
}

void CpuMappings::remove_program(uint64_t handle) {
  std::unique_lock lock(mu_);
  programs_.erase(handle);
}

}  // namespace hcq::cpu
