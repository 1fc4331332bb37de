// Whether this build runs under AddressSanitizer: a few host paths change shape for it (where the unified VA goes,
// whether heap blocks are cached), so that ASan's checks stay meaningful.
// Nothing here owns anything: compile-time facts about the build.
#pragma once

// HCQ_ADDRESS_SANITIZER: 1 in an ASan build (gcc says so with __SANITIZE_ADDRESS__, clang with __has_feature), else
// 0. A macro as well as the constant below, for what only an ASan build may define (hcq/process.cpp's
// __asan_default_options).
#if defined(__SANITIZE_ADDRESS__)
#define HCQ_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HCQ_ADDRESS_SANITIZER 1
#endif
#endif
#ifndef HCQ_ADDRESS_SANITIZER
#define HCQ_ADDRESS_SANITIZER 0
#endif

namespace hcq {

inline constexpr bool kAddressSanitizer = HCQ_ADDRESS_SANITIZER != 0;

}  // namespace hcq
