// The vocabulary every NVIDIA fact is written in: the shared bit field (common/bit_field.hpp), a class method
// (offset + fields), a class's method table. Encoders place values through these objects, decoders and the simulator read them back,
// so a number lives in exactly one table. Names are NVIDIA's (the part after NVC56F_, NVC6C0_QMDV03_00_, ...), so a
// decoded stream can be compared against the vendor headers by eye.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "common/bit_field.hpp"

namespace hcq::nv {

using hcq::BitField;
using hcq::EnumName;

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
