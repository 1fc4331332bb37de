// The memory plan (framework.md, contract 8): temporaries live from the step that writes them to the last step
// that reads them; each device gets one arena where two temporaries alive at the same time never overlap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace hcq::fw {

struct Lifetime {
  uint64_t bytes;
  size_t first, last;  // step positions, inclusive
};

struct Placement {
  std::vector<uint64_t> offsets;  // per lifetime
  uint64_t arena_bytes = 0;
};

// Largest first; each at the lowest aligned offset that overlaps no placed buffer whose lifetime overlaps its own.
Placement plan_memory(const std::vector<Lifetime>& buffers, uint64_t align = 128);

}  // namespace hcq::fw
