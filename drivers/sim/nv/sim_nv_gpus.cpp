// The simulated NVIDIA GPUs. Each row is shaped after a real part of its generation (PCI device id, SM layout,
// VRAM); the simulator backs "VRAM" with host memory reserved lazily, so the sizes cost nothing until used.
#include "sim/nv/sim_nv_gpus.hpp"

#include <algorithm>
#include <array>

#include "hcq/error.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"

namespace hcq::sim {

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

namespace arch = nv::abi::arch_info;  // MC architecture and implementation ids (ctrl2080mc.h)

constexpr std::array kGpus = {
    SimNvGpuSpec{"ampere", "NVIDIA GeForce RTX 3090 (simulated)", nv::NvArch::ampere, 86, 0x2204, 7, 6, 2, 82,
                 24 * kGiB, arch::ga100, arch::impl_ga102},
    // GA100 (sm_80): AMPERE_COMPUTE_A and AMPERE_DMA_COPY_A, whose semaphores are 32-bit only.
    SimNvGpuSpec{"ga100", "NVIDIA A100-SXM4-80GB (simulated)", nv::NvArch::ampere, 80, 0x20b2, 8, 8, 2, 108, 80 * kGiB,
                 arch::ga100, arch::impl_ga100},
    SimNvGpuSpec{"hopper", "NVIDIA H100 80GB HBM3 (simulated)", nv::NvArch::hopper, 90, 0x2330, 8, 9, 2, 132, 80 * kGiB,
                 arch::gh100, arch::impl_gh100},
    SimNvGpuSpec{"blackwell", "NVIDIA B200 (simulated)", nv::NvArch::blackwell, 100, 0x2901, 8, 10, 2, 148, 180 * kGiB,
                 arch::gb100, arch::impl_gb100},
};

}  // namespace

const nv::NvArchInfo& SimNvGpuSpec::arch_info() const {
  const nv::NvArchInfo* a = nv::find_arch_by_sm(sm_version);
  if (a == nullptr) throw InvalidArgument(cat("SIM-NV:", name, ": no architecture row for sm_", sm_version));
  return *a;
}

std::vector<uint32_t> SimNvGpuSpec::classes() const {
  namespace cls = nv::abi::cls;
  const nv::NvClasses& c = arch_info().classes;
  std::vector<uint32_t> out = {cls::memory_system,  cls::memory_local_user,
                               cls::memory_virtual, cls::memory_system_os_descriptor,
                               cls::device,         cls::subdevice,
                               c.context_share,     c.va_space,
                               c.channel_group,     c.gpfifo,
                               c.compute,           c.copy,
                               cls::gt200_debugger};
  out.insert(out.end(), c.usermode.begin(), c.usermode.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool SimNvGpuSpec::supports_class(uint32_t class_id) const {
  const std::vector<uint32_t> all = classes();
  return std::binary_search(all.begin(), all.end(), class_id);
}

std::vector<uint8_t> SimNvGpuSpec::uuid(uint32_t gpu_index) const {
  // FNV-1a over the name, spread over 16 bytes; the index makes two GPUs of one machine differ.
  uint64_t h = 0xcbf29ce484222325ull;
  for (char ch : name) h = (h ^ static_cast<uint8_t>(ch)) * 0x100000001b3ull;
  std::vector<uint8_t> u(16);
  for (size_t i = 0; i < u.size(); ++i) {
    h = (h ^ (gpu_index + i)) * 0x100000001b3ull;
    u[i] = static_cast<uint8_t>(h >> 56);
  }
  return u;
}

const SimNvGpuSpec& SimNvGpuSpec::of(std::string_view name) {
  for (const SimNvGpuSpec& g : kGpus)
    if (g.name == name) return g;
  throw InvalidArgument(cat("SIM-NV:", name, " is not a simulated NVIDIA GPU (known: ", known_names(), ")"));
}

std::vector<std::string> SimNvGpuSpec::names() {
  std::vector<std::string> out;
  for (const SimNvGpuSpec& g : kGpus) out.emplace_back(g.name);
  return out;
}

std::string SimNvGpuSpec::known_names() {
  std::string out;
  for (const SimNvGpuSpec& g : kGpus) out += (out.empty() ? "" : ", ") + std::string(g.name);
  return out;
}

}  // namespace hcq::sim
