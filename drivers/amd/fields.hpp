// The vocabulary every AMD packet fact is written in: a bit field of a packet dword, its enum names, a packet
// layout. Encoders place values through these same objects and decoders read them back, so a fact lives in one place.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hcq::amd {

struct EnumName {
  uint32_t value;
  std::string_view name;
};

// Bits [lo, lo + width) of dword `dword` of a packet (dword 0 is the header). width 64 means a 64-bit value whose low
// half is dword `dword` and high half dword `dword + 1` (addresses, 64-bit data); lo is then 0.
struct Field {
  std::string_view name;
  uint8_t dword = 0;
  uint8_t lo = 0;
  uint8_t width = 32;
  std::span<const EnumName> enums = {};

  constexpr bool is64() const { return width == 64; }
  constexpr uint32_t mask() const { return width >= 32 ? 0xffffffffu : ((1u << width) - 1u); }
  // The value placed into its dword (value bits beyond the width are dropped, as the hardware would ignore them).
  constexpr uint32_t place(uint64_t v) const { return (static_cast<uint32_t>(v) & mask()) << lo; }
  constexpr uint32_t get(uint32_t word) const { return (word >> lo) & mask(); }
  // Enum name for a value, or empty.
  constexpr std::string_view name_of(uint64_t v) const {
    for (const EnumName& e : enums)
      if (e.value == v) return e.name;
    return {};
  }
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
