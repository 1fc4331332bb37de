// GPU memory as a simulated engine sees it: every access bounds-checked through its host's translate() (the KFD
// simulator's QueueHost, the RM simulator's ChannelHost), atomic where the host may be polling the same words
// (signals, semaphores, pointers). A failed access returns false (or null) so the caller can fault with the address.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace hcq::sim {

// Host: anything with `std::byte* translate(uint64_t va, uint64_t size)` (null when any byte is unmapped).
template <class Host>
class GuestMemory {
 public:
  explicit GuestMemory(Host& host) : host_(host) {}

  Host& host() { return host_; }
  std::byte* ptr(uint64_t va, uint64_t size) { return size == 0 ? nullptr : host_.translate(va, size); }

  // Atomic loads and stores of naturally aligned words; a misaligned word is copied plainly (with a fence).
  template <class T>
  bool load(uint64_t va, T& out) {
    std::byte* p = ptr(va, sizeof(T));
    if (!p || reinterpret_cast<uintptr_t>(p) % alignof(T)) return p ? (std::memcpy(&out, p, sizeof(T)), true) : false;
    out = std::atomic_ref<T>(*reinterpret_cast<T*>(p)).load(std::memory_order_acquire);
    return true;
  }
  template <class T>
  bool store(uint64_t va, T value) {
    std::byte* p = ptr(va, sizeof(T));
    if (!p) return false;
    if (reinterpret_cast<uintptr_t>(p) % alignof(T)) {
      std::memcpy(p, &value, sizeof(T));
      std::atomic_thread_fence(std::memory_order_release);
    } else {
      std::atomic_ref<T>(*reinterpret_cast<T*>(p)).store(value, std::memory_order_release);
    }
    return true;
  }
  // Plain copies of dwords out of GPU memory (rings, indirect buffers, pushbuffer segments).
  bool read_words(uint64_t va, uint32_t* out, size_t n) {
    std::byte* p = ptr(va, n * 4);
    if (!p) return false;
    std::memcpy(out, p, n * 4);
    return true;
  }
  // A linear copy (overlap allowed); ranges over several mappings are copied page by page. On failure `bad` is the
  // first address that is not mapped.
  bool copy(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t& bad) {
    if (bytes == 0) return true;
    std::byte* d = ptr(dst, bytes);
    std::byte* s = ptr(src, bytes);
    if (d && s) {
      std::memmove(d, s, bytes);
      std::atomic_thread_fence(std::memory_order_release);
      return true;
    }
    // A range over several buffers adjacent in VA: page by page, each piece within one mapping. Overlapping ranges
    // lie in one buffer and took the path above, so the order here does not matter.
    constexpr uint64_t kPage = 4096;
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t n = std::min({bytes - done, kPage - (dst + done) % kPage, kPage - (src + done) % kPage});
      std::byte* sp = ptr(src + done, n);
      if (!sp) {
        bad = src + done;
        return false;
      }
      std::byte* dp = ptr(dst + done, n);
      if (!dp) {
        bad = dst + done;
        return false;
      }
      std::memmove(dp, sp, n);
      done += n;
    }
    std::atomic_thread_fence(std::memory_order_release);
    return true;
  }

 protected:
  Host& host_;
};

}  // namespace hcq::sim
