// The devices the multi-device suites spread tensors over: the CPU device's instances CPU:0, CPU:1, CPU:2, or, with
// HCQ_DEVICE naming a GPU, that GPU and its peer (SIM-AMD:gfx1100 and SIM-AMD:gfx1100:1; AMD:0 and AMD:1), with
// CPU:0 as the third: copies from the CPU device into GPU memory are driven by the GPU's copy queue
// (HCQAllocator::transfer), whose ordering against the CPU device's later kernels a ring over the three exercises.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "hcq/device.hpp"
#include "hcq/registry.hpp"

namespace hcq::multitest {

inline std::string default_device() {
  const char* d = std::getenv("HCQ_DEVICE");
  return open_device(d != nullptr && *d != '\0' ? d : "CPU").name();
}

// The second device of the default device's kind.
inline std::string peer_device() {
  const std::string d = default_device();
  if (d.rfind("CPU", 0) == 0) return "CPU:1";
  if (d.rfind("SIM-", 0) == 0) return d + ":1";
  return d.substr(0, d.find(':')) + ":1";  // AMD:0 -> AMD:1
}

inline std::vector<std::string> devices(size_t n) {
  const std::string d = default_device();
  std::vector<std::string> out = {d, peer_device()};
  if (n >= 3) out.push_back(d.rfind("CPU", 0) == 0 ? "CPU:2" : "CPU:0");
  out.resize(n);
  return out;
}

}  // namespace hcq::multitest
