// What the simulated GPUs report in the KFD topology: the values the real parts report.
#include <string>
#include <vector>

#include "hcq/error.hpp"
#include "sim/kfd/sim_kfd.hpp"

namespace hcq::sim {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// gfx942: MI300X (8 XCCs of 38 CUs, 4 SIMDs per CU, wave64); gfx1100: RX 7900 XTX (96 CUs); gfx1201: RX 9070 XT
// (64 CUs). Clocks and firmware versions are those the parts report on recent kernels.
const SimGpuSpec kSpecs[] = {
    {"gfx942", 90402, 0x74a1, 1216, 4, 10, 1, 32, 8, 64, 64, 8, 2, 14, 8, 24, 2100, 150, 20, 192 * kGiB},
    {"gfx1100", 110000, 0x744c, 192, 2, 8, 2, 12, 16, 32, 64, 1, 2, 0, 6, 8, 2482, 2200, 21, 24 * kGiB},
    {"gfx1201", 120001, 0x7550, 128, 2, 8, 2, 8, 16, 32, 64, 1, 2, 0, 6, 8, 2970, 2420, 12, 16 * kGiB},
};

}  // namespace

const SimGpuSpec& SimGpuSpec::of(std::string_view gfx) {
  for (const SimGpuSpec& s : kSpecs)
    if (s.gfx == gfx) return s;
  throw InvalidArgument(cat("no simulated AMD GPU '", gfx, "'; simulated targets: ", known_names()));
}

std::vector<std::string> SimGpuSpec::names() {
  std::vector<std::string> v;
  for (const SimGpuSpec& g : kSpecs) v.emplace_back(g.gfx);
  return v;
}

std::string SimGpuSpec::known_names() {
  std::string s;
  for (const std::string& g : names()) s += (s.empty() ? "" : ", ") + g;
  return s;
}

}  // namespace hcq::sim
