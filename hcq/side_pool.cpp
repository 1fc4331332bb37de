// Side memory for queues: sub-allocation of host-visible device memory with timeline-deferred reuse, so a kernarg
// block is never rewritten while a submission that reads it may still be in flight.
#include "side_pool.hpp"

#include <algorithm>
#include <bit>

#include "hcq/error.hpp"

namespace hcq {
namespace {

constexpr uint64_t kMinAlign = 16;
constexpr uint64_t kChunkGranule = 64 * 1024;

uint64_t align_up(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

}  // namespace

SideBlock Device::SidePool::alloc(uint64_t size, uint64_t align) {
  if (!std::has_single_bit(align) || align > kMinChunk)
    throw InvalidArgument(cat(dev.name(), ": side memory alignment ", align, " is not a power of two up to ", kMinChunk));
  if (size > (uint64_t{1} << 40))
    throw InvalidArgument(cat(dev.name(), ": side memory block of ", size, " bytes is absurd"));
  align = std::max(align, kMinAlign);
  size = align_up(std::max<uint64_t>(size, 1), kMinAlign);

  std::lock_guard lock(mu);
  reclaim_passed(dev.timeline_signal().value());
  SideBlock block;
  if (!carve(size, align, block)) {
    add_chunk(size + align);
    if (!carve(size, align, block))
      throw Error(cat(dev.name(), ": side memory: a fresh chunk did not fit ", size, " bytes"));  // a bug of ours
  }
  return block;
}

void Device::SidePool::free(const SideBlock& b) {
  if (b.size == 0) return;  // a default (never allocated) block
  std::lock_guard lock(mu);
  auto chunk = chunks.upper_bound(b.va);
  if (chunk == chunks.begin() || b.va + b.size > std::prev(chunk)->first + std::prev(chunk)->second.size)
    throw InvalidArgument(cat(dev.name(), ": free_side of ", hex(b.va), " (", b.size,
                              " bytes) which is not side memory of this device"));
  deferred.push_back({dev.timeline_value(), b});
}

void Device::SidePool::release_later(OwnedSignal s) {
  std::lock_guard lock(mu);
  deferred_signals.push_back({dev.timeline_value(), std::move(s)});
}

void Device::SidePool::reclaim_all() {
  std::lock_guard lock(mu);
  for (const Deferred& d : deferred) put_free(d.block.va, d.block.size);
  deferred.clear();
  deferred_signals.clear();  // releases them
}

void Device::SidePool::release_chunks() {
  std::lock_guard lock(mu);
  for (auto& [va, chunk] : chunks) dev.free_memory(chunk);
  chunks.clear();
  free_ranges.clear();
  deferred.clear();
}

void Device::SidePool::reclaim_passed(uint64_t done) {
  auto passed = std::partition(deferred.begin(), deferred.end(), [done](const Deferred& d) { return d.stamp > done; });
  for (auto it = passed; it != deferred.end(); ++it) put_free(it->block.va, it->block.size);
  deferred.erase(passed, deferred.end());
  std::erase_if(deferred_signals, [done](const DeferredSignal& d) { return d.stamp <= done; });
}

void Device::SidePool::put_free(uint64_t va, uint64_t size) {
  // Merge with neighbours, but never across a chunk start: two chunks may be adjacent in VA yet be separate
  // allocations of the backend.
  auto next = free_ranges.lower_bound(va);
  if (next != free_ranges.end() && next->first == va + size && !chunks.contains(next->first)) {
    size += next->second;
    next = free_ranges.erase(next);
  }
  if (next != free_ranges.begin() && !chunks.contains(va)) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == va) {
      va = prev->first;
      size += prev->second;
      free_ranges.erase(prev);
    }
  }
  free_ranges.emplace(va, size);
}

bool Device::SidePool::carve(uint64_t size, uint64_t align, SideBlock& out) {
  for (auto it = free_ranges.begin(); it != free_ranges.end(); ++it) {
    const uint64_t start = it->first, end = it->first + it->second;
    const uint64_t va = align_up(start, align);
    if (va > end || end - va < size) continue;
    free_ranges.erase(it);
    if (va > start) free_ranges.emplace(start, va - start);
    if (va + size < end) free_ranges.emplace(va + size, end - (va + size));
    out = SideBlock{reinterpret_cast<std::byte*>(va), va, size};  // unified VA: host address == device address
    return true;
  }
  return false;
}

void Device::SidePool::add_chunk(uint64_t min_size) {
  BufferSpec spec;
  spec.cpu_access = true;
  spec.nolru = true;
  Allocation a = dev.alloc_memory(std::max(kMinChunk, align_up(min_size, kChunkGranule)), spec);
  if (a.host_ptr() == nullptr) {
    dev.free_memory(a);
    throw Error(cat(dev.name(), ": side memory chunk at ", hex(a.va), " is not host-visible despite cpu_access"));
  }
  chunks.emplace(a.va, a);
  free_ranges.emplace(a.va, a.size);
}

}  // namespace hcq
