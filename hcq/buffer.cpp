// Buffer: a lazily allocated base shared by every view of it, plus the range checks that keep copies inside it.
#include "hcq/buffer.hpp"

#include <atomic>
#include <mutex>
#include <optional>

#include "hcq/allocator.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"

namespace hcq {

// What a buffer and all its views share. The allocation happens on first use, so buffers that are only planned
// (a scheduler's intermediates) cost nothing until something touches them.
struct Buffer::Base {
  Device* dev;
  // Keeps a shared device (every device the registry opened) open while this memory lives, whatever order the
  // owners go in: a cache of buffers destroyed after close_all_devices() or at exit frees into a live device.
  // Null for a device its maker owns alone (a test's): then the maker keeps it open.
  std::shared_ptr<Device> keep_open;
  uint64_t size;
  BufferSpec spec;
  std::mutex mu;                   // serializes the first allocation
  std::atomic<bool> ready{false};  // alloc is set (acquire before reading it)
  std::optional<Allocation> alloc;

  Base(Device& d, uint64_t s, BufferSpec sp) : dev(&d), keep_open(d.weak_from_this().lock()), size(s), spec(sp) {}
  Base(const Base&) = delete;
  Base& operator=(const Base&) = delete;

  ~Base() {
    if (!alloc) return;
    try {
      dev->allocator().free(*alloc);
    } catch (...) {
      // A destructor must not throw. The free only fails when the device has faulted (its sticky error comes back
      // from the synchronize before a real free); then the memory stays with the dead device.
    }
  }

  const Allocation& allocation() {
    if (!ready.load(std::memory_order_acquire)) {
      std::lock_guard lock(mu);
      if (!alloc) {
        alloc = dev->allocator().alloc(size, spec);
        ready.store(true, std::memory_order_release);
      }
    }
    return *alloc;
  }
};

namespace {

bool range_inside(uint64_t offset, uint64_t size, uint64_t total) { return offset <= total && size <= total - offset; }

}  // namespace

Buffer::Buffer(Device& dev, uint64_t size, BufferSpec spec) : size_(size) {
  if (size == 0) {
    throw InvalidArgument(cat(dev.name(), ": zero-size buffer (spec ", to_string(spec), ")"));
  }
  base_ = std::make_shared<Base>(dev, size, spec);
}

Buffer Buffer::view(uint64_t offset, uint64_t size) const {
  if (!range_inside(offset, size, size_)) {
    throw InvalidArgument(cat(device().name(), ": view [", offset, ", +", size, ") is outside the buffer of ", size_,
                              " bytes (at offset ", offset_, " of its base)"));
  }
  return Buffer(base_, offset_ + offset, size);
}

void Buffer::ensure_allocated() const { base_->allocation(); }

bool Buffer::allocated() const { return base_->ready.load(std::memory_order_acquire); }

uint64_t Buffer::va() const { return base_->allocation().va + offset_; }

Device& Buffer::device() const { return *base_->dev; }

const BufferSpec& Buffer::spec() const { return base_->spec; }

void Buffer::copyin(std::span<const std::byte> src) {
  if (src.size() != size_) {
    throw InvalidArgument(cat(device().name(), ": copyin of ", src.size(), " bytes into a buffer of ", size_,
                              " bytes (sizes must match)"));
  }
  const Allocation& a = base_->allocation();
  device().allocator().copyin(a, offset_, src);
}

void Buffer::copyout(std::span<std::byte> dst) const {
  if (dst.size() != size_) {
    throw InvalidArgument(cat(device().name(), ": copyout of a buffer of ", size_, " bytes into ", dst.size(),
                              " bytes (sizes must match)"));
  }
  const Allocation& a = base_->allocation();
  device().allocator().copyout(dst, a, offset_);
}

Completion Buffer::copy_from(const Buffer& src) {
  if (src.size_ != size_) {
    throw InvalidArgument(cat(device().name(), ": copy of ", src.size_, " bytes from ", src.device().name(),
                              " into a buffer of ", size_, " bytes (sizes must match)"));
  }
  if (src.base_ == base_ && src.offset_ < offset_ + size_ && offset_ < src.offset_ + size_) {
    // A device copy is a memcpy: overlapping ranges would come out in an order nobody promised.
    throw InvalidArgument(cat(device().name(), ": copy between overlapping views [", src.offset_, ", +", size_,
                              ") and [", offset_, ", +", size_, ") of one buffer"));
  }
  const Allocation& from = src.base_->allocation();
  const Allocation& to = base_->allocation();
  // Across devices the source drives the copy (the reference protocol); on one device it is that device's.
  return src.device().allocator().transfer(to, offset_, from, src.offset_, size_);
}

}  // namespace hcq
