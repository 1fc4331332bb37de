// Allocator: the LRU cache in front of a device's raw memory. Freed allocations are kept by (size, spec) and handed
// out again, because mapping fresh device memory costs system calls (and on GPUs, page-table updates) while a
// cached allocation costs a map lookup.
#include "hcq/allocator.hpp"

#include <string>
#include <utility>

#include "hcq/backend/capture.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"

namespace hcq {

std::string to_string(const BufferSpec& spec) {
  std::string s;
  auto flag = [&s](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ',';
    s += name;
  };
  flag(spec.uncached, "uncached");
  flag(spec.cpu_access, "cpu_access");
  flag(spec.host, "host");
  flag(spec.nolru, "nolru");
  flag(spec.zero, "zero");
  if (spec.external_ptr != nullptr) {
    if (!s.empty()) s += ',';
    s += "external_ptr=" + hex(reinterpret_cast<uint64_t>(spec.external_ptr));
  }
  return "{" + s + "}";
}

namespace {

// Memory that must never be handed to another owner: nolru by request, zero because a reused block would not be
// zero, external because the caller owns it.
bool cacheable(const BufferSpec& spec) { return !spec.nolru && !spec.zero && spec.external_ptr == nullptr; }

}  // namespace

Allocation Allocator::alloc(uint64_t size, const BufferSpec& spec) {
  if (size == 0) {
    throw InvalidArgument(cat(dev_.name(), ": zero-size allocation requested (spec ", to_string(spec), ")"));
  }
  if (spec.external_ptr == nullptr) {
    MutexLock lock(mu_);
    auto it = cache_.find(Key{size, spec});
    if (it != cache_.end() && !it->second.empty()) {
      Allocation hit = it->second.back();
      it->second.pop_back();
      if (it->second.empty()) cache_.erase(it);
      cached_bytes_ -= size;
      capture::on_alloc(hit, "buffer");
      return hit;
    }
  }

  try {
    Allocation a = dev_.alloc_memory(size, spec);
    capture::on_alloc(a, "buffer");
    return a;
  } catch (const OutOfMemory&) {
    // Fall through: the cache may be holding exactly the memory we lack.
  }
  const uint64_t freed = cached_bytes();
  free_cache();
  try {
    Allocation a = dev_.alloc_memory(size, spec);
    capture::on_alloc(a, "buffer");
    return a;
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(cat(dev_.name(), ": out of memory allocating ", size, " bytes (spec ", to_string(spec), "); ",
                          dev_.bytes_in_use(), " bytes in use, ", cached_bytes(), " cached (emptied ", freed,
                          " cached bytes and retried once); device said: ", e.what()));
  }
}

void Allocator::free(const Allocation& a) {
  if (a.size == 0) return;        // a default Allocation: nothing to give back
  capture::on_free(a, "buffer");  // freed for its user, even when the allocator keeps it cached
  if (cacheable(a.spec)) {
    MutexLock lock(mu_);
    cache_[Key{a.size, a.spec}].push_back(a);
    cached_bytes_ += a.size;
    return;
  }
  // The device may still be reading or writing this memory: wait for it before it can be reused elsewhere.
  // Peer devices that had it mapped reached it only through transfers, which the owner's timeline waits for.
  dev_.synchronize();
  dev_.free_memory(a);
}

void Allocator::free_cache() {
  decltype(cache_) victims;
  {
    MutexLock lock(mu_);
    victims.swap(cache_);
    cached_bytes_ = 0;
  }
  // Cached blocks may still be in use by work submitted before they were freed to the cache.
  dev_.synchronize();
  for (auto& [key, list] : victims) {
    for (const Allocation& a : list) dev_.free_memory(a);
  }
  release_idle_memory();
}

uint64_t Allocator::cached_bytes() const {
  MutexLock lock(mu_);
  return cached_bytes_;
}

}  // namespace hcq
