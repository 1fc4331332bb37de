// AMDGPU ELF facts (LLVM's AMDGPUUsage): the header values of an AMDHSA code object, the e_flags machine number of
// each gfx target we know, the metadata note type and the one dynamic relocation a code object may carry. Written
// once here; the loader and the compiler's checks read them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hcq::amd::elf {

inline constexpr uint16_t kMachineAmdgpu = 224;  // e_machine EM_AMDGPU
inline constexpr uint8_t kOsAbiAmdhsa = 64;      // e_ident[EI_OSABI] ELFOSABI_AMDGPU_HSA
// e_ident[EI_ABIVERSION]: 1 = code object v3, 2 = v4, 3 = v5, 4 = v6. v3 has another e_flags feature encoding, so
// the loader accepts v4 and later.
inline constexpr uint8_t kAbiVersionV4 = 2, kAbiVersionV5 = 3, kAbiVersionV6 = 4;
inline constexpr uint32_t kFlagsMachMask = 0xff;     // EF_AMDGPU_MACH
inline constexpr uint32_t kNoteAmdgpuMetadata = 32;  // NT_AMDGPU_METADATA, owner "AMDGPU", a msgpack document
inline constexpr std::string_view kNoteOwner = "AMDGPU";
inline constexpr uint32_t kRelocNone = 0, kRelocRelative64 = 13;  // R_AMDGPU_NONE, R_AMDGPU_RELATIVE64
inline constexpr uint32_t kKernelDescriptorBytes = 64;
inline constexpr uint32_t kCodeAlignment = 256;  // COMPUTE_PGM_LO holds address >> 8

struct MachEntry {
  std::string_view gfx;
  uint8_t mach;  // EF_AMDGPU_MACH_AMDGCN_*
};
// gfx950 (0x4f) is LLVM 20's; it is listed so a code object for it is named correctly, not built.
inline constexpr MachEntry kMachines[] = {
    {"gfx90a", 0x3f},  {"gfx940", 0x40},  {"gfx941", 0x4b},  {"gfx942", 0x4c},  {"gfx950", 0x4f},
    {"gfx1030", 0x36}, {"gfx1100", 0x41}, {"gfx1101", 0x46}, {"gfx1102", 0x47}, {"gfx1103", 0x44},
    {"gfx1150", 0x43}, {"gfx1151", 0x4a}, {"gfx1200", 0x48}, {"gfx1201", 0x4e},
};

inline std::optional<std::string_view> gfx_of_mach(uint32_t mach) {
  for (const MachEntry& e : kMachines)
    if (e.mach == mach) return e.gfx;
  return std::nullopt;
}
inline std::optional<uint8_t> mach_of_gfx(std::string_view gfx) {
  for (const MachEntry& e : kMachines)
    if (e.gfx == gfx) return e.mach;
  return std::nullopt;
}

}  // namespace hcq::amd::elf
