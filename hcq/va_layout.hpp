// Where the process-wide unified VA reservation goes (internal to hcq/).
//
// NVIDIA command streams hold 40-bit addresses (GPFIFO entries, QMD pointers, Ampere's semaphore addresses), so the
// unified VA must lie below 2^40. It is asked for at 64 GiB, clear of the usual low mappings (program, heap) and
// inside ThreadSanitizer's low application range (below 512 GiB).
//
// AddressSanitizer (x86-64 Linux, shadow offset 0x7fff8000, 8 bytes per shadow byte) lays the address space out as
// low memory [0, 2 GiB), its shadow, the shadow gap [0x8fff7000, 0x2008fff7000) (2.25 GiB to just over 2 TiB), the
// high shadow and high memory from 16 TiB up. Below 2^40 that leaves the low 2 GiB, too little for the simulated GPUs'
// queues (a gfx942 CWSR area alone is 138 MiB per queue), and the gap, which the runtime normally maps PROT_NONE.
// With protect_shadow_gap=0 (which hcq/process.cpp makes the default of an ASan build) the runtime leaves the gap
// unmapped, maps the gap's own shadow [0x91ff6000, 0x4091ff7000) (it lies inside the gap), and treats the rest of the
// gap as ordinary application memory: its instrumentation and its interceptors (memcpy and the like ask
// __asan_region_is_poisoned, which accepts gap addresses only under that flag) check it like any other. So under ASan
// the reservation is asked for at 512 GiB: above the gap's shadow, and with the default 256 GiB it ends at 768 GiB,
// below 2^40. The shadow offset is not moved instead: gcc's runtime (the sanitizer build's compiler) has the offset
// built in, so instrumentation compiled for another one would disagree with it.
#pragma once

#include <cstdint>

#include "hcq/backend/sanitizer.hpp"

namespace hcq::va_layout {

using hcq::kAddressSanitizer;

inline constexpr uint64_t kGiB = uint64_t{1} << 30;
// The end of what an NVIDIA command stream can address.
inline constexpr uint64_t kNvAddressLimit = uint64_t{1} << 40;

// AddressSanitizer's x86-64 Linux mapping (compiler-rt's asan_mapping.h), for the checks below.
namespace asan {
inline constexpr uint64_t kShadowOffset = 0x7fff8000;
inline constexpr unsigned kShadowScale = 3;
inline constexpr uint64_t kShadowGapEnd = 0x2008fff7000;  // exclusive
// The shadow of the gap's last byte: the gap's own shadow ends on the page after it.
inline constexpr uint64_t kGapShadowEnd =
    (((kShadowGapEnd - 1) >> kShadowScale) + kShadowOffset + 4096) & ~uint64_t{4095};
}  // namespace asan

#if defined(__x86_64__)
inline constexpr uint64_t kAsanBase = 512 * kGiB;
#else
// Another architecture's ASan mapping is not described here: the kernel chooses, and the NVIDIA backend cannot run.
inline constexpr uint64_t kAsanBase = 0;
#endif

// A hint: the kernel places the reservation elsewhere when that range is taken (or, under ASan with the shadow gap
// protected, is the gap).
inline constexpr uint64_t kPreferredBase = kAddressSanitizer ? kAsanBase : 64 * kGiB;
inline constexpr uint64_t kDefaultSize = 256 * kGiB;

static_assert(64 * kGiB + kDefaultSize <= kNvAddressLimit);
static_assert(kAsanBase == 0 || (kAsanBase >= asan::kGapShadowEnd && kAsanBase + kDefaultSize <= kNvAddressLimit &&
                                 kNvAddressLimit <= asan::kShadowGapEnd),
              "under ASan the default reservation lies in the shadow gap, above the gap's own shadow, below 2^40");

}  // namespace hcq::va_layout
