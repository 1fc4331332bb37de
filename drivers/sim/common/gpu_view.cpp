#include "sim/common/gpu_view.hpp"

#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "sim/common/memfd_backing.hpp"

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
  const uint64_t reserved = kGuardBefore + size + kGuardAfter;
  void* p = ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw OutOfMemory(cat("simulated GPU: no address space for the mirror of its page tables (", reserved,
                          " bytes): ", std::strerror(errno)));
  mirror_ = static_cast<std::byte*>(p) + kGuardBefore;
}

std::unique_ptr<GpuView> GpuView::of_unified_va() {
  const VaSpace& va = process().va;
  return std::make_unique<GpuView>(va.base(), std::min(va.size(), kMaxMirrorBytes));
}

GpuView::~GpuView() {
  ::munmap(mirror_ - kGuardBefore, kGuardBefore + size_ + kGuardAfter);
  if (snapshots_) ::munmap(snapshots_, kLines * kPage);
  if (pool_) ::munmap(pool_, kLines * kPage);
  if (pool_fd_ >= 0) ::close(pool_fd_);
}

void GpuView::enable_cache() {
  Lock lock(*this);
  if (cache_) return;
  void* p = ::mmap(nullptr, kLines * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  std::optional<MemfdBacking> pool = MemfdBacking::make("hcq-sim-l2", kLines * kPage);
  if (p == MAP_FAILED || !pool) {
    if (p != MAP_FAILED) ::munmap(p, kLines * kPage);
    throw OutOfMemory("simulated GPU: no memory for its cache model");
  }
  snapshots_ = static_cast<std::byte*>(p);
  pool_fd_ = pool->fd;
  pool_ = pool->host;
  for (uint32_t b = 0; b < kBlocks; ++b) free_blocks_[b] = b;
  nfree_blocks_ = kBlocks;
  is_line_.assign((size_ / kPage + 63) / 64, 0);
  cache_ = true;
}

bool GpuView::map_locked(const Range& r) {
  if (r.fd < 0 || !r.memory || r.size == 0 || r.va % kPage || r.size % kPage || r.offset % kPage ||
      !covers(r.va, r.size))
    return false;
  unmap_locked(r.va, r.size);
  // With the cache, writable pages start clean: read-only until a kernel's first write makes them a line.
  const int prot = PROT_READ | (r.writable && !cache_ ? PROT_WRITE : 0);
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
  writeback_range_locked(va, size);  // dirty lines reach memory before their pages go
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
      tail.memory += end - r.va;
      it = shown_.emplace(tail.va, tail).first;
      ++it;
    }
  }
  const uint64_t lo = std::max(va, base_), hi = std::min(end, base_ + size_);
  if (lo < hi) reserve_at(at(lo), hi - lo);
}

bool GpuView::map(const Range& r) {
  Lock lock(*this);
  return map_locked(r);
}

void GpuView::unmap(uint64_t va, uint64_t size) {
  Lock lock(*this);
  unmap_locked(va, size);
}

void GpuView::show(const std::vector<Range>& ranges) {
  std::map<uint64_t, Range> want;
  for (const Range& r : ranges) {
    if (r.fd < 0 || !r.memory || !covers(r.va, r.size)) continue;
    want.erase(r.va);  // the later wins where two start at the same VA
    const auto next = want.lower_bound(r.va);
    if (next != want.end() && next->first < r.va + r.size) continue;
    if (next != want.begin() && std::prev(next)->second.va + std::prev(next)->second.size > r.va) continue;
    want[r.va] = r;
  }
  Lock lock(*this);
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

const GpuView::Range* GpuView::find_locked(uint64_t va) const {
  auto it = shown_.upper_bound(va);
  if (it == shown_.begin()) return nullptr;
  --it;
  return va - it->second.va < it->second.size ? &it->second : nullptr;
}

std::optional<GpuView::Range> GpuView::find(uint64_t va) const {
  Lock lock(*this);
  const Range* r = find_locked(va);
  return r ? std::optional<Range>(*r) : std::nullopt;
}

// ---- the cache ----------------------------------------------------------------------------------------------------

namespace {

#if defined(__x86_64__)
// 64 bytes at a time with AVX-512's byte-masked store: a byte outside the mask is not written at all, as a cache's
// byte mask leaves it.
__attribute__((target("avx512f,avx512bw"), no_sanitize("thread"))) void store_changed_masked(const std::byte* now,
                                                                                             std::byte* old,
                                                                                             std::byte* dst) {
  for (uint64_t b = 0; b < kPage; b += 64) {
    const __m512i n = _mm512_loadu_si512(now + b), o = _mm512_loadu_si512(old + b);
    const __mmask64 changed = _mm512_cmpneq_epi8_mask(n, o);
    if (changed) {
      _mm512_mask_storeu_epi8(dst + b, changed, n);
      _mm512_mask_storeu_epi8(old + b, changed, n);
    }
  }
}
bool has_masked_stores() {
  __builtin_cpu_init();  // this runs as a static initializer, perhaps before libgcc's own
  return __builtin_cpu_supports("avx512bw");
}
// Read once at start-up: store_changed runs in the SIGSEGV handler (an eviction), where a guarded static may not be.
const bool kMaskedStores = has_masked_stores();
#endif

// The bytes of a line (`now`) that differ from its snapshot (`old`), stored one by one into memory at `dst`, so that
// another agent's writes to the rest of the page stay (a cache's byte masks), and into the snapshot: the line is
// clean afterwards. A kernel may be writing the line meanwhile (a line cleaned in place stays writable): each byte is
// read once, and the value stored is the value compared, so a byte written after its read stays changed for the next
// writeback. Not instrumented by ThreadSanitizer: this is the GPU's L2 writing memory, ordered by the command that
// wrote it back (as the pwrite it replaced was invisible to TSan).
__attribute__((no_sanitize("thread"))) void store_changed(const std::byte* now, std::byte* old, std::byte* dst) {
#if defined(__x86_64__)
  if (kMaskedStores) return store_changed_masked(now, old, dst);
#endif
  for (uint64_t w = 0; w < kPage; w += 8) {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, now + w, 8);
    std::memcpy(&b, old + w, 8);
    if (a == b) continue;
    for (uint64_t k = w; k < w + 8; ++k) {
      const std::byte v = *static_cast<const volatile std::byte*>(now + k);  // volatile: one load, never two
      if (v != old[k]) dst[k] = old[k] = v;
    }
  }
}

// Whether the page at `memory` still holds the bytes at `old`. Not memcmp: ThreadSanitizer intercepts that whatever
// the caller's attribute says, and memory is read here as the cache reads it, beside other agents' writes (a copy
// engine's, the host's) by design.
#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw"), no_sanitize("thread"))) bool same_page_avx512(const std::byte* memory,
                                                                                         const std::byte* old) {
  for (uint64_t b = 0; b < kPage; b += 64)
    if (_mm512_cmpneq_epi8_mask(_mm512_loadu_si512(memory + b), _mm512_loadu_si512(old + b)) != 0) return false;
  return true;
}
#endif
__attribute__((no_sanitize("thread"))) bool same_page(const std::byte* memory, const std::byte* old) {
#if defined(__x86_64__)
  if (kMaskedStores) return same_page_avx512(memory, old);
#endif
  for (uint64_t w = 0; w < kPage; w += 8) {
    uint64_t a = 0, b = 0;
    std::memcpy(&a, memory + w, 8);
    std::memcpy(&b, old + w, 8);
    if (a != b) return false;
  }
  return true;
}

// The bytes of the line `line` (in the mirror) that no kernel changed since `old` was taken take memory's values. Byte
// by byte with a compare-and-swap: a kernel running on another queue may be writing this line, and a byte it changed
// meanwhile is dirty and stays. Each byte of memory is read once, and that one value goes into the line and into
// `old`: another agent (another GPU's writeback, a copy engine) may be writing the page now, and a second read could
// see a newer value than the line took, so the byte would look changed by a kernel and the writeback would store the
// older value over the agent's. Not instrumented by ThreadSanitizer, as store_changed: memory is read as the cache
// would read it, and the line is the kernels' memory.
__attribute__((no_sanitize("thread"))) void follow_memory(const std::byte* memory, std::byte* line, std::byte* old) {
  if (same_page(memory, old)) return;  // memory unchanged since the fill: nothing to follow
  for (uint64_t b = 0; b < kPage; ++b) {
    const std::byte now = *static_cast<const volatile std::byte*>(memory + b);  // volatile: one load, never two
    if (now == old[b]) continue;
    std::byte expected = old[b];
    if (std::atomic_ref<std::byte>(line[b]).compare_exchange_strong(expected, now, std::memory_order_relaxed))
      old[b] = now;
  }
}

}  // namespace

bool GpuView::cache_fill(uintptr_t host) {
  if (!in_mirror(reinterpret_cast<const void*>(host))) return false;
  const uint64_t page = va_of(reinterpret_cast<const void*>(host)) & ~(kPage - 1);
  Lock lock(*this);
  if (!cache_) return false;
  const Range* r = find_locked(page);
  if (!r || !r->writable) return false;
  if (is_line(page)) return true;  // another thread filled it meanwhile: retry into it
  // The lines to fill: the pages around this one that are in its aligned block and its mapping and in no line yet.
  constexpr uint64_t kBlockBytes = kBlockLines * kPage;
  const uint64_t block_va = page & ~(kBlockBytes - 1);
  const uint64_t min_lo = std::max(block_va, r->va), max_hi = std::min(block_va + kBlockBytes, r->va + r->size);
  uint64_t lo = page, hi = page + kPage;
  while (lo > min_lo && !is_line(lo - kPage)) lo -= kPage;
  while (hi < max_hi && !is_line(hi)) hi += kPage;
  // Full: the oldest lines go to memory to make room, until a block is free.
  while (nfree_blocks_ == 0) writeback_locked([](size_t i) { return i < kEvictLines; });
  const uint32_t block = free_blocks_[--nfree_blocks_];
  const auto first_slot = static_cast<uint32_t>(block * kBlockLines + (lo - block_va) / kPage);
  std::byte* p = at(lo);
  std::byte* slots = pool_ + uint64_t{first_slot} * kPage;
  // The pages are read-only in the mirror until the slots replace them: a kernel writing one meanwhile waits for the
  // lock.
  std::memcpy(slots, p, hi - lo);
  std::memcpy(snapshots_ + uint64_t{first_slot} * kPage, slots, hi - lo);
  // Populated: the write that faulted retries without a second (page-table) fault.
  if (::mmap(p, hi - lo, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED | MAP_POPULATE, pool_fd_,
             static_cast<off_t>(uint64_t{first_slot} * kPage)) == MAP_FAILED) {
    free_blocks_[nfree_blocks_++] = block;
    return false;  // the OS refused the mapping (out of map areas): the write stays the kernel's fault, not lost
  }
  for (uint64_t v = lo; v < hi; v += kPage) {
    lines_[nlines_++] = Line{v, r->fd, r->offset + (v - r->va), r->memory + (v - r->va),
                             static_cast<uint32_t>(first_slot + (v - lo) / kPage)};
    set_line(v, true);
  }
  block_lines_[block] = static_cast<uint32_t>((hi - lo) / kPage);
  return true;
}

template <class Fn>
void GpuView::for_each_run_locked(size_t n, Fn fn) {
  std::sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(n),
            [&](uint32_t a, uint32_t b) { return lines_[a].va < lines_[b].va; });
  for (size_t first = 0; first < n;) {
    size_t count = 1;
    for (; first + count < n; ++count) {
      const Line& prev = lines_[order_[first + count - 1]];
      const Line& next = lines_[order_[first + count]];
      if (next.va != prev.va + kPage || next.fd != prev.fd || next.offset != prev.offset + kPage) break;
    }
    fn(first, count);
    first += count;
  }
}

template <class Pick>
void GpuView::writeback_locked(Pick pick) {
  size_t n = 0;
  for (size_t i = 0; i < nlines_; ++i)
    if (pick(i)) order_[n++] = static_cast<uint32_t>(i);
  if (n == 0) return;
  // A run of lines at a time (the pages of a buffer a kernel wrote): a few system calls per run, not per page.
  for_each_run_locked(n, [&](size_t first, size_t count) {
    const Line& head = lines_[order_[first]];
    const uint64_t bytes = count * kPage;
    const auto offset = static_cast<off_t>(head.offset);
    std::byte* p = at(head.va);
    // The lines turn read-only first: a kernel writing one from now on faults and waits for the lock, so no write can
    // fall between the compare below and the remap. Kernels still read the lines, not memory, until memory holds
    // their bytes: remapping memory first would let a kernel of this GPU read, in between, memory without the writes
    // an earlier kernel of its own queue made (a flush from another queue of the GPU, a copy's release, does that
    // while kernels run).
    ::mprotect(p, bytes, PROT_READ);
    // The changed bytes go straight into memory, where the simulator maps it.
    for (size_t k = 0; k < count; ++k) {
      const Line& line = lines_[order_[first + k]];
      store_changed(slot_bytes(line), snapshot(line), line.memory);
    }
    ::mmap(p, bytes, PROT_READ, MAP_SHARED | MAP_FIXED, head.fd, offset);
  });
  // Drop them: their slots are free again, and the lines left keep their order (the oldest first, for eviction).
  for (size_t k = 0; k < n; ++k) {
    Line& line = lines_[order_[k]];
    const uint32_t block = line.slot / kBlockLines;
    if (--block_lines_[block] == 0) free_blocks_[nfree_blocks_++] = block;
    set_line(line.va, false);
    line.fd = -1;
  }
  nlines_ = static_cast<size_t>(std::remove_if(lines_.begin(), lines_.begin() + static_cast<std::ptrdiff_t>(nlines_),
                                               [](const Line& l) { return l.fd < 0; }) -
                                lines_.begin());
}

void GpuView::writeback_range_locked(uint64_t va, uint64_t size) {
  writeback_locked([&](size_t i) { return lines_[i].va >= va && lines_[i].va - va < size; });
}

void GpuView::writeback() {
  Lock lock(*this);
  if (nlines_ > kKeepLines) return writeback_locked([](size_t) { return true; });
  // Few lines: cleaned where they are, and kept. The pages stay mapped as they are (no system call, no TLB
  // shootdown), and the kernels that write them next find them writable (no fault, no fill).
  for (size_t i = 0; i < nlines_; ++i) store_changed(slot_bytes(lines_[i]), snapshot(lines_[i]), lines_[i].memory);
}

size_t GpuView::lines() const {
  Lock lock(*this);
  return nlines_;
}

void GpuView::refresh_clean_bytes() {
  Lock lock(*this);
  // Memory is read where the simulator maps it, never through a window mapped for the purpose: each munmap of a
  // window sent every other CPU running this process a TLB shootdown (an interrupt, microseconds in a VM), and this
  // runs before every kernel, so the host thread submitting a graph paid one per kernel it submitted (TinyJit's
  // replay on SIM-AMD: 124 - 445 ns a kernel of host time, against 34 - 40 without).
  for (size_t i = 0; i < nlines_; ++i) follow_memory(lines_[i].memory, at(lines_[i].va), snapshot(lines_[i]));
}

size_t GpuView::dirty_lines() const {
  Lock lock(*this);
  return static_cast<size_t>(
      std::count_if(lines_.begin(), lines_.begin() + static_cast<std::ptrdiff_t>(nlines_),
                    [&](const Line& l) { return std::memcmp(slot_bytes(l), snapshot(l), kPage) != 0; }));
}

}  // namespace hcq::sim
