// Where the process-wide unified VA reservation goes (internal to hcq/).
//
// NVIDIA command streams hold 40-bit addresses (GPFIFO entries, QMD pointers, Ampere's semaphore addresses), so the
// unified VA must lie below 2^40. Normally it is asked for at 64 GiB, clear of the usual low mappings (program, heap)
// and inside ThreadSanitizer's low application range (below 512 GiB). AddressSanitizer keeps its shadow between
// 2 GiB and 16 TiB on x86-64, so there the only application memory below 2^40 is the low 2 GiB: the reservation
// goes at 256 MiB and defaults to 1.5 GiB, which the test suites fit in.
#pragma once

#include <cstdint>

namespace hcq::va_layout {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
#else
inline constexpr bool kAddressSanitizer = false;
#endif

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;
// A hint: the kernel places the reservation elsewhere when that range is taken.
inline constexpr uint64_t kPreferredBase = kAddressSanitizer ? 256 * kMiB : 64 * kGiB;
inline constexpr uint64_t kDefaultSize = kAddressSanitizer ? 1536 * kMiB : 256 * kGiB;

}  // namespace hcq::va_layout
