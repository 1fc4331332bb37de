// What a command asks of a simulated GPU's caches. The engines decode it from the packets and methods that carry
// cache actions (AMD: RELEASE_MEM's and ACQUIRE_MEM's cache controls, an AQL packet's release fence scope; NV: the
// host's MEM_OP L2 flushes and membar'd semaphore releases) and pass it to their host, which applies it to the
// GPU's cache model: a kernel's writes reach memory the host and other engines read only through a writeback.
#pragma once

#include <cstdint>

namespace hcq::sim {

enum CacheOps : uint8_t {
  kCacheNone = 0,
  kCacheWriteback = 1u << 0,   // dirty data of the GPU's L2 is written to memory (then visible to the host)
  kCacheInvalidate = 1u << 1,  // the GPU's caches drop what they hold (later reads see memory)
};

}  // namespace hcq::sim
