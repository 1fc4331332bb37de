// Where the process-wide unified VA reservation goes (internal to hcq/).
//
// NVIDIA command streams hold 40-bit addresses (GPFIFO entries, QMD pointers, Ampere's semaphore addresses), so the
// unified VA must lie below 2^40. It is asked for at 64 GiB, clear of the usual low mappings (program, heap) and
// inside ThreadSanitizer's low application range (below 512 GiB). AddressSanitizer keeps its shadow between 2 GiB
// and 16 TiB on x86-64, leaving only the low 2 GiB below 2^40: too little for the simulated GPUs' queues (a gfx942
// CWSR area alone is 138 MiB per queue). So under ASan the reservation goes where the kernel puts it (above 16 TiB)
// and the NVIDIA backend cannot run there; scripts/test.sh leaves the NV-over-SIM-NV tests out of the ASan build.
#pragma once

#include <cstdint>

#include "hcq/backend/sanitizer.hpp"

namespace hcq::va_layout {

using hcq::kAddressSanitizer;

inline constexpr uint64_t kGiB = uint64_t{1} << 30;
// A hint: the kernel places the reservation elsewhere when that range is taken.
inline constexpr uint64_t kPreferredBase = kAddressSanitizer ? 0 : 64 * kGiB;  // 0: no hint
inline constexpr uint64_t kDefaultSize = 256 * kGiB;

}  // namespace hcq::va_layout
