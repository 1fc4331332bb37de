// Program: a kernel loaded on a device, and an eager launch that follows the timeline protocol.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "hcq/completion.hpp"
#include "hcq/signal.hpp"
#include "hcq/sym.hpp"

namespace hcq {

class Buffer;
class Device;

struct LaunchLimits {
  uint32_t max_threads_per_group = 1024;     // product of local dims
  uint32_t max_local[3] = {1024, 1024, 64};  // per dim
  uint32_t max_global[3] = {0x7fffffff, 65535, 65535};
};

// Ownership: created by Device::load_program, owned by the caller; it keeps a shared device open (see Device).
// Destroying it while launches are in flight waits for the device first.
// Threads: launches of one Program may come from several threads at once (each builds its own queue; the timed
// form serialises on the program's timing signals).
class Program {
 public:
  virtual ~Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  const std::string& name() const { return name_; }
  Device& device() const { return dev_; }
  uint32_t num_bufs() const { return num_bufs_; }
  uint32_t num_vals() const { return num_vals_; }
  const LaunchLimits& limits() const { return limits_; }

  // Throws InvalidArgument for the wrong number of buffers/values or dims outside limits() (zero included).
  void check_launch(size_t nbufs, size_t nvals, const uint32_t global[3], const uint32_t local[3]) const;

  // Eager launch on the device's timeline (Device::submit: wait for the previous submission, exec, signal): returns
  // its completion without waiting. Throws InvalidArgument (check_launch) before anything is submitted.
  Completion launch(std::span<const uint64_t> buf_addrs, std::span<const uint32_t> vals, std::array<uint32_t, 3> global,
                    std::array<uint32_t, 3> local) const;
  // The same with buffers, which must live on this program's device: their addresses are the kernel's buffer
  // arguments (a buffer not yet allocated is allocated now).
  Completion launch(std::span<const Buffer* const> bufs, std::span<const uint32_t> vals, std::array<uint32_t, 3> global,
                    std::array<uint32_t, 3> local) const;
  // launch(), and with wait=true also blocks until done (timestamps around the kernel) and returns the kernel's
  // device time in seconds.
  std::optional<double> operator()(std::span<const uint64_t> buf_addrs, std::span<const uint32_t> vals,
                                   std::array<uint32_t, 3> global, std::array<uint32_t, 3> local,
                                   bool wait = false) const;

 protected:
  // For backend destructors, before they free the code: waits for the device to finish what may still run this
  // program, then calls `on_unload` (e.g. unregistering a host twin). Never throws: a faulted or hung device will
  // not run what is left, and a failing unload must not stop the image being freed.
  void retire(const std::function<void()>& on_unload) noexcept;
  Program(Device& dev, std::string name, uint32_t num_bufs, uint32_t num_vals, LaunchLimits limits);

 private:
  Device& dev_;
  std::shared_ptr<Device> keep_open_;  // dev_, when the registry shares it (see Device); else null
  std::string name_;
  uint32_t num_bufs_, num_vals_;
  LaunchLimits limits_;
  // Timed launches (wait=true) reuse these two signals instead of taking fresh ones from the pool every call.
  mutable std::mutex timing_mu_;
  mutable OwnedSignal timing_start_, timing_end_;
};

}  // namespace hcq
