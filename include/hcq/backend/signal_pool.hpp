// The process-wide pool behind Signal: pages of 16-byte slots in the unified VA space, mapped into every device.
// Ownership: the process owns the one pool (process().signals) and never destroys it; a Signal is a handle on a
// slot, given back by OwnedSignal when it goes.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hcq/signal.hpp"

namespace hcq {

class VaSpace;
class Os;

class SignalPool {
 public:
  // A device that must see signal memory registers one of these; it is told about every page, present and future.
  class PageMapper {
   public:
    virtual ~PageMapper() = default;
    virtual void map_signal_page(void* addr, size_t size) = 0;
    virtual void unmap_signal_page(void* addr, size_t size) = 0;
  };
  // Mappers are called with the pool's lock held: they must not call back into the pool.

  SignalPool(VaSpace& va, Os& os);
  ~SignalPool();
  SignalPool(const SignalPool&) = delete;
  SignalPool& operator=(const SignalPool&) = delete;

  Signal acquire(uint64_t initial, std::string label);
  void release(uint32_t slot, uint32_t gen);
  // The slot's memory; throws InvalidArgument naming the slot if the generation is stale (freed signal).
  uint64_t* ptr(uint32_t slot, uint32_t gen) const;
  const std::string& label(uint32_t slot) const;
  void set_label(uint32_t slot, std::string label);
  bool is_live(uint32_t slot, uint32_t gen) const;

  // add_mapper maps every existing page into m (and later pages as they come); remove_mapper unmaps them all from
  // m again. A device adds itself when it opens and removes itself before it goes away.
  void add_mapper(PageMapper* m);
  void remove_mapper(PageMapper* m);
  size_t live_count() const;

  static constexpr size_t kPageSize = 64 * 1024;
  static constexpr size_t kSlotBytes = 16;

 private:
  static constexpr size_t kSlotsPerPage = kPageSize / kSlotBytes;
  static constexpr size_t kMaxPages = 4096;  // 16 Mi signals; the lookup table is sized once so readers need no lock
  struct Meta;
  struct Page;
  const Page* page_of(uint32_t slot) const;  // nullptr for a slot never handed out
  void grow();                               // mu_ held

  VaSpace& va_;
  Os& os_;
  mutable std::mutex mu_;
  // Pages are published into table_ (release) only once complete and never move or go away before the pool, so
  // value()/ptr() index table_ without the lock. A std::deque would not do: its push_back may reallocate the index
  // that a concurrent reader walks.
  std::unique_ptr<std::atomic<Page*>[]> table_;
  std::vector<std::unique_ptr<Page>> pages_;
  std::vector<uint32_t> free_;
  std::vector<PageMapper*> mappers_;
  size_t live_ = 0;
};

}  // namespace hcq
