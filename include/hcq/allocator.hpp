// Allocators of the runtime layer: LRU caching on top of a device's raw memory, and the HCQ allocator whose
// copy-in/copy-out go through a ring of staging buffers on the device's copy queue.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "hcq/backend/thread_annotations.hpp"
#include "hcq/completion.hpp"
#include "hcq/memory.hpp"

namespace hcq {

class Device;

// "{cpu_access,nolru}" style, for messages.
std::string to_string(const BufferSpec& spec);

// Ownership: owned by its Device (see Device::init_runtime). Allocations it hands out refer to that device and
// must be freed (to this allocator) before the device goes.
// Threads: every call may come from any thread (the cache is guarded by one mutex; copies serialise on the
// subclass's own lock and order themselves on the device's timeline).
class Allocator {
 public:
  explicit Allocator(Device& dev) : dev_(dev) {}
  virtual ~Allocator() = default;

  // Throws InvalidArgument for size 0. On lack of memory empties the cache and retries once, then throws
  // OutOfMemory naming the device, the size asked and the bytes in use.
  Allocation alloc(uint64_t size, const BufferSpec& spec = {});
  // Keeps the allocation cached for reuse unless spec.nolru, spec.zero or spec.external_ptr.
  void free(const Allocation& a);
  // Really frees everything cached (after synchronizing the device), and whatever idle memory a subclass keeps
  // (HCQAllocator: its staging buffers, which come back lazily). Device::shutdown_runtime() calls this while the
  // backend can still free memory: ~Allocator runs too late for that and frees nothing itself.
  void free_cache();
  uint64_t cached_bytes() const;

  // Host <-> device and device <-> device copies. dst/src ranges must lie inside the allocations.
  virtual void copyin(const Allocation& dst, uint64_t offset, std::span<const std::byte> src) = 0;
  virtual void copyout(std::span<std::byte> dst, const Allocation& src, uint64_t offset) = 0;
  // Copy from an allocation of (possibly) another device into dst: after everything submitted to the source's device
  // and what may touch dst's bytes on the destination's; the destination's later work waits for it (from its next
  // submission on: Device::defer_join; synchronize() includes it). Returns without waiting: the completion after
  // which dst holds the data (on the device that drives the copy).
  virtual Completion transfer(const Allocation& dst, uint64_t dst_off, const Allocation& src, uint64_t src_off,
                              uint64_t size) = 0;

  Device& device() const { return dev_; }

 protected:
  // Memory a subclass holds while idle that free_cache() must give back too. Called after the device synchronized.
  virtual void release_idle_memory() {}

  Device& dev_;

 private:
  using Key = std::tuple<uint64_t, BufferSpec>;
  mutable Mutex mu_;
  std::map<Key, std::vector<Allocation>> cache_ HCQ_GUARDED_BY(mu_);
  uint64_t cached_bytes_ HCQ_GUARDED_BY(mu_) = 0;
};

// The HCQ allocator: staging ring for copy-in/out (each staging buffer reused only when the timeline passed its
// stamp) and device-to-device transfer on the source's copy queue, ordered by the bytes it touches on the
// destination (Device::defer_join).
class HCQAllocator : public Allocator {
 public:
  struct Options {
    uint64_t staging_size;  // bytes per staging buffer
    uint32_t staging_count;
    // The device's memory is the host's own (the CPU device): copyout waits for the timeline and reads the bytes
    // where they are, instead of a copy into staging on the copy queue.
    bool copyout_in_place;
  };
  // 16 MiB in flight: measured on the 2-core CI-like VM to reach >= 80 % of memcpy (see hcq_allocator.cpp).
  static constexpr Options kDefaultOptions{1u << 20, 16, false};
  // Ownership: lives as long as `dev` (it registers a Device::on_timeline_reset callback).
  explicit HCQAllocator(Device& dev, Options opts = kDefaultOptions);
  ~HCQAllocator() override;

  void copyin(const Allocation& dst, uint64_t offset, std::span<const std::byte> src) override;
  void copyout(std::span<std::byte> dst, const Allocation& src, uint64_t offset) override;
  Completion transfer(const Allocation& dst, uint64_t dst_off, const Allocation& src, uint64_t src_off,
                      uint64_t size) override;

 protected:
  void release_idle_memory() override;

 private:
  struct Staging;
  class CopyScope;
  // The staging buffer at `index`, allocated if needed, once the timeline has passed its stamp.
  Staging& staging_at(uint32_t index);
  void stamp(Staging& s, uint64_t tv);

  Options opts_;
  std::vector<Staging> staging_;
  uint32_t next_ = 0;
  std::mutex mu_;
  std::atomic<uint64_t> reset_epoch_{0};           // bumped by Device::on_timeline_reset
  std::atomic<std::thread::id> copying_thread_{};  // who holds mu_ for a copy
};

}  // namespace hcq
