// Per-thread caches of heap blocks for the queue builders: a fresh HWQueue per eager launch (with its word vector,
// packet starts, side blocks) must not cost a round of malloc/free each time. glibc's own per-thread cache keeps
// only 7 blocks per size, which a burst of queues (a graph build, a batch of launches) overflows.
// Lifetime: one cache per thread, emptied when the thread exits.
#pragma once

#include <cstddef>
#include <vector>

#include "hcq/backend/sanitizer.hpp"

namespace hcq {

// Off under ASan, so that a use after free of a queue or of its words is still caught.
inline constexpr bool kCacheHeapBlocks = !kAddressSanitizer;

// Emptied vectors that keep their capacity, for reuse by the next queue built on this thread.
template <class T>
class VectorCache {
 public:
  static constexpr size_t kMaxVectors = 128;
  static constexpr size_t kMaxBytes = 64 * 1024;  // a larger vector goes back to the heap

  // An empty vector with room for at least `capacity` elements.
  static std::vector<T> take(size_t capacity) {
    std::vector<T> v;
    if (std::vector<std::vector<T>>* c = cache(); c != nullptr && !c->empty()) {
      v = std::move(c->back());
      c->pop_back();
    }
    v.reserve(capacity);
    return v;
  }

  // Takes `v`'s buffer into the cache (or frees it); `v` is left empty.
  static void give(std::vector<T>& v) {
    std::vector<std::vector<T>>* c = cache();
    if (c != nullptr && v.capacity() != 0 && v.capacity() * sizeof(T) <= kMaxBytes && c->size() < kMaxVectors) {
      v.clear();
      c->push_back(std::move(v));
      return;
    }
    std::vector<T>().swap(v);
  }

 private:
  // This thread's cache; null under ASan, and once the thread's cache is destroyed (at thread or process exit a
  // queue may still be destroyed later, e.g. by a static device registry).
  static std::vector<std::vector<T>>* cache() {
    if constexpr (!kCacheHeapBlocks) return nullptr;
    thread_local bool destroyed = false;  // trivially destructible: readable after `holder` is gone
    struct Holder {
      std::vector<std::vector<T>> vectors;
      bool& destroyed;
      ~Holder() { destroyed = true; }
    };
    thread_local Holder holder{{}, destroyed};
    return destroyed ? nullptr : &holder.vectors;
  }
};

}  // namespace hcq
