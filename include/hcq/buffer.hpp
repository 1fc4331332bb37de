// Buffer: the runtime layer's handle on device memory. Allocated lazily, views share a base, copies in, out and
// across devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "hcq/completion.hpp"
#include "hcq/memory.hpp"

namespace hcq {

class Device;

// Ownership: a Buffer and its views share one base allocation, freed (to the device allocator's cache) when the
// last of them goes. The base keeps its device open (a device the registry opened is shared: closing it, or the
// process exiting, closes it only once its last buffer is gone); a device made and owned outside the registry must
// be kept open by its owner while its buffers live.
// Threads: distinct Buffers (and views) may be used from different threads at once; one Buffer object is not
// meant for concurrent copies from two threads (they would race on its bytes, not on our state).
class Buffer {
 public:
  // Throws InvalidArgument for size 0. Nothing is allocated until first use. (By device name:
  // Buffer(open_device("CPU"), size).)
  Buffer(Device& dev, uint64_t size, BufferSpec spec = {});

  // A view of [offset, offset+size) of this buffer; shares (and keeps alive) the base. Throws InvalidArgument
  // when the range is outside.
  Buffer view(uint64_t offset, uint64_t size) const;

  // Allocates the base now if it was not (thread-safe); throws OutOfMemory.
  void ensure_allocated() const;
  bool allocated() const;
  // The address on the host and on every device the memory is mapped to (unified VA). Allocates on first use.
  uint64_t va() const;
  uint64_t size() const { return size_; }
  uint64_t offset() const { return offset_; }
  Device& device() const;
  const BufferSpec& spec() const;

  // Host copies: return when the bytes have arrived (they go through the device's copy queue and timeline).
  void copyin(std::span<const std::byte> src);
  void copyout(std::span<std::byte> dst) const;
  // Copy all of src (same size) from any device, ordered after everything submitted to both devices. Returns
  // without waiting: the completion is the point on this buffer's device after which the data is there.
  Completion copy_from(const Buffer& src);

  template <class T>
  void copyin(std::span<const T> src) {
    copyin(std::as_bytes(src));
  }
  template <class T>
  void copyout(std::span<T> dst) const {
    copyout(std::as_writable_bytes(dst));
  }

 private:
  struct Base;
  Buffer(std::shared_ptr<Base> base, uint64_t offset, uint64_t size)
      : base_(std::move(base)), offset_(offset), size_(size) {}
  std::shared_ptr<Base> base_;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

}  // namespace hcq
