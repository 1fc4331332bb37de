// The bit field every vendor's facts are written in: bits [lo, lo + width) of a word, with the names of its values.
// Encoders place values through these objects and decoders and the simulators read them back, so a number lives in
// one table; AMD packets and registers, NVIDIA methods, GPFIFO entries and QMDs all use this one type.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hcq {

struct EnumName {
  uint32_t value;
  std::string_view name;
};

// Bits [lo, lo + width) of a 32-bit word, a 64-bit word (a GPFIFO entry), or a larger structure (a QMD, where lo
// counts from bit 0 of the whole structure, as NVIDIA's MW(hi:lo) does). width is 1..64.
struct BitField {
  std::string_view name;
  uint16_t lo = 0;
  uint8_t width = 32;
  std::span<const EnumName> enums = {};

  constexpr uint16_t hi() const { return static_cast<uint16_t>(lo + width - 1); }
  constexpr uint64_t mask() const { return width >= 64 ? ~uint64_t{0} : ((uint64_t{1} << width) - 1u); }
  constexpr bool fits(uint64_t v) const { return (v & ~mask()) == 0; }
  // Within one 32- or 64-bit word (lo < 64): the value shifted into place, bits beyond the width dropped (as the
  // hardware ignores them). A 32-bit word takes the low half.
  constexpr uint64_t place(uint64_t v) const { return (v & mask()) << lo; }
  constexpr uint64_t get(uint64_t word) const { return (word >> lo) & mask(); }
  // The name of value v, or empty.
  constexpr std::string_view name_of(uint64_t v) const {
    for (const EnumName& e : enums)
      if (e.value == v) return e.name;
    return {};
  }
  // The value of the enum called `n`; a missing name is a table bug (returns ~0u, which no field can hold).
  constexpr uint32_t value_of(std::string_view n) const {
    for (const EnumName& e : enums)
      if (e.name == n) return e.value;
    return ~0u;
  }
};

}  // namespace hcq
