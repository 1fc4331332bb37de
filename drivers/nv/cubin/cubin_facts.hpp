// NVIDIA cubin facts: the ELF header values of a CUDA executable, how e_flags name the SM version, the section
// naming scheme, the .nv.info attribute records (EIATTR_* ids and EIFMT_* formats, as the CUDA binary utilities
// name them) and the R_CUDA_* relocation types. Written once here; the loader, its tests and the fuzz target read
// them. Values checked against cubins from CUDA 13 NVRTC (sm_80 ... sm_120) and public readers (tinygrad's
// ops_nv.py, CuAssembler's tables).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace hcq::nv::cubin {

// ---- header ----
inline constexpr uint16_t kMachineCuda = 190;  // e_machine EM_CUDA
inline constexpr uint16_t kTypeExec = 2;       // ET_EXEC: what NVRTC/nvlink produce (ET_REL needs nvlink first)
inline constexpr uint16_t kTypeRel = 1;
// e_flags: the SM version sits in bits 0..7 for ELF ABI version 7 and older (CUDA <= 12.x) and in bits 8..15 from
// ABI version 8 on (CUDA 13: sm_80 = 0x...5004, sm_90 = 0x...5a04, sm_100 = 0x...6402, sm_120 = 0x...7802).
inline constexpr uint8_t kAbiVersionSmHigh = 8;
inline constexpr uint32_t sm_of_flags(uint8_t abi_version, uint32_t e_flags) {
  return abi_version >= kAbiVersionSmHigh ? (e_flags >> 8) & 0xff : e_flags & 0xff;
}

// ---- sections ----
inline constexpr uint32_t kSectionTypeNvInfo = 0x70000000;         // SHT_LOPROC: .nv.info and .nv.info.<kernel>
inline constexpr std::string_view kText = ".text.";                // .text.<function>
inline constexpr std::string_view kInfo = ".nv.info";              // global; .nv.info.<kernel> per kernel
inline constexpr std::string_view kConstantBank = ".nv.constant";  // .nv.constant<N> or .nv.constant0.<kernel>
inline constexpr std::string_view kShared = ".nv.shared.";         // .nv.shared.<kernel> (NOBITS)
inline constexpr std::string_view kGlobal = ".nv.global";          // .nv.global (NOBITS) and .nv.global.init
inline constexpr std::string_view kSharedReserved = ".nv.shared.reserved.";  // shared memory the compiler keeps
inline constexpr uint32_t kMaxConstantBank = 17;                             // c[0x0] .. c[0x11]
// Blackwell cubins carry a second description of the same code for the driver's finalizer (".nv.merc.*",
// ".nv.capmerc.text.<k>", processor-specific section types, some aliasing the bytes of the real sections). A loader
// of the SASS itself skips them.
inline constexpr std::string_view kMercPrefixes[] = {".nv.merc.", ".nv.capmerc."};
// Where the loader puts what it lays out. Code wants 128 bytes (the instruction prefetch granule); constant banks
// are bound at 256-byte aligned addresses; global data at the section's own alignment (at least 8).
inline constexpr uint64_t kTextAlign = 128, kConstantAlign = 256, kDataAlign = 8;

// ---- .nv.info records ----
// Each record: u8 format, u8 attribute, then by format: NVAL nothing (u16 0), BVAL u8 value (+pad), HVAL u16 value,
// SVAL u16 size + size bytes. Records are not padded beyond that.
enum class InfoFormat : uint8_t { nval = 0x01, bval = 0x02, hval = 0x03, sval = 0x04 };

enum class Attr : uint8_t {
  max_threads = 0x05,         // SVAL u32 x, y, z (__launch_bounds__)
  param_cbank = 0x0a,         // SVAL u32 symbol (.nv.constant0.<k>), u16 param offset, u16 param size
  reqntid = 0x10,             // SVAL u32 x, y, z (required block size)
  frame_size = 0x11,          // SVAL u32 symbol, u32 bytes (global .nv.info)
  min_stack_size = 0x12,      // SVAL u32 symbol, u32 bytes (global .nv.info): stack the kernel needs, callees included
  kparam_info = 0x17,         // SVAL u32 index, u16 ordinal, u16 offset, u32 flags (size in bits 18..31)
  cbank_param_size = 0x19,    // HVAL: bytes of parameters in cbank0
  maxreg_count = 0x1b,        // HVAL
  exit_instr_offsets = 0x1c,  // SVAL u32 offsets into .text.<k>
  crs_stack_size = 0x1e,      // SVAL u32
  max_stack_size = 0x23,      // SVAL u32 symbol, u32 bytes
  regcount = 0x2f,            // SVAL u32 symbol, u32 registers (global .nv.info, sometimes per kernel)
  cuda_api_version = 0x37,    // SVAL u32
};
// KPARAM_INFO's flags word: the parameter's size in bytes.
inline constexpr uint32_t kKparamSizeShift = 18, kKparamSizeMask = 0x3fff;

// ---- relocations (R_CUDA_*) ----
// What the loader applies. "bits a..b" is a field inside the 64-bit little-endian word at r_offset.
enum class Reloc : uint32_t {
  none = 0,
  r32 = 1,  // R_CUDA_32: u32 = S + A
  r64 = 2,  // R_CUDA_64: u64 = S + A
  // R_CUDA_G32/G64: the generic address of a global (e.g. a __device__ pointer initialised to another global).
  // Global memory's generic address is its VA (unified addressing), so they are R_CUDA_32/64.
  g32 = 3,
  g64 = 4,
  abs32_20 = 42,     // R_CUDA_ABS32_20: bits 20..51 = S + A (must fit 32 bits)
  abs32_lo_20 = 43,  // R_CUDA_ABS32_LO_20: bits 20..51 = low 32 bits
  abs32_hi_20 = 44,  // R_CUDA_ABS32_HI_20: bits 20..51 = high 32 bits
  abs32_32 = 55,     // R_CUDA_ABS32_32: bits 32..63 = S + A (must fit 32 bits)
  abs32_lo_32 = 56,  // R_CUDA_ABS32_LO_32
  abs32_hi_32 = 57,  // R_CUDA_ABS32_HI_32
};
struct RelocFact {
  Reloc type;
  std::string_view name;
  uint32_t bytes;  // bytes the field's word spans from r_offset
  uint32_t shift;  // first bit of the field
  enum Part { whole, low, high } part;
  bool must_fit_32;
};
inline constexpr RelocFact kRelocs[] = {
    {Reloc::r32, "R_CUDA_32", 4, 0, RelocFact::whole, true},
    {Reloc::r64, "R_CUDA_64", 8, 0, RelocFact::whole, false},
    {Reloc::g32, "R_CUDA_G32", 4, 0, RelocFact::whole, true},
    {Reloc::g64, "R_CUDA_G64", 8, 0, RelocFact::whole, false},
    {Reloc::abs32_20, "R_CUDA_ABS32_20", 8, 20, RelocFact::whole, true},
    {Reloc::abs32_lo_20, "R_CUDA_ABS32_LO_20", 8, 20, RelocFact::low, false},
    {Reloc::abs32_hi_20, "R_CUDA_ABS32_HI_20", 8, 20, RelocFact::high, false},
    {Reloc::abs32_32, "R_CUDA_ABS32_32", 8, 32, RelocFact::whole, true},
    {Reloc::abs32_lo_32, "R_CUDA_ABS32_LO_32", 8, 32, RelocFact::low, false},
    {Reloc::abs32_hi_32, "R_CUDA_ABS32_HI_32", 8, 32, RelocFact::high, false},
};
inline std::optional<RelocFact> reloc_fact(uint32_t type) {
  for (const RelocFact& f : kRelocs)
    if (static_cast<uint32_t>(f.type) == type) return f;
  return std::nullopt;
}

}  // namespace hcq::nv::cubin
