// The one documented place for every environment knob (docs/knobs.md lists them with defaults).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace hcq::knobs {

// HCQ_DEVICE: the default device name.
std::optional<std::string> device();
// HCQ_WAIT_TIMEOUT_MS: default signal wait timeout (default 30000). Read once, at first use: waits are hot.
// The other knobs are read at each call.
std::chrono::milliseconds wait_timeout();
// HCQ_ASSERT_COMPILE=1: any real compile throws (the cache must serve).
bool assert_compile();
// HCQ_CACHE_DIR, else $XDG_CACHE_HOME/hcq, else $HOME/.cache/hcq.
std::string cache_dir();
// HCQ_VA_SIZE_GB: size of the process-wide VA reservation (default 256).
uint64_t va_size_bytes();
// HCQ_CPU_THREADS: worker threads per CPU device for kernels (default: number of cores).
unsigned cpu_threads();
// HCQ_CC: the C compiler the CPU device uses (default: clang-19, else clang).
std::string cpu_cc();

}  // namespace hcq::knobs
