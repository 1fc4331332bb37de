// The vocabulary every NVIDIA fact is written in: a bit field with its enum names, a class method (offset + fields),
// a class's method table. Encoders place values through these objects, decoders and the simulator read them back,
// so a number lives in exactly one table. Names are NVIDIA's (the part after NVC56F_, NVC6C0_QMDV03_00_, ...), so a
// decoded stream can be compared against the vendor headers by eye.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace hcq::nv {

struct EnumName {
  uint32_t value;
  std::string_view name;
};

// Bits [lo, lo + width) of something: a 32-bit method data word, a 64-bit GPFIFO entry, or a QMD (where lo counts
// from bit 0 of the whole structure, as NVIDIA's MW(hi:lo) does). width is 1..32 except in GPFIFO entries (<= 64).
struct BitField {
  std::string_view name;
  uint16_t lo = 0;
  uint8_t width = 32;
  std::span<const EnumName> enums = {};

  constexpr uint16_t hi() const { return static_cast<uint16_t>(lo + width - 1); }
  constexpr uint64_t mask() const { return width >= 64 ? ~uint64_t{0} : ((uint64_t{1} << width) - 1u); }
  constexpr bool fits(uint64_t v) const { return (v & ~mask()) == 0; }
  // Within one 32- or 64-bit word (lo < 64): the value shifted into place, extra bits dropped.
  constexpr uint64_t place(uint64_t v) const { return (v & mask()) << lo; }
  constexpr uint64_t get(uint64_t word) const { return (word >> lo) & mask(); }
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

// One method of a class: byte offset in the class's method space (what the pushbuffer header carries, >> 2) and the
// fields of its 32-bit data word. A method without fields is one 32-bit value named like the method.
struct Method {
  std::string_view name;
  uint16_t offset;
  std::span<const BitField> fields = {};

  constexpr const BitField* field(std::string_view n) const {
    for (const BitField& f : fields)
      if (f.name == n) return &f;
    return nullptr;
  }
};

// What kind of engine a class drives; the subchannel binding of a channel follows from it.
enum class ClassKind : uint8_t { host, compute, copy };

// A class's methods, sorted by offset. prefix is how NVIDIA's header names it ("NVC56F").
struct ClassMethods {
  uint32_t class_id;
  std::string_view prefix;
  std::string_view class_name;  // "AMPERE_CHANNEL_GPFIFO_A"
  ClassKind kind;
  std::span<const Method> methods;

  const Method* find(uint32_t offset) const;
  const Method* find(std::string_view name) const;
};

}  // namespace hcq::nv
