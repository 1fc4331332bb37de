// Submitting a schedule's kernels: consecutive kernels of one device go into one queue and one timeline
// submission, and the queue is kept until the device has run it instead of being destroyed (which waits for the
// device) at once, so a realize returns as soon as its work is submitted.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "hcq/device.hpp"
#include "hcq/program.hpp"

namespace hcq::fw {

class KernelBatch {
 public:
  explicit KernelBatch(Device& dev);
  KernelBatch(const KernelBatch&) = delete;
  KernelBatch& operator=(const KernelBatch&) = delete;
  ~KernelBatch();  // submits what is left (errors are swallowed there: call submit() to see them)
  Device& device() const { return dev_; }
  // `what` names the kernel and its tensor op in the message of a fault it causes (fault_context.hpp).
  void add(const Program& program, std::span<const uint64_t> bufs, std::span<const uint32_t> vals,
           std::array<uint32_t, 3> global, std::array<uint32_t, 3> local, std::string what);
  // Submits the kernels added so far (if any) on the device's timeline.
  void submit();

 private:
  Device& dev_;
  std::unique_ptr<HWQueue> queue_;
  struct Launch {
    const Program* program;
    LaunchArgs args;
    Dims global, local;
    std::string what;
  };
  std::vector<Launch> launches_;
};

}  // namespace hcq::fw
