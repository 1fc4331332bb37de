// Completion: a point on one device's timeline, handed back by every submission that follows the timeline protocol
// (launches, copies, graph replays), to wait on or query later.
#pragma once

#include <cstdint>

namespace hcq {

class Device;

// Done once the device's timeline signal has reached `value()`. A default-constructed Completion is empty and
// counts as done. Cheap to copy; any thread may query or wait on it.
// Lifetime: refers to its device without owning it; use it while the device is open (a Buffer or a tensor that
// holds the device keeps it open).
class Completion {
 public:
  Completion() = default;
  Completion(Device& device, uint64_t value, uint64_t epoch) : device_(&device), value_(value), epoch_(epoch) {}

  Device* device() const { return device_; }
  uint64_t value() const { return value_; }
  bool empty() const { return device_ == nullptr; }

  // True once the device has passed this point; never blocks, never throws (a faulted device's error comes from
  // wait() or Device::synchronize()).
  bool done() const;
  // Blocks until done (HCQ_WAIT_TIMEOUT_MS, which restarts while the device makes progress), then rethrows the
  // device's sticky error if it has one: a faulted device never reports its work as done.
  void wait() const;

 private:
  friend class Device;
  Device* device_ = nullptr;
  uint64_t value_ = 0;
  // The device's timeline epoch when the value was taken: the timeline restarts at 1 after a swap (32-bit GPUs)
  // or set_timeline_value, and everything from an earlier epoch finished before that restart.
  uint64_t epoch_ = 0;
};

}  // namespace hcq
