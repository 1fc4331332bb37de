// Pruning (tinygrad's): the captured steps whose results cannot change from one call to the next run once, at
// capture, and are not replayed. A step is kept (replayed every call) when it
//   - touches a variable (an input, an output bound per call, a written input's copy) or is a copy across devices;
//   - reads bytes that a kept step writes, or that the replay rewrites each call (random keys), or that it or a
//     later step writes (the next call would read this call's value: an accumulator);
//   - writes bytes the replay rewrites each call, or bytes that a kept step also writes (an arena slot reused), or that an earlier step reads (it would see
//     the pruned value where the captured call saw the old one).
// What is left reads only fixed bytes no replayed step changes, so its output is the same on every call.
#pragma once

#include <cstdint>
#include <vector>

namespace hcq::fw {

struct ByteRange {
  uint64_t lo = 0, hi = 0;  // [lo, hi)
  bool overlaps(const ByteRange& o) const { return lo < o.hi && o.lo < hi; }
};

struct PruneStep {
  bool always = false;           // kept whatever it reads (see above)
  ByteRange write;               // its fixed output (empty when `always`)
  std::vector<ByteRange> reads;  // its fixed inputs (an assign's output too: it may read it in place)
};

// Per step: true when it can be pruned. `varying`: bytes the replay rewrites each call outside the steps.
std::vector<bool> prunable_steps(const std::vector<PruneStep>& steps, const std::vector<ByteRange>& varying);

}  // namespace hcq::fw
