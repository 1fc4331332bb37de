#include "framework/jit/prune.hpp"

#include <algorithm>

namespace hcq::fw {

std::vector<bool> prunable_steps(const std::vector<PruneStep>& steps, const std::vector<ByteRange>& varying) {
  const size_t n = steps.size();
  std::vector<bool> kept(n);
  std::vector<ByteRange> changing = varying;  // grows with each kept step's output
  auto hits = [](const ByteRange& r, const std::vector<ByteRange>& set) {
    return std::ranges::any_of(set, [&](const ByteRange& s) { return r.overlaps(s); });
  };
  auto keep = [&](size_t i) {
    kept[i] = true;
    if (steps[i].write.hi > steps[i].write.lo) changing.push_back(steps[i].write);
  };
  for (size_t i = 0; i < n; ++i)
    if (steps[i].always) keep(i);
  // To a fixed point: keeping a step changes bytes others read or write.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (kept[i]) continue;
      const PruneStep& s = steps[i];
      bool k =
          hits(s.write, varying) || std::ranges::any_of(s.reads, [&](const ByteRange& r) { return hits(r, changing); });
      for (size_t j = 0; j < n && !k; ++j) {
        // Reading what it or a later step writes: the next call would read this call's value (an accumulator).
        if (j >= i && hits(steps[j].write, s.reads)) k = true;
        if (j == i) continue;
        if (kept[j] && steps[j].write.overlaps(s.write)) k = true;
        if (j < i && hits(s.write, steps[j].reads)) k = true;
      }
      if (k) {
        keep(i);
        changed = true;
      }
    }
  }
  std::vector<bool> prunable(n);
  for (size_t i = 0; i < n; ++i) prunable[i] = !kept[i];
  return prunable;
}

}  // namespace hcq::fw
