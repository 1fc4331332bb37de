// Register facts per graphics generation: the compute (SH) registers a dispatch writes and the NBIO HDP-flush pair,
// with their dword addresses and fields. Addresses are absolute dword offsets as PM4 sees them (segment base added).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "amd/fields.hpp"

namespace hcq::amd {

// All registers known for one generation, sorted by nothing in particular (they are few; lookups are linear).
struct RegisterTable {
  std::string_view name;  // e.g. "gc_11_0_0 + nbio_4_3_0"
  std::span<const Register> regs;
  // COMPUTE_TMPRING_SIZE (Mesa ac_get_scratch_tmpring_size): WAVESIZE counts bytes per wave in units of
  // 2^scratch_wave_shift (1 KiB on GC 9, 256 bytes on GC 11/12); WAVES counts scratch wave slots per XCC on GC 9,
  // per shader engine on GC 11/12.
  uint8_t scratch_wave_shift = 10;
  bool tmpring_waves_per_se = false;

  const Register* find(uint32_t addr) const;
  const Register* find(std::string_view name) const;
};

// The tables. gfx942 and gfx950 share GC 9.4.3's compute registers; gfx11 and gfx12 differ only in fields.
extern const RegisterTable kRegsGc9_4;
extern const RegisterTable kRegsGc11;
extern const RegisterTable kRegsGc12;

// SET_SH_REG addresses registers relative to this base, SET_UCONFIG_REG to the next one (same on GC 9..12).
inline constexpr uint32_t kShRegBase = 0x2c00;
inline constexpr uint32_t kShRegEnd = 0x3000;
inline constexpr uint32_t kUconfigRegBase = 0xc000;

}  // namespace hcq::amd
