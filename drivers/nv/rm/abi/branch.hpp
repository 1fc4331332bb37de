// The RM ABI per driver branch: which branches we know, the layouts that differ between them, and how the running
// driver's version is read and matched. Everything else in abi/ is the same in every supported branch.
//
// What differs 570 -> 580 among the blocks we send (open-gpu-kernel-modules 570.86.15 .. 570.211.01 against
// 580.65.06 .. 580.142; nothing changes within a branch):
//   NVOS46 (RM_MAP_MEMORY_DMA) gained flags2 and kindOverride after flags: 56 -> 64 bytes, dma_offset 40 -> 48.
//   NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS gained bSkipEnable: 2 -> 3 bytes.
//   NV2080_CTRL_FB_GET_INFO_V2_PARAMS: NV2080_CTRL_FB_INFO_MAX_LIST_SIZE 0x39 -> 0x80 pairs (460 -> 1028 bytes).
//   NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS: 100 -> 200 classes (404 -> 804 bytes).
// RM checks a control's parameter size exactly (rmapi/control.c), so those sizes are per branch here.
//   NV_VASPACE_ALLOCATION_PARAMETERS gained pasid at its end: 48 -> 56 bytes. An allocation copies the class's own
//   size whatever the caller says (resource_desc.c), so the 56-byte block serves both.
// (Also changed, not used here: NVOS32 (VID_HEAP_CONTROL) lost its Dump/alignBank members; the dma-buf export
// block gained bAllowMmap; UVM dropped DEBUG_ACCESS_MEMORY and added DISCARD.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv::abi {

// NVOS46 (RM_MAP_MEMORY_DMA): the fields and where each branch puts them. Offsets 0..31 (handles, offset, length)
// are the same everywhere; flags2 and kind_override exist only where their offset is non-zero.
struct MapMemoryDmaLayout {
  uint32_t size;
  uint32_t flags, flags2, kind_override, dma_offset, status;
};
namespace map_memory_dma_common {
constexpr uint32_t client = 0, device = 4, dma = 8, memory = 12, offset = 16, length = 24;
}

// The parameter sizes of the controls whose blocks differ between branches (the blocks in ctrl.hpp are the
// largest; a shorter branch reads and writes only their first bytes).
struct ControlSizes {
  uint32_t fb_info_v2;       // 4 + 8 * the branch's NV2080_CTRL_FB_INFO_MAX_LIST_SIZE
  uint32_t classlist_v2;     // 4 + 4 * the branch's NV0080_CTRL_GPU_CLASSLIST_V2_MAX_SIZE
  uint32_t gpfifo_schedule;  // bEnable, bSkipSubmit[, bSkipEnable]
  uint32_t fb_info_max_list() const { return (fb_info_v2 - 4) / 8; }
};

struct BranchAbi {
  unsigned major;         // 570
  std::string_view name;  // "r570"
  MapMemoryDmaLayout map_memory_dma;
  ControlSizes controls;
};

// The branches we know, oldest first.
std::span<const BranchAbi> supported_branches();
// "570, 580": for messages.
std::string supported_branches_text();
// The branch of that major version, or nullptr.
const BranchAbi* find_branch(unsigned major);

// A driver version as the module reports it: "580.126.20".
struct DriverVersion {
  unsigned major = 0, minor = 0, patch = 0;
  std::string text;
  bool open_module = false;  // known only from /proc/driver/nvidia/version ("Open Kernel Module")
};
// "580.126.20" or "570.86" (nothing else around it); nullopt if not a version.
std::optional<DriverVersion> parse_driver_version(std::string_view text);
// The text of /proc/driver/nvidia/version: the version on its NVRM line, and whether the module is the open one.
std::optional<DriverVersion> parse_proc_version(std::string_view text);
// The branch for `v`; throws UnsupportedDriver("NVIDIA driver 999.1 is not supported (supported branches: 570,
// 580)") otherwise.
const BranchAbi& select_branch(const DriverVersion& v);

// What a caller fills in or reads from an NVOS46 block; encode/decode lay it out as `layout` says.
struct MapMemoryDma {
  Handle client = 0, device = 0, dma = 0, memory = 0;
  uint64_t offset = 0, length = 0;
  uint32_t flags = 0, flags2 = 0, kind_override = 0;
  uint64_t dma_offset = 0;  // in: the VA when nvos46 dma_offset_fixed is set; out: where it was mapped
  NvStatus status = 0;
};
// `out` must be layout.size bytes.
void encode_map_memory_dma(const MapMemoryDmaLayout& layout, const MapMemoryDma& p, std::span<std::byte> out);
MapMemoryDma decode_map_memory_dma(const MapMemoryDmaLayout& layout, std::span<const std::byte> in);

}  // namespace hcq::nv::abi
