// Device::SidePool (internal to hcq/): host-visible device memory for kernargs and other side data, carved out of
// chunks of at least 1 MiB. Freed blocks wait on a deferred list until the device's timeline passes them.
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
  void reclaim_passed(uint64_t done);  // mu held
  void put_free(uint64_t va, uint64_t size);  // mu held; coalesces within a chunk
  bool carve(uint64_t size, uint64_t align, SideBlock& out);  // mu held
  void add_chunk(uint64_t min_size);  // mu held

  Device& dev;
  std::mutex mu;
  std::map<uint64_t, Allocation> chunks;  // by start va
  std::map<uint64_t, uint64_t> free_ranges;  // start va -> length
  std::vector<Deferred> deferred;
  std::vector<DeferredSignal> deferred_signals;
};

}  // namespace hcq
