// Side memory for queues: sub-allocation of host-visible device memory with timeline-deferred reuse, so a kernarg
// block is never rewritten while a submission that reads it may still be in flight.
#include "side_pool.hpp"

#include <algorithm>

#include "hcq/backend/align.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/error.hpp"

namespace hcq {
namespace {

constexpr uint64_t kMinAlign = 16;
constexpr uint64_t kChunkGranule = 64 * 1024;

}  // namespace

// Inline (alloc is its only caller): a launch's kernarg or QMD block is a few compares and a store.
inline bool Device::SidePool::bump(uint64_t size, uint64_t align, SideBlock& out) {
  const uint64_t taken = align_up(size, align);
  uint64_t va = align_up(bump_cur_, align);
  if (bump_end_ == 0 || va + taken > bump_end_) [[unlikely]] {
    if (!refill_bump()) return false;
    va = bump_cur_;  // a fresh range starts kBumpAlign-aligned, and align <= kBumpAlign
  }
  if (va > bump_cur_) [[unlikely]]
    put_free(bump_cur_, va - bump_cur_);  // after a block of smaller alignment
  bump_cur_ = va + taken;
  out = SideBlock{reinterpret_cast<std::byte*>(va), va, taken};  // unified VA: host address == device address
  return true;
}

SideBlock Device::SidePool::alloc(uint64_t size, uint64_t align) {
  // (align & (align - 1)) rather than std::has_single_bit: without -mpopcnt that is a libgcc call per allocation.
  if (align == 0 || (align & (align - 1)) != 0 || align > kMinChunk || size > kMaxBlock) [[unlikely]]
    throw_bad_request(size, align);
  align = std::max(align, kMinAlign);
  size = align_up(std::max<uint64_t>(size, 1), kMinAlign);

  std::lock_guard lock(mu);
  // The timeline is read only when something waits for it (the common case on a launch path between syncs: no).
  if (deferred_head < deferred.size() || signals_head < deferred_signals.size())
    reclaim_passed(dev.timeline_signal().value());
  // The common case, a small block from the bump front, in line; carving and growing out of line.
  SideBlock block;
  if (size <= kBumpMaxBlock && align <= kBumpAlign && bump(size, align, block)) return block;
  return alloc_locked(size, align);
}

void Device::SidePool::throw_bad_request(uint64_t size, uint64_t align) const {
  if (align == 0 || (align & (align - 1)) != 0 || align > kMinChunk)
    throw InvalidArgument(
        cat(dev.name(), ": side memory alignment ", align, " is not a power of two up to ", kMinChunk));
  throw InvalidArgument(cat(dev.name(), ": side memory block of ", size, " bytes is absurd"));
}

SideBlock Device::SidePool::alloc_locked(uint64_t size, uint64_t align) {
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
    throw InvalidArgument(
        cat(dev.name(), ": free_side of ", hex(b.va), " (", b.size, " bytes) which is not side memory of this device"));
  // Stamps must not decrease (reclaim looks only at the front). Waiting longer than needed is always safe.
  uint64_t stamp = dev.timeline_value();
  if (deferred.size() > deferred_head) stamp = std::max(stamp, deferred.back().stamp);
  deferred.push_back({stamp, b});
}

void Device::SidePool::release_later(OwnedSignal s) {
  std::lock_guard lock(mu);
  uint64_t stamp = dev.timeline_value();
  if (deferred_signals.size() > signals_head) stamp = std::max(stamp, deferred_signals.back().stamp);
  deferred_signals.push_back({stamp, std::move(s)});
}

void Device::SidePool::reclaim_all() {
  std::lock_guard lock(mu);
  for (size_t i = deferred_head; i < deferred.size(); ++i) put_free(deferred[i].block.va, deferred[i].block.size);
  deferred.clear();
  deferred_head = 0;
  deferred_signals.clear();  // releases them
  signals_head = 0;
}

void Device::SidePool::release_chunks() {
  std::lock_guard lock(mu);
  for (auto& [va, chunk] : chunks) {
    capture::on_free(chunk, "side");
    dev.free_memory(chunk);
  }
  chunks.clear();
  free_ranges.clear();
  bump_cur_ = bump_end_ = 0;
  deferred.clear();
  deferred_head = 0;
}

namespace {

// Forgets a FIFO's reclaimed prefix: at once when it is all reclaimed, else once it is the larger half (amortized
// O(1) per entry, and the vector's capacity is kept for the next round).
template <class T>
void drop_reclaimed(std::vector<T>& fifo, size_t& head) {
  if (head == fifo.size()) {
    fifo.clear();
    head = 0;
  } else if (head >= 64 && head * 2 >= fifo.size()) {
    fifo.erase(fifo.begin(), fifo.begin() + static_cast<std::ptrdiff_t>(head));
    head = 0;
  }
}

}  // namespace

void Device::SidePool::reclaim_passed(uint64_t done) {
  if (deferred_head < deferred.size() && deferred[deferred_head].stamp <= done) {
    for (; deferred_head < deferred.size() && deferred[deferred_head].stamp <= done; ++deferred_head)
      put_free(deferred[deferred_head].block.va, deferred[deferred_head].block.size);
    drop_reclaimed(deferred, deferred_head);
  }
  reclaim_passed_signals(done);
}

void Device::SidePool::reclaim_passed_signals(uint64_t done) {
  if (signals_head == deferred_signals.size() || deferred_signals[signals_head].stamp > done) return;
  for (; signals_head < deferred_signals.size() && deferred_signals[signals_head].stamp <= done; ++signals_head)
    deferred_signals[signals_head].signal = OwnedSignal();  // releases it now
  drop_reclaimed(deferred_signals, signals_head);
}

void Device::SidePool::put_free(uint64_t va, uint64_t size) {
  // Merge with neighbours, but never across a chunk start: two chunks may be adjacent in VA yet be separate
  // allocations of the backend. Blocks come back mostly in the order they were carved, so the usual case extends
  // the range just below in place.
  auto next = free_ranges.lower_bound(va);
  const bool merge_next = next != free_ranges.end() && next->first == va + size && !chunks.contains(next->first);
  auto prev = next == free_ranges.begin() ? free_ranges.end() : std::prev(next);
  if (prev != free_ranges.end() && prev->first + prev->second == va && !chunks.contains(va)) {
    prev->second += size;
    if (merge_next) {
      prev->second += next->second;
      free_ranges.erase(next);
    }
    return;
  }
  if (merge_next) {
    auto after = std::next(next);
    auto node = free_ranges.extract(next);  // re-keyed in place: no allocation
    node.key() = va;
    node.mapped() += size;
    free_ranges.insert(after, std::move(node));
    return;
  }
  free_ranges.emplace_hint(next, va, size);
}

bool Device::SidePool::carve(uint64_t size, uint64_t align, SideBlock& out) {
  // Next fit: search from where the last block ended, then wrap around. Blocks come back about in the order they
  // were carved (stamps only grow), so the space after the last block is usually free, and the small alignment
  // gaps between live blocks are not stepped over on every carve.
  for (auto it = free_ranges.lower_bound(rover_); it != free_ranges.end(); ++it)
    if (carve_from(it, size, align, out)) return true;
  for (auto it = free_ranges.begin(); it != free_ranges.end() && it->first < rover_; ++it)
    if (carve_from(it, size, align, out)) return true;
  return false;
}

bool Device::SidePool::carve_from(std::map<uint64_t, uint64_t>::iterator it, uint64_t size, uint64_t align,
                                  SideBlock& out) {
  const uint64_t start = it->first, end = it->first + it->second;
  const uint64_t va = align_up(start, align);
  if (va > end || end - va < size) return false;
  const uint64_t rest = end - (va + size);
  auto after = std::next(it);
  if (va > start) {
    it->second = va - start;  // the alignment gap keeps the range's node
    if (rest != 0) free_ranges.emplace_hint(after, va + size, rest);
  } else if (rest != 0) {
    auto node = free_ranges.extract(it);  // the rest moves up: re-key the node instead of a new one
    node.key() = va + size;
    node.mapped() = rest;
    free_ranges.insert(after, std::move(node));
  } else {
    free_ranges.erase(it);
  }
  rover_ = va + size;
  out = SideBlock{reinterpret_cast<std::byte*>(va), va, size};  // unified VA: host address == device address
  return true;
}

bool Device::SidePool::refill_bump() {
  retire_bump();
  // Only from free space: when no whole range is left, the block is carved from the holes instead (alloc), and
  // the pool grows only once nothing fits at all. A bump range must never be a reason to add a chunk, or small
  // holes between long-lived blocks would never be reused.
  SideBlock range;
  if (!carve(kBumpBytes, kBumpAlign, range)) return false;
  bump_cur_ = range.va;
  bump_end_ = range.va + range.size;
  return true;
}

void Device::SidePool::retire_bump() {
  if (bump_cur_ < bump_end_) put_free(bump_cur_, bump_end_ - bump_cur_);
  bump_cur_ = bump_end_ = 0;
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
  capture::on_alloc(a, "side");
}

}  // namespace hcq
