// Fixed-size block cache (heap_cache.hpp): per thread, one free list per 64-byte size class up to 4 KiB.
#include "hcq/backend/heap_cache.hpp"
#include "hcq/hw_queue.hpp"

#include <array>
#include <new>

namespace hcq {
namespace {

constexpr size_t kGranule = 64;
constexpr size_t kMaxBlock = 4096;
constexpr size_t kMaxPerClass = 128;

size_t size_class(size_t bytes) { return (bytes + kGranule - 1) / kGranule; }

// Blocks are cached by size class but allocated with the class's full size, so any block of a class fits any
// request of that class.
struct BlockLists {
  std::array<std::vector<void*>, kMaxBlock / kGranule + 1> lists;
  bool& destroyed;
  ~BlockLists() {
    destroyed = true;
    for (std::vector<void*>& l : lists)
      for (void* p : l) ::operator delete(p);
  }
};

// This thread's lists; null once they are destroyed (a queue may still be destroyed after that at thread or
// process exit, e.g. by a static device registry).
BlockLists* lists() {
  thread_local bool destroyed = false;  // trivially destructible: readable after `l` is gone
  thread_local BlockLists l{{}, destroyed};
  return destroyed ? nullptr : &l;
}

}  // namespace

void* take_block(size_t bytes) {
  const size_t c = size_class(bytes);
  BlockLists* bl = kCacheHeapBlocks && c * kGranule <= kMaxBlock ? lists() : nullptr;
  if (bl == nullptr) return ::operator new(bytes);
  std::vector<void*>& l = bl->lists[c];
  if (!l.empty()) {
    void* p = l.back();
    l.pop_back();
    return p;
  }
  return ::operator new(c * kGranule);
}

void give_block(void* p, size_t bytes) noexcept {
  const size_t c = size_class(bytes);
  BlockLists* bl = kCacheHeapBlocks && c * kGranule <= kMaxBlock ? lists() : nullptr;
  if (bl != nullptr) {
    std::vector<void*>& l = bl->lists[c];
    if (l.size() < kMaxPerClass) {
      try {
        l.push_back(p);
        return;
      } catch (const std::bad_alloc&) {
        // the list cannot grow: free the block instead
      }
    }
  }
  ::operator delete(p);
}

}  // namespace hcq
