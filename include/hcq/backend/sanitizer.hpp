// Whether this build runs under AddressSanitizer: a few host paths change shape for it (where the unified VA goes,
// whether heap blocks are cached), so that ASan's checks stay meaningful.
// Nothing here owns anything: compile-time facts about the build.
#pragma once

namespace hcq {

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

}  // namespace hcq
