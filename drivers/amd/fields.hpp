// The vocabulary every AMD packet fact is written in: a bit field (common/bit_field.hpp) at a packet dword, a packet
// layout, a register. Encoders place values through these same objects and decoders read them back, so a fact lives
// in one place.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/bit_field.hpp"

namespace hcq::amd {

using hcq::BitField;
using hcq::EnumName;

// A bit field of dword `dword` of a packet (dword 0 is the header); the bits are the shared BitField's. width 64 means
// a 64-bit value whose low half is dword `dword` and high half dword `dword + 1` (addresses, 64-bit data); lo is
// then 0. Written {name, dword, lo, width, enums}, the order the packet tables read in.
struct Field : BitField {
  uint8_t dword = 0;

  constexpr Field() = default;
  constexpr Field(std::string_view name, uint8_t dword, uint8_t lo, uint8_t width = 32,
                  std::span<const EnumName> enums = {})
      : BitField{name, lo, width, enums}, dword(dword) {}

  constexpr bool is64() const { return width == 64; }
};

// A fixed-shape packet: name, length in dwords (0 = variable, the decoder takes it from the header) and fields.
struct Layout {
  std::string_view name;
  uint32_t words;
  std::span<const Field> fields;

  // The field named `n`; the tables are checked at start-up, so a missing name is a programming error (nullptr).
  constexpr const Field* find(std::string_view n) const {
    for (const Field& f : fields)
      if (f.name == n) return &f;
    return nullptr;
  }
};

// A hardware register: dword address (as PM4 and the register headers count it) and its fields (dword is 0).
struct Register {
  std::string_view name;
  uint32_t addr;
  std::span<const Field> fields = {};
};

}  // namespace hcq::amd
