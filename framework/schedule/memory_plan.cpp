#include "framework/schedule/memory_plan.hpp"

#include <algorithm>
#include <numeric>

namespace hcq::fw {

Placement plan_memory(const std::vector<Lifetime>& buffers, uint64_t align) {
  Placement p;
  p.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Lifetime& b = buffers[i];
    const uint64_t size = (b.bytes + align - 1) / align * align;
    // Candidate offsets: 0 and the end of every conflicting buffer; the lowest that fits wins.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t j : placed) {
      const Lifetime& o = buffers[j];
      if (o.first <= b.last && b.first <= o.last)
        busy.push_back({p.offsets[j], p.offsets[j] + (o.bytes + align - 1) / align * align});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t at = 0;
    for (auto [lo, hi] : busy) {
      if (at + size <= lo) break;
      at = std::max(at, hi);
    }
    p.offsets[i] = at;
    p.arena_bytes = std::max(p.arena_bytes, at + size);
    placed.push_back(i);
  }
  return p;
}

}  // namespace hcq::fw
