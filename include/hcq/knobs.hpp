// The one documented place for every environment knob (docs/knobs.md lists them with defaults).
// Lifetime: no state of their own; each knob is read from the environment when asked (HCQ_WAIT_TIMEOUT_MS once, on
// first use, since every wait asks).
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
// HCQ_VA_SIZE_GB: size of the process-wide VA reservation (default 256; placed below 2^40, see hcq/va_layout.hpp).
uint64_t va_size_bytes();
// HCQ_CPU_THREADS: worker threads per CPU device for kernels (default: number of cores).
unsigned cpu_threads();
// HCQ_CC: the C compiler the CPU device uses (default: clang-19, else clang).
std::string cpu_cc();
// HCQ_DUMP: "1" = capture every submission and allocation to ./hcq-capture-<pid>.jsonl, any other text = to that
// path; unset, empty or "0" = off (nullopt). Read once, when the capture file is first needed (hcq/capture.cpp).
std::optional<std::string> dump();
// HCQ_BUNDLE_DIR: where hang bundles go (default ${TMPDIR:-/tmp}/hcq-bundles); "off" writes none. At each bundle.
std::string bundle_dir();
// HCQ_BUNDLE_MAX: hang bundles one process writes at most (default 16, capped at 2^20). At each bundle.
unsigned bundle_max();

// HCQ_DEBUG: what the framework prints to stderr at each realize (docs/knobs.md): 1 kernel count and time, 2 each
// kernel (name, device, global/local, time, GB/s, GFLOP/s), 4 also the generated source, 5 also the graph before
// and after scheduling. 0 (default) prints nothing. Read at each realize.
int debug();
// HCQ_NOOPT=1: the framework's code generator applies no optimisation (plain loops, one workgroup).
bool noopt();

}  // namespace hcq::knobs
