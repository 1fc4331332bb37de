// QMD (queue meta data, the compute launch descriptor SEND_PCAS_A points at) as field tables: V03_00 for Ampere, Ada
// and Hopper (256 bytes), V05_00 for Blackwell (384 bytes). Field names and bit ranges are open-gpu-doc's
// (classes/compute/clc9c0qmd.h, clcbc0qmd.h for V03_00; clcdc0qmd.h, clcec0qmd.h for V05_00); an indexed field
// NAME(i) appears as NAME_0 .. NAME_7 (CONSTANT_BUFFER_VALID_0), as tinygrad and the golden vectors spell them.
//
// Everything that reads or writes a QMD — the builder in encode_qmd, the decoder, the simulated GPU — goes through
// QmdLayout: the raw fields for naming, and QmdRoles for meaning (where the grid width is in this version, by how
// much the program address is shifted), so no code branches on the version.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "nv/facts/bits.hpp"

namespace hcq::nv::qmd {

inline constexpr uint32_t kConstantBuffers = 8;
inline constexpr uint32_t kReleases = 2;  // release semaphores hcq uses (both versions have a third, decoded only)

// Out of line: the errors get() and set() throw (InvalidArgument naming the field).
[[noreturn]] void throw_beyond(size_t words, const BitField& f);
[[noreturn]] void throw_too_wide(const BitField& f, uint64_t value);

// Reads a field of a QMD held as little-endian dwords. Fields may straddle a dword boundary. Throws InvalidArgument
// when the field lies beyond `words`. Inline: the launch encoder sets a score of fields per launch.
inline uint64_t get(std::span<const uint32_t> words, const BitField& f) {
  const uint32_t w = f.lo / 32u, bit = f.lo % 32u;
  if (f.hi() / 32u >= words.size()) throw_beyond(words.size(), f);
  uint64_t span = words[w];
  if (bit + f.width > 32) span |= static_cast<uint64_t>(words[w + 1]) << 32;
  return (span >> bit) & f.mask();
}
// Writes a field, leaving all other bits alone. Throws InvalidArgument when the value does not fit the field (the
// message names it) or the field lies beyond `words`.
inline void set(std::span<uint32_t> words, const BitField& f, uint64_t value) {
  const uint32_t w = f.lo / 32u, bit = f.lo % 32u;
  if (f.hi() / 32u >= words.size()) throw_beyond(words.size(), f);
  if (!f.fits(value)) throw_too_wide(f, value);
  const uint64_t mask = f.mask() << bit;
  const uint64_t bits = (value << bit) & mask;
  words[w] = static_cast<uint32_t>((words[w] & ~mask) | bits);
  if (bit + f.width > 32) words[w + 1] = static_cast<uint32_t>((words[w + 1] & ~(mask >> 32)) | (bits >> 32));
}

struct ReleaseRoles {
  const BitField* address_lower;  // bits 31:0 of the semaphore address
  const BitField* address_upper;  // bits above 31 (8 bits in V3, 25 in V5)
  const BitField* payload_lower;
  const BitField* payload_upper;
  const BitField* enable;
  const BitField* structure_size;  // SEMAPHORE_FOUR_WORDS (payload + timestamp) / ONE_WORD / TWO_WORDS
  const BitField* payload64b;
  const BitField* membar_type;  // FE_NONE / FE_SYSMEMBAR
  const BitField* reduction_enable;
  const BitField* reduction_op;
  const BitField* reduction_format;
};

struct ConstantBufferRoles {
  const BitField* address_lower;  // (address >> cbuf_address_shift) bits 31:0
  const BitField* address_upper;  // (address >> cbuf_address_shift) bits above 31
  const BitField* size_shifted4;  // size in bytes >> 4, rounded up
  const BitField* valid;
  const BitField* invalidate;
};

struct QmdRoles {
  const BitField* major_version;
  const BitField* minor_version;  // QMD_VERSION (V3) / QMD_MINOR_VERSION (V5)
  const BitField* qmd_type;       // V5 only (GRID_CTA = 2); nullptr in V3
  const BitField* qmd_group_id;
  const BitField* sm_global_caching_enable;  // V3 only; nullptr in V5
  const BitField* program_address_lower;     // (address >> program_address_shift) bits 31:0
  const BitField* program_address_upper;
  uint8_t program_address_shift;                        // 0 (V3), 4 (V5)
  const BitField* program_prefetch_addr_lower_shifted;  // address >> 8, bits 31:0
  const BitField* program_prefetch_addr_upper_shifted;  // address >> 40
  const BitField* program_prefetch_size;                // in 256-byte units
  const BitField* program_prefetch_type;
  std::array<const BitField*, 3> grid;            // CTA_RASTER_WIDTH/HEIGHT/DEPTH (V3), GRID_WIDTH/HEIGHT/DEPTH (V5)
  std::array<const BitField*, 3> block;           // CTA_THREAD_DIMENSION0..2
  const BitField* shared_memory_size;             // bytes >> shared_memory_shift
  uint8_t shared_memory_shift;                    // 0 (V3), 7 (V5)
  const BitField* min_sm_config_shared_mem_size;  // carveout KiB / 4 + 1
  const BitField* max_sm_config_shared_mem_size;
  const BitField* target_sm_config_shared_mem_size;
  const BitField* register_count;  // REGISTER_COUNT_V (V3) / REGISTER_COUNT (V5)
  const BitField* barrier_count;
  const BitField* shader_local_memory_low_size;  // bytes per thread >> local_memory_shift
  const BitField* shader_local_memory_high_size;
  uint8_t local_memory_shift;  // 0 (V3), 4 (V5)
  std::array<ConstantBufferRoles, kConstantBuffers> cbuf;
  uint8_t cbuf_address_shift;  // 0 (V3), 6 (V5)
  std::array<ReleaseRoles, kReleases> release;
  const BitField* dependent_qmd0_pointer;  // next QMD address >> 8
  const BitField* dependent_qmd0_enable;
  const BitField* dependent_qmd0_action;  // QMD_SCHEDULE = 1
  const BitField* dependent_qmd0_prefetch;
  const BitField* invalidate_texture_header_cache;
  const BitField* invalidate_texture_sampler_cache;
  const BitField* invalidate_texture_data_cache;
  const BitField* invalidate_shader_data_cache;
  const BitField* invalidate_instruction_cache;
  const BitField* invalidate_shader_constant_cache;
  const BitField* cwd_membar_type;  // L1_NONE / L1_SYSMEMBAR / L1_MEMBAR
  const BitField* sass_version;
  const BitField* api_visible_call_limit;  // _32 / NO_CHECK
  const BitField* sampler_index;
};

// Enum values the builder uses, by their vendor names.
inline constexpr uint32_t kDependentActionSchedule = 1;  // DEPENDENT_QMD0_ACTION_QMD_SCHEDULE
inline constexpr uint32_t kQmdTypeGridCta = 2;           // QMD_TYPE_GRID_CTA (V5)
inline constexpr uint32_t kCwdMembarL1Sysmembar = 1;     // CWD_MEMBAR_TYPE_L1_SYSMEMBAR
inline constexpr uint32_t kApiVisibleCallLimitNoCheck = 1;
inline constexpr uint32_t kStructureFourWords = 0, kStructureOneWord = 1, kStructureTwoWords = 2;
inline constexpr uint32_t kMembarFeSysmembar = 1;  // RELEASE*_MEMBAR_TYPE_FE_SYSMEMBAR
// A QMD must be 256-byte aligned (SEND_PCAS_A and DEPENDENT_QMD0_POINTER carry address >> 8) and below 2^40.
inline constexpr uint32_t kAlignment = 256;
inline constexpr uint64_t kMaxAddress = (uint64_t{1} << 40) - 1;

struct QmdLayout {
  uint8_t major_version;             // 3 or 5
  uint8_t minor_version;             // 0
  uint32_t size_words;               // 64 (V3) or 96 (V5)
  std::string_view prefix;           // "NVC6C0_QMDV03_00" / "NVCDC0_QMDV05_00"
  std::span<const BitField> fields;  // sorted by lo
  QmdRoles roles;

  const BitField* find(std::string_view name) const;
  uint32_t size_bytes() const { return size_words * 4; }
};

// The layout for a QMD major version (3 or 5); throws InvalidArgument for any other.
const QmdLayout& layout(uint32_t major_version);
// The major version a QMD in memory claims (QMD_MAJOR_VERSION sits at different bits in V3 and V5): 3 or 5 when the
// words carry a version hcq knows, else 0. Needs at least 64 words.
uint32_t detect_version(std::span<const uint32_t> words);

}  // namespace hcq::nv::qmd
