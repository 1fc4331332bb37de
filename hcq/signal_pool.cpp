// The signal pool: 64 KiB pages of 16-byte slots in the unified VA space, each slot with a generation so that a
// handle kept past its release is caught instead of reading (or writing) someone else's signal.
#include "hcq/backend/signal_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>

#include "hcq/backend/capture.hpp"
#include "hcq/backend/os.hpp"
#include "hcq/backend/va_space.hpp"
#include "hcq/error.hpp"
#include "hcq/memory.hpp"

namespace hcq {

struct SignalPool::Meta {
  std::atomic<uint32_t> gen{1};  // handles carry the generation they were given; release bumps it
  bool live = false;
  std::string label;
};

struct SignalPool::Page {
  std::byte* mem = nullptr;
  std::unique_ptr<Meta[]> meta = std::make_unique<Meta[]>(kSlotsPerPage);
};

namespace {

uint64_t* slot_memory(std::byte* page_mem, uint32_t slot, size_t slots_per_page) {
  return reinterpret_cast<uint64_t*>(page_mem + (slot % slots_per_page) * SignalPool::kSlotBytes);
}

}  // namespace

SignalPool::SignalPool(VaSpace& va, Os& os)
    : va_(va), os_(os), table_(std::make_unique<std::atomic<Page*>[]>(kMaxPages)) {}

SignalPool::~SignalPool() {
  for (auto& page : pages_) {
    try {
      va_.free(reinterpret_cast<uint64_t>(page->mem), kPageSize);  // back to PROT_NONE
    } catch (const Error&) {
      // Nothing sensible to do while tearing down; the reservation still goes when the VaSpace does.
    }
  }
}

// Inline within this file: ptr() looks a page up for every Signal::addr().
inline const SignalPool::Page* SignalPool::page_of(uint32_t slot) const {
  size_t index = slot / kSlotsPerPage;
  if (index >= kMaxPages) return nullptr;
  return table_[index].load(std::memory_order_acquire);
}

void SignalPool::grow() {
  if (pages_.size() == kMaxPages)
    throw OutOfMemory(cat("signal pool full: ", kMaxPages * kSlotsPerPage, " signals live"));
  auto page = std::make_unique<Page>();
  uint64_t va = va_.alloc(kPageSize, kPageSize);
  void* mem = os_.mmap(reinterpret_cast<void*>(va), kPageSize, PROT_READ | PROT_WRITE,
                       MAP_FIXED | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    int err = errno;
    va_.free(va, kPageSize);
    throw OsError(cat("signal pool: mapping a page at ", hex(va)), err);
  }
  page->mem = static_cast<std::byte*>(mem);

  // Tell every device before any slot is handed out; undo on failure so no device is left half-mapped.
  size_t told = 0;
  try {
    for (; told < mappers_.size(); ++told) mappers_[told]->map_signal_page(mem, kPageSize);
  } catch (...) {
    while (told > 0) mappers_[--told]->unmap_signal_page(mem, kPageSize);
    va_.free(va, kPageSize);
    throw;
  }

  // A capture annotates signal addresses by this page (every device shares it, so no device is named).
  Allocation signal_page;
  signal_page.va = va;
  signal_page.size = kPageSize;
  signal_page.host_mapped = true;
  capture::on_alloc(signal_page, "signals");
  const auto first = static_cast<uint32_t>(pages_.size() * kSlotsPerPage);
  table_[pages_.size()].store(page.get(), std::memory_order_release);
  pages_.push_back(std::move(page));
  // Reverse order so that the lowest slot is handed out first.
  for (size_t i = kSlotsPerPage; i > 0; --i) free_.push_back(first + static_cast<uint32_t>(i - 1));
}

Signal SignalPool::acquire(uint64_t initial, std::string label) {
  std::lock_guard lock(mu_);
  if (free_.empty()) grow();
  uint32_t slot = free_.back();
  free_.pop_back();
  Page& page = *table_[slot / kSlotsPerPage].load(std::memory_order_relaxed);
  Meta& meta = page.meta[slot % kSlotsPerPage];
  meta.label = std::move(label);
  meta.live = true;
  uint64_t* mem = slot_memory(page.mem, slot, kSlotsPerPage);
  std::atomic_ref<uint64_t>(mem[1]).store(0, std::memory_order_relaxed);
  std::atomic_ref<uint64_t>(mem[0]).store(initial, std::memory_order_release);
  ++live_;
  return Signal(this, slot, meta.gen.load(std::memory_order_relaxed));
}

void SignalPool::release(uint32_t slot, uint32_t gen) {
  std::lock_guard lock(mu_);
  const Page* page = page_of(slot);
  if (page == nullptr) throw InvalidArgument(cat("signal ", slot, " released but never handed out"));
  Meta& meta = page->meta[slot % kSlotsPerPage];
  if (!meta.live || meta.gen.load(std::memory_order_relaxed) != gen)
    throw InvalidArgument(cat("signal ", slot, " released twice (label \"", meta.label, "\")"));
  meta.live = false;
  // The label stays, so that a stale handle's error can still say whose signal it was.
  meta.gen.fetch_add(1, std::memory_order_release);
  free_.push_back(slot);
  --live_;
}

uint64_t* SignalPool::ptr(uint32_t slot, uint32_t gen) const {
  const Page* page = page_of(slot);
  if (page == nullptr) [[unlikely]]
    throw InvalidArgument(cat("signal ", slot, " was never handed out"));
  const Meta& meta = page->meta[slot % kSlotsPerPage];
  if (meta.gen.load(std::memory_order_acquire) != gen) [[unlikely]]
    throw InvalidArgument(cat("signal ", slot, " used after release (label \"", meta.label, "\")"));
  return slot_memory(page->mem, slot, kSlotsPerPage);
}

const std::string& SignalPool::label(uint32_t slot) const {
  const Page* page = page_of(slot);
  if (page == nullptr) throw InvalidArgument(cat("signal ", slot, " was never handed out"));
  return page->meta[slot % kSlotsPerPage].label;
}

void SignalPool::set_label(uint32_t slot, std::string label) {
  std::lock_guard lock(mu_);
  const Page* page = page_of(slot);
  if (page == nullptr) throw InvalidArgument(cat("signal ", slot, " was never handed out"));
  page->meta[slot % kSlotsPerPage].label = std::move(label);
}

bool SignalPool::is_live(uint32_t slot, uint32_t gen) const {
  const Page* page = page_of(slot);
  return page != nullptr && page->meta[slot % kSlotsPerPage].gen.load(std::memory_order_acquire) == gen;
}

void SignalPool::add_mapper(PageMapper* m) {
  std::lock_guard lock(mu_);
  if (std::find(mappers_.begin(), mappers_.end(), m) != mappers_.end()) return;
  size_t told = 0;
  try {
    for (; told < pages_.size(); ++told) m->map_signal_page(pages_[told]->mem, kPageSize);
  } catch (...) {
    while (told > 0) m->unmap_signal_page(pages_[--told]->mem, kPageSize);
    throw;
  }
  mappers_.push_back(m);
}

void SignalPool::remove_mapper(PageMapper* m) {
  std::lock_guard lock(mu_);
  auto it = std::find(mappers_.begin(), mappers_.end(), m);
  if (it == mappers_.end()) return;
  mappers_.erase(it);
  for (auto& page : pages_) m->unmap_signal_page(page->mem, kPageSize);
}

size_t SignalPool::live_count() const {
  std::lock_guard lock(mu_);
  return live_;
}

}  // namespace hcq
