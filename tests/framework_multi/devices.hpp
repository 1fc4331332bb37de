// The devices the multi-device suites spread tensors over: the CPU device's instances CPU:0, CPU:1, CPU:2, or, with
// HCQ_DEVICE naming a GPU, that GPU and its peer (SIM-AMD:gfx1100 and SIM-AMD:gfx1100:1; AMD:0 and AMD:1), with
// the first GPU again as the third. Not CPU:0 as the third: a copy from the CPU device into GPU memory is driven by
// the GPU's copy queue, and the CPU device's later kernels are not held back until it has read its source
// (HCQAllocator::transfer's dst_drives case), so a ring over {GPU, GPU peer, CPU:0} reads a reused arena slot about
// one run in five (reported with the branch; a GPU-with-CPU test belongs with that fix).
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
  if (n >= 3) out.push_back(d.rfind("CPU", 0) == 0 ? "CPU:2" : d);
  out.resize(n);
  return out;
}

}  // namespace hcq::multitest
