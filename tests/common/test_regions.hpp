// Test memory for the simulated engines' test hosts: regions at chosen GPU VAs backed by owned, zeroed buffers, the
// translate() the engines call, and the checked accessors tests poke it with. Thread-safe: the engines' simulator
// threads translate while the test maps, reads and writes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>

namespace hcq::sim::test {

class TestRegions {
 public:
  // Maps [va, va + bytes) to fresh zeroed memory. Regions must not overlap.
  std::byte* map(uint64_t va, uint64_t bytes) {
    std::lock_guard<std::mutex> lk(mu_);
    auto mem = std::make_unique<uint64_t[]>((bytes + 7) / 8);
    std::byte* p = reinterpret_cast<std::byte*>(mem.get());
    std::memset(p, 0, bytes);
    regions_[va] = Region{bytes, std::move(mem)};
    return p;
  }
  void unmap(uint64_t va) {
    std::lock_guard<std::mutex> lk(mu_);
    regions_.erase(va);
  }
  // The host pointer for [va, va + size), or null when any byte lies outside every region.
  std::byte* translate(uint64_t va, uint64_t size) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = regions_.upper_bound(va);
    if (it == regions_.begin()) return nullptr;
    --it;
    const uint64_t off = va - it->first;
    if (off >= it->second.bytes || size > it->second.bytes - off) return nullptr;
    return reinterpret_cast<std::byte*>(it->second.mem.get()) + off;
  }

  template <class T>
  T get(uint64_t va) {  // atomic: the engines' threads write the same words
    return std::atomic_ref<T>(*reinterpret_cast<T*>(must(va, sizeof(T)))).load(std::memory_order_acquire);
  }
  template <class T>
  void set(uint64_t va, T v) {
    std::atomic_ref<T>(*reinterpret_cast<T*>(must(va, sizeof(T)))).store(v, std::memory_order_release);
  }
  void write(uint64_t va, std::span<const uint32_t> words) {
    std::memcpy(must(va, words.size() * 4), words.data(), words.size() * 4);
  }
  std::byte* must(uint64_t va, uint64_t size) {
    std::byte* p = translate(va, size);
    if (!p) throw std::runtime_error("test memory not mapped");
    return p;
  }

  // A GPU clock that advances by 10 on every read, from 1000.
  uint64_t tick() { return clock_.fetch_add(10) + 1000; }

 private:
  struct Region {
    uint64_t bytes;
    std::unique_ptr<uint64_t[]> mem;
  };
  std::mutex mu_;
  std::map<uint64_t, Region> regions_;
  std::atomic<uint64_t> clock_{0};
};

}  // namespace hcq::sim::test
