// The simulated NVIDIA GPUs (SIM-NV:<name>): what the simulated RM reports for each — PCI ids, marketing name, SM
// layout, VRAM size, architecture ids — shaped after a real part of that generation. The classes a GPU exposes
// come from its NvArchInfo row (drivers/nv/facts/arch.hpp), plus the generation's usermode doorbell classes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nv/facts/arch.hpp"

namespace hcq::sim {

struct SimNvGpuSpec {
  std::string_view name;     // "ampere": the part after SIM-NV:
  std::string_view product;  // "NVIDIA GeForce RTX 3090 (simulated)"
  nv::NvArch arch;
  uint32_t sm_version;                       // 86, 90, 100: which NvArchInfo row (find_arch_by_sm)
  uint16_t pci_device_id;                    // vendor is always 0x10de
  uint32_t gpcs, tpcs_per_gpc, sms_per_tpc;  // the GR layout GR_GET_INFO reports (max per GPC, as RM's litter)
  uint32_t sm_count;                         // SMs enabled on this SKU (<= gpcs * tpcs_per_gpc * sms_per_tpc)
  uint64_t vram_bytes;
  uint32_t mc_architecture;    // NV2080_CTRL_MC_ARCH_INFO_ARCHITECTURE_* (GA100 0x170, GH100 0x180, ...)
  uint32_t mc_implementation;  // NV2080_CTRL_MC_ARCH_INFO_IMPLEMENTATION_*

  const nv::NvArchInfo& arch_info() const;
  // Every class id RM lists for this GPU (NV0080_CTRL_CMD_GPU_GET_CLASSLIST): the object classes the simulated RM
  // lets a process allocate under its device.
  std::vector<uint32_t> classes() const;
  bool supports_class(uint32_t class_id) const;
  // A stable 16-byte GPU UUID ("GPU-..." in nvidia-smi): bytes derived from the name and the GPU's index.
  std::vector<uint8_t> uuid(uint32_t gpu_index) const;

  // The spec of a simulated GPU name; throws hcq::InvalidArgument naming the simulated GPUs otherwise.
  static const SimNvGpuSpec& of(std::string_view name);
  static std::vector<std::string> names();  // in table order
  static std::string known_names();         // "ampere, hopper, blackwell"
};

}  // namespace hcq::sim
