// HCQAllocator: host <-> device copies through a ring of small host-visible staging buffers on the device's copy
// queue, and device <-> device transfers ordered by the bytes they touch.
//
// A copy-in is two copies: host -> staging on this thread, staging -> device memory on the copy queue, which runs
// on another engine (a GPU's DMA engine; on the CPU device, another thread and so another core). They overlap over
// a ring of staging buffers, each reused only once the timeline passed the copy that last touched it. Copy-out is
// the mirror image, with several chunks in flight so that our memcpy of chunk k overlaps the device's copy of k+1.
//
// The ring size comes from a measurement on the 2-core CI-like VM: 64 MiB copies on a CpuDevice, ratio to a host
// memcpy (~9 GB/s) in the same run, median of 11, both threads at real-time priority so that other load on the
// shared machine did not interfere (throwaway program, chrt -f 10):
//   512 KiB x 4: h2d 35 %, d2h 25 %    4 MiB x 4: 65 %, 58 %    2 MiB x 8: 77-89 %, 90-103 %
//   1 MiB x 16: 84-91 %, 89-100 %      1 MiB x 32: 90 %, 91 %   256 KiB x 64: 85 %, 74 %      d2d: 93-107 %
// What matters is how much is in flight (the hand-off of staging lines between cores is slow on this VM, so the
// consumer must never catch up with the producer), more than whether a chunk fits in a core's cache.
#include <algorithm>
#include <cstring>
#include <thread>

#include "hcq/allocator.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/hw_queue.hpp"

namespace hcq {

struct HCQAllocator::Staging {
  Allocation mem;      // size 0 until first used
  uint64_t stamp = 0;  // timeline value of the last copy that read or wrote it
  uint64_t epoch = 0;  // reset_epoch_ when stamped: a stamp from before a timeline reset has long passed
};

namespace {

constexpr BufferSpec kStagingSpec{.cpu_access = true, .nolru = true};

void check_range(const Device& dev, const Allocation& a, uint64_t offset, uint64_t size, const char* what) {
  if (offset > a.size || size > a.size - offset) {
    throw InvalidArgument(cat(dev.name(), ": ", what, " of ", size, " bytes at offset ", offset,
                              " is outside the allocation of ", a.size, " bytes at ", hex(a.va)));
  }
}

// A copy on dev's copy queue, on its timeline.
Completion submit_copy(Device& dev, uint64_t dst, uint64_t src, uint64_t size) {
  auto queue = dev.copy_queue();
  return dev.submit(*queue, [&](HWQueue& q) { q.copy(dst, src, size); });
}

}  // namespace

HCQAllocator::HCQAllocator(Device& dev, Options opts) : Allocator(dev), opts_(opts) {
  if (opts.staging_size == 0 || opts.staging_count == 0) {
    throw InvalidArgument(cat(dev.name(), ": HCQAllocator needs staging buffers (asked for ", opts.staging_count,
                              " of ", opts.staging_size, " bytes)"));
  }
  staging_.resize(opts.staging_count);
  // After a timeline swap the timeline restarts at 1, so stamps from before it would never be reached again.
  // Bumping an epoch (instead of taking mu_) keeps the callback safe while a copy holds mu_ and synchronizes.
  dev.on_timeline_reset([this] { reset_epoch_.fetch_add(1, std::memory_order_relaxed); });
}

// Staging memory still held here is not freed: by now the device backend may be gone (see free_cache()).
HCQAllocator::~HCQAllocator() = default;

HCQAllocator::Staging& HCQAllocator::staging_at(uint32_t index) {
  Staging& s = staging_[index];
  if (s.mem.size == 0) {
    s.mem = alloc(opts_.staging_size, kStagingSpec);
    s.stamp = 0;
    if (s.mem.host_ptr() == nullptr) {
      const Allocation bad = s.mem;
      s.mem = {};
      free(bad);
      throw Error(cat(dev_.name(), ": staging buffer of ", opts_.staging_size, " bytes at ", hex(bad.va),
                      " is not mapped on the host although cpu_access was asked"));
    }
  }
  if (s.stamp != 0 && s.epoch == reset_epoch_.load(std::memory_order_relaxed)) {
    const Signal& timeline = dev_.timeline_signal();
    if (timeline.value() < s.stamp) dev_.wait_signal(timeline, s.stamp);
  }
  return s;
}

void HCQAllocator::stamp(Staging& s, uint64_t tv) {
  s.stamp = tv;
  s.epoch = reset_epoch_.load(std::memory_order_relaxed);
}

// Holds mu_ and marks this thread as the one copying, so that free_cache() reached from inside the copy (an
// allocation that ran out of memory) does not free staging buffers the copy is still using.
class HCQAllocator::CopyScope {
 public:
  explicit CopyScope(HCQAllocator& a) : a_(a), lock_(a.mu_) {
    a_.copying_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  }
  ~CopyScope() { a_.copying_thread_.store(std::thread::id(), std::memory_order_relaxed); }
  CopyScope(const CopyScope&) = delete;
  CopyScope& operator=(const CopyScope&) = delete;

 private:
  HCQAllocator& a_;
  std::lock_guard<std::mutex> lock_;
};

void HCQAllocator::copyin(const Allocation& dst, uint64_t offset, std::span<const std::byte> src) {
  check_range(dev_, dst, offset, src.size(), "copyin destination");
  CopyScope scope(*this);
  // Fill a staging buffer, queue its copy, move on: the device copies chunk k while we fill chunk k+1. The data
  // lives in staging until copied, so the caller may reuse `src` as soon as we return.
  for (uint64_t done = 0; done < src.size();) {
    const uint64_t n = std::min<uint64_t>(opts_.staging_size, src.size() - done);
    Staging& s = staging_at(next_);
    next_ = (next_ + 1) % opts_.staging_count;
    std::memcpy(s.mem.host_ptr(), src.data() + done, n);
    stamp(s, submit_copy(dev_, dst.va + offset + done, s.mem.va, n).value());
    done += n;
  }
}

void HCQAllocator::copyout(std::span<std::byte> dst, const Allocation& src, uint64_t offset) {
  check_range(dev_, src, offset, dst.size(), "copyout source");
  if (dst.empty()) return;
  if (opts_.copyout_in_place && src.host_mapped) {
    // After everything submitted so far, as the copy queue's copy would run. A training loop reads its loss every
    // step: this saves a hop through the copy queue's worker (its wake-up, then the host's) per read.
    // And after a peer copy into these bytes that another device drives (Device::defer_join).
    dev_.wait_signal(dev_.timeline_signal(), dev_.timeline_value() - 1);
    dev_.wait_for_copies_into({src.va + offset, dst.size()});
    std::memcpy(dst.data(), static_cast<const std::byte*>(src.host_ptr()) + offset, dst.size());
    return;
  }
  CopyScope scope(*this);
  const uint64_t chunk = opts_.staging_size;
  const uint64_t nchunks = (dst.size() + chunk - 1) / chunk;
  const uint32_t base = next_;
  auto slot = [&](uint64_t k) { return static_cast<uint32_t>((base + k) % opts_.staging_count); };
  auto chunk_bytes = [&](uint64_t k) { return std::min<uint64_t>(chunk, dst.size() - k * chunk); };

  // Keep every staging buffer busy: while we copy chunk k out of staging, the device fills chunks k+1.. into the
  // others. A buffer is refilled only after its chunk was copied out.
  uint64_t issued = 0;
  for (uint64_t done = 0; done < nchunks; ++done) {
    for (; issued < nchunks && issued < done + opts_.staging_count; ++issued) {
      Staging& s = staging_at(slot(issued));
      stamp(s, submit_copy(dev_, s.mem.va, src.va + offset + issued * chunk, chunk_bytes(issued)).value());
    }
    Staging& s = staging_[slot(done)];
    dev_.wait_signal(dev_.timeline_signal(), s.stamp);
    std::memcpy(dst.data() + done * chunk, s.mem.host_ptr(), chunk_bytes(done));
  }
  next_ = slot(nchunks);
}

Completion HCQAllocator::transfer(const Allocation& dst, uint64_t dst_off, const Allocation& src, uint64_t src_off,
                                  uint64_t size) {
  check_range(dev_, src, src_off, size, "transfer source");
  check_range(dev_, dst, dst_off, size, "transfer destination");
  if (size == 0) return Completion();
  Device& src_dev = src.device != nullptr ? *src.device : dev_;
  Device& dst_dev = dst.device != nullptr ? *dst.device : dev_;
  std::lock_guard lock(mu_);

  if (&src_dev == &dst_dev) return submit_copy(src_dev, dst.va + dst_off, src.va + src_off, size);
  // Across devices the copy is ordered by the bytes it touches (Device::defer_join): it waits for what may touch
  // them on the other device, not for everything there, and that device's later work waits for it from its next
  // submission on. So two devices' copies to each other run at once.
  const Device::MemRange from{src.va + src_off, size}, to{dst.va + dst_off, size};
  auto with_waits = [&](const std::vector<Device::Wait>& waits) {
    return [&, waits](HWQueue& q) {
      for (const Device::Wait& w : waits) q.wait(*w.signal, w.value);
      q.copy(dst.va + dst_off, src.va + src_off, size);
    };
  };
  if (!dst.host_mapped && src_dev.info().interface == "cpu") {
    // The CPU device's memory into memory the host does not map: the CPU cannot reach it, the destination's copy
    // engine reaches host memory (unified VA: at the same address, once mapped). It reads the source's bytes after
    // what may write them, and the source's later work that touches them (a kernel overwriting that buffer) waits
    // for it.
    dst_dev.map_memory(src);
    auto copy = dst_dev.copy_queue();
    const Completion copied = dst_dev.submit(*copy, with_waits(src_dev.waits_touching(from)));
    src_dev.defer_join(copied, from);
    return copied;
  }
  // The source's copy engine writes the destination's bytes after what may touch them there, reading the source's
  // after everything before it on the source (its timeline).
  src_dev.map_memory(dst);
  auto copy = src_dev.copy_queue();
  const Completion copied = src_dev.submit_touching(*copy, from, with_waits(dst_dev.waits_touching(to)));
  dst_dev.defer_join(copied, to);
  return copied;
}

void HCQAllocator::release_idle_memory() {
  // Re-entered from inside one of our own copies (its staging allocation ran out of memory): those buffers are in
  // use, keep them.
  if (copying_thread_.load(std::memory_order_relaxed) == std::this_thread::get_id()) return;
  std::lock_guard lock(mu_);
  const bool any = std::any_of(staging_.begin(), staging_.end(), [](const Staging& s) { return s.mem.size != 0; });
  if (!any) return;
  // A copy may have been queued between free_cache()'s synchronize and our taking mu_.
  dev_.synchronize();
  for (Staging& s : staging_) {
    if (s.mem.size == 0) continue;
    dev_.free_memory(s.mem);
    s = Staging{};
  }
}

}  // namespace hcq
