// Rounding sizes and addresses up to an alignment: written once, so every backend and the core agree on it.
#pragma once

#include <cstdint>

namespace hcq {

constexpr bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

// v rounded up to a multiple of `align`, a power of two (every page, hardware and ABI alignment is one). A mask,
// not a division: these sit on allocation and encoding paths.
constexpr uint64_t align_up(uint64_t v, uint64_t align) { return (v + align - 1) & ~(align - 1); }

// v rounded down to a multiple of `align`, a power of two.
constexpr uint64_t align_down(uint64_t v, uint64_t align) { return v & ~(align - 1); }

}  // namespace hcq
