// Buffer: the runtime layer's handle on device memory. Allocated lazily, views share a base, copies in, out and
// across devices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "hcq/memory.hpp"

namespace hcq {

class Device;

// Ownership: a Buffer and its views share one base allocation, freed (to the device allocator's cache) when the
// last of them goes. The device must outlive every buffer on it.
class Buffer {
 public:
  Buffer(Device& dev, uint64_t size, BufferSpec spec = {});
  // Opens the device by name through the registry.
  Buffer(const std::string& device_name, uint64_t size, BufferSpec spec = {});

  // A view of [offset, offset+size) of this buffer; shares (and keeps alive) the base. Throws InvalidArgument
  // when the range is outside.
  Buffer view(uint64_t offset, uint64_t size) const;

  void ensure_allocated();
  bool allocated() const;
  uint64_t va();  // allocates if needed
  uint64_t size() const { return size_; }
  uint64_t offset() const { return offset_; }
  Device& device() const;
  const BufferSpec& spec() const;

  void copyin(std::span<const std::byte> src);
  void copyout(std::span<std::byte> dst);
  // Copy all of src (same size) from any device.
  void copy_from(Buffer& src);

  template <class T>
  void copyin(std::span<const T> src) { copyin(std::as_bytes(src)); }
  template <class T>
  void copyout(std::span<T> dst) { copyout(std::as_writable_bytes(dst)); }

 private:
  struct Base;
  Buffer(std::shared_ptr<Base> base, uint64_t offset, uint64_t size) : base_(std::move(base)), offset_(offset), size_(size) {}
  std::shared_ptr<Base> base_;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
};

}  // namespace hcq
