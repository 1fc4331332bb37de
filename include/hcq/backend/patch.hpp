// The patch engine: where each symbolic operand of a built queue lives, and how to rewrite it cheaply.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "hcq/sym.hpp"

namespace hcq {

// A patch writes (vars[var] + add) >> shift into a location. Locations are (region, byte offset): region 0 is
// absolute (offset is a host pointer, e.g. into kernarg or QMD memory); other regions are bases the owner sets
// and may move (a queue's words move when the queue is bound into device memory).
class PatchList {
 public:
  enum class Kind : uint8_t {
    u32,    // the low 32 bits of the value >> shift, into a 32-bit word
    u64,    // the whole 64-bit value, little endian, 4-byte aligned is enough
    field,  // nbits of (value >> shift) into bits [lo_bit, lo_bit + nbits) of a 32-bit word; other bits kept
  };
  static constexpr uint32_t kAbsolute = 0;

  struct Location {
    uint32_t region = kAbsolute;
    uint64_t offset = 0;  // bytes from the region base (or a host pointer for kAbsolute)
    Kind kind = Kind::u32;
    uint8_t shift = 0;
    uint8_t lo_bit = 0;
    uint8_t nbits = 32;
  };

  // Registers a region and returns its id (>= 1). Its base may be changed later with set_base(). A list holds at
  // most kMaxRegions - 1 regions (a queue needs one: its words), so registering costs no allocation.
  static constexpr uint32_t kMaxRegions = 8;
  uint32_t add_region(std::byte* base);
  void set_base(uint32_t region, std::byte* base);

  // Records that `value` lives at `where`. A constant is written at once and not recorded.
  void add(Sym value, Location where);
  // The same for a 32- or 64-bit word at host address `at` (a kernel argument): inline for a constant, which every
  // eager launch stores several of, so it costs a store rather than add()'s checks.
  void add_absolute(const Sym& value, std::byte* at, Kind kind) {
    if (!value.is_const() || kind == Kind::field) return add(value, {kAbsolute, reinterpret_cast<uint64_t>(at), kind});
    if (kind == Kind::u64) {
      std::memcpy(at, &value.add, 8);
    } else {
      const auto w = static_cast<uint32_t>(value.add);
      std::memcpy(at, &w, 4);
    }
  }

  // Writes every patch whose variable changed since the last apply (all of them on the first apply, or after
  // invalidate()). Throws InvalidArgument, before writing anything, if a patch's variable has no value.
  void apply(std::span<const uint64_t> vars);
  // True if apply(vars) would write anything. Throws like apply() when a variable has no value.
  bool would_change(std::span<const uint64_t> vars) const;
  void invalidate();

  size_t size() const;
  bool empty() const { return size() == 0; }
  // True if any patch targets region kAbsolute (side memory the device reads in place).
  bool has_absolute() const { return absolute_count_ != 0; }

 private:
  struct Patch {
    uint32_t region;
    Kind kind;
    uint8_t shift, lo_bit, nbits;
    uint64_t offset;
    uint64_t add;
  };
  void write(const Patch& p, uint64_t var_value) const;
  [[noreturn]] void throw_missing(std::span<const uint64_t> vars) const;

  std::array<std::byte*, kMaxRegions> bases_{};  // [kAbsolute] stays null
  uint32_t num_regions_ = 1;
  std::vector<std::vector<Patch>> by_var_;  // indexed by variable id
  std::vector<uint64_t> last_;              // value each variable had at the last apply
  std::vector<uint8_t> seen_;               // whether last_[i] is valid
  int32_t max_var_ = -1;                    // highest variable id with patches: apply checks vars covers it
  size_t count_ = 0;
  size_t absolute_count_ = 0;
};

}  // namespace hcq
