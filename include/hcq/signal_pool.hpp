// The process-wide pool behind Signal: pages of 16-byte slots in the unified VA space, mapped into every device.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
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

  void add_mapper(PageMapper* m);
  void remove_mapper(PageMapper* m);
  size_t live_count() const;

  static constexpr size_t kPageSize = 64 * 1024;
  static constexpr size_t kSlotBytes = 16;

 private:
  struct Meta;
  void grow();  // mu_ held

  VaSpace& va_;
  Os& os_;
  mutable std::mutex mu_;
  std::vector<void*> pages_;
  std::deque<Meta> meta_;  // stable addresses: readers index it without the lock
  std::vector<uint32_t> free_;
  std::vector<PageMapper*> mappers_;
  size_t live_ = 0;
};

}  // namespace hcq
