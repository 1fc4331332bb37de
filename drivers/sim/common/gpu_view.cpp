#include "sim/common/gpu_view.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"

namespace hcq::sim {
namespace {

constexpr uint64_t kPage = 4096;

// Back to reserved address space: no access, no memory.
void reserve_at(std::byte* at, uint64_t size) {
  ::mmap(at, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

}  // namespace

GpuView::GpuView(uint64_t base, uint64_t size) : base_(base), size_(size) {
  if (size == 0 || base % kPage || size % kPage || base + size < base)
    throw InvalidArgument(cat("GPU view of ", hex(base), " (+", size, " bytes): not a page-aligned range"));
  void* p = ::mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw OutOfMemory(cat("simulated GPU: no address space for the mirror of its page tables (", size,
                          " bytes): ", std::strerror(errno)));
  mirror_ = static_cast<std::byte*>(p);
}

std::unique_ptr<GpuView> GpuView::of_unified_va() {
  const VaSpace& va = process().va;
  return std::make_unique<GpuView>(va.base(), va.size());
}

GpuView::~GpuView() { ::munmap(mirror_, size_); }

bool GpuView::map_locked(const Range& r) {
  if (r.fd < 0 || r.size == 0 || r.va % kPage || r.size % kPage || r.offset % kPage || !covers(r.va, r.size))
    return false;
  unmap_locked(r.va, r.size);
  const int prot = PROT_READ | (r.writable ? PROT_WRITE : 0);
  void* p = ::mmap(at(r.va), r.size, prot, MAP_SHARED | MAP_FIXED, r.fd, static_cast<off_t>(r.offset));
  if (p == MAP_FAILED) {
    reserve_at(at(r.va), r.size);
    return false;
  }
  shown_[r.va] = r;
  return true;
}

void GpuView::unmap_locked(uint64_t va, uint64_t size) {
  if (size == 0) return;
  const uint64_t end = va + size;
  // Mappings overlapping [va, end): the parts outside it stay shown, as smaller ranges.
  auto it = shown_.lower_bound(va);
  if (it != shown_.begin() && std::prev(it)->second.va + std::prev(it)->second.size > va) --it;
  while (it != shown_.end() && it->first < end) {
    const Range r = it->second;
    it = shown_.erase(it);
    if (r.va < va) {
      Range head = r;
      head.size = va - r.va;
      shown_[head.va] = head;
    }
    if (r.va + r.size > end) {
      Range tail = r;
      tail.va = end;
      tail.size = r.va + r.size - end;
      tail.offset = r.offset + (end - r.va);
      it = shown_.emplace(tail.va, tail).first;
      ++it;
    }
  }
  const uint64_t lo = std::max(va, base_), hi = std::min(end, base_ + size_);
  if (lo < hi) reserve_at(at(lo), hi - lo);
}

bool GpuView::map(const Range& r) {
  std::unique_lock lock(mu_);
  return map_locked(r);
}

void GpuView::unmap(uint64_t va, uint64_t size) {
  std::unique_lock lock(mu_);
  unmap_locked(va, size);
}

void GpuView::show(const std::vector<Range>& ranges) {
  std::map<uint64_t, Range> want;
  for (const Range& r : ranges) {
    if (r.fd < 0 || !covers(r.va, r.size)) continue;
    want.erase(r.va);  // the later wins where two start at the same VA
    const auto next = want.lower_bound(r.va);
    if (next != want.end() && next->first < r.va + r.size) continue;
    if (next != want.begin() && std::prev(next)->second.va + std::prev(next)->second.size > r.va) continue;
    want[r.va] = r;
  }
  std::unique_lock lock(mu_);
  std::vector<Range> gone;
  for (const auto& [va, r] : shown_) {
    const auto w = want.find(va);
    if (w == want.end() || !(w->second == r)) gone.push_back(r);
  }
  for (const Range& r : gone) unmap_locked(r.va, r.size);
  for (const auto& [va, r] : want) {
    const auto s = shown_.find(va);
    if (s == shown_.end() || !(s->second == r)) map_locked(r);
  }
}

std::optional<GpuView::Range> GpuView::find(uint64_t va) const {
  std::shared_lock lock(mu_);
  auto it = shown_.upper_bound(va);
  if (it == shown_.begin()) return std::nullopt;
  --it;
  if (va - it->second.va >= it->second.size) return std::nullopt;
  return it->second;
}

}  // namespace hcq::sim
