// Device::SidePool (internal to hcq/): host-visible device memory for kernargs and other side data, carved out of
// chunks of at least 1 MiB. Freed blocks wait on a deferred list until the device's timeline passes them.
//
// It sits on the launch path (every eager launch with arguments allocates and frees a block), so the common case is
// O(1) without heap traffic: small blocks come from a bump front; stamps only grow, so the deferred lists are FIFOs
// whose front says whether anything has passed; carving (next fit) and coalescing re-key or resize map nodes in
// place instead of erasing and inserting them.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "hcq/device.hpp"

namespace hcq {

struct Device::SidePool {
  static constexpr uint64_t kMinChunk = uint64_t{1} << 20;

  explicit SidePool(Device& dev) : dev(dev) {}
  SidePool(const SidePool&) = delete;
  SidePool& operator=(const SidePool&) = delete;

  SideBlock alloc(uint64_t size, uint64_t align);
  // Defers the block until the timeline passes the value current now.
  void free(const SideBlock& b);
  // The same for a signal the device may still write.
  void release_later(OwnedSignal s);
  // After a synchronize: the device has finished everything, so every deferred block is free again.
  void reclaim_all();
  // Gives every chunk back to the device (the device must be idle). Only while the backend can still free memory:
  // see Device::shutdown_runtime().
  void release_chunks();

 private:
  struct Deferred {
    uint64_t stamp;
    SideBlock block;
  };
  struct DeferredSignal {
    uint64_t stamp;
    OwnedSignal signal;
  };
  static constexpr uint64_t kMaxBlock = uint64_t{1} << 40;  // a request above it is a bug of the caller's
  [[noreturn, gnu::noinline]] void throw_bad_request(uint64_t size, uint64_t align) const;
  [[gnu::noinline]] SideBlock alloc_locked(uint64_t size, uint64_t align);  // mu held: carve, or grow and carve
  void reclaim_passed(uint64_t done);                                       // mu held
  void reclaim_passed_signals(uint64_t done);                               // mu held
  void put_free(uint64_t va, uint64_t size);                                // mu held; coalesces within a chunk
  bool carve(uint64_t size, uint64_t align, SideBlock& out);                // mu held
  bool carve_from(std::map<uint64_t, uint64_t>::iterator range, uint64_t size, uint64_t align,
                  SideBlock& out);    // mu held; false when the block does not fit in `range`
  void add_chunk(uint64_t min_size);  // mu held
  // The bump front: a range taken out of free_ranges and handed out from its start, so the common small block (a
  // launch's kernargs) costs no map operation. Blocks are rounded up to their alignment, so the next one starts
  // aligned and no gap is left. Freed blocks go back through free_ranges like any other; the unused rest of the
  // range returns there when the range is replaced.
  static constexpr uint64_t kBumpBytes = 64 * 1024;
  static constexpr uint64_t kBumpMaxBlock = 8192;  // (an NV queue's QMD arena) larger blocks are carved directly
  static constexpr uint64_t kBumpAlign = 4096;     // ranges start so aligned: a block aligned wider is carved directly
  // mu held; size <= kBumpMaxBlock, align <= kBumpAlign. False when no free range is big enough.
  bool bump(uint64_t size, uint64_t align, SideBlock& out);
  [[gnu::noinline]] bool refill_bump();  // mu held: replaces the front with a fresh range; false when none is free
  void retire_bump();                    // mu held

  Device& dev;
  std::mutex mu;
  std::map<uint64_t, Allocation> chunks;     // by start va
  std::map<uint64_t, uint64_t> free_ranges;  // start va -> length
  uint64_t rover_ = 0;                       // where the last carved block ended: the next search starts there
  uint64_t bump_cur_ = 0, bump_end_ = 0;     // the bump front's unused part
  // FIFOs in stamp order (stamps never decrease): entries before the head index are already reclaimed.
  std::vector<Deferred> deferred;
  size_t deferred_head = 0;
  std::vector<DeferredSignal> deferred_signals;
  size_t signals_head = 0;
};

}  // namespace hcq
