// The kernels `hcq bench` launches, in each device interface's own source language. This is the one place a new
// backend adds its entry.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace hcq {
class Device;
class Program;
}  // namespace hcq

namespace hcq::tool {

struct BenchKernels {
  // Does nothing, takes nothing: launch latency is the queue's cost, not the kernel's.
  std::string empty_source;
  static constexpr const char* kEmptyName = "empty";
  // Does nothing with one buffer address and one 32-bit value: enqueue cost with arguments to patch.
  std::string args_source;
  static constexpr const char* kArgsName = "args";
};

// nullopt when no kernels are written yet for this interface (DeviceInfo::interface).
std::optional<BenchKernels> bench_kernels_for(std::string_view interface);

// The args kernel compiled (cached) and loaded on `dev`; throws hcq::Error naming the interface when no bench
// kernels are written for it.
std::unique_ptr<Program> load_args_kernel(Device& dev);

}  // namespace hcq::tool
