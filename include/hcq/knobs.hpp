// The one documented place for every environment knob (docs/knobs.md lists them with defaults and valid ranges).
// Lifetime: no state of their own; each knob is read from the environment when asked (HCQ_WAIT_TIMEOUT_MS once, on
// first use, since every wait asks).
// A number knob is range-checked where it is read: text that is not a decimal number inside the knob's range (a
// sign, a space, a suffix, an overflow, a value past the range) throws hcq::InvalidArgument naming the knob, its
// text and the range, e.g. `HCQ_DEBUG="9" is not a debug level in 0..7`. A 0/1 switch accepts exactly 0 or 1.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace hcq::knobs {

// HCQ_DEVICE: the default device name.
std::optional<std::string> device();
// HCQ_WAIT_TIMEOUT_MS: default signal wait timeout (default 30000, 0..kMaxWaitTimeoutMs). Read once, at first use:
// waits are hot. A bad value is remembered too: every call in the process throws the same InvalidArgument.
// The other knobs are read at each call.
std::chrono::milliseconds wait_timeout();
// The same knob for code that must not throw (destructors waiting for a queue to finish reading its memory): its
// value when valid, else the default. The bad value still surfaces as InvalidArgument from every wait_timeout().
std::chrono::milliseconds wait_timeout_or_default() noexcept;
// The longest wait timeout accepted (one day): a wait that sees no progress for longer is a hang by any measure, and
// the bound keeps every deadline (now + timeout, in nanoseconds) far from overflowing.
inline constexpr uint64_t kMaxWaitTimeoutMs = 86'400'000;
inline constexpr uint64_t kDefaultWaitTimeoutMs = 30'000;
// HCQ_ASSERT_COMPILE=1: any real compile throws (the cache must serve). 0 or 1.
bool assert_compile();
// HCQ_CACHE_DIR, else $XDG_CACHE_HOME/hcq, else $HOME/.cache/hcq; or, while one is set, the override below.
std::string cache_dir();
// For a tool that compiles throwaway kernels (hcq bench's compile_ms): while `dir` is non-empty, cache_dir() returns
// it, so they do not pile up in the user's cache. Empty: back to the environment. Thread-safe (no setenv).
void override_cache_dir(std::string dir);
// HCQ_VA_SIZE_GB: size of the process-wide VA reservation (default 256, 1..131072; placed below 2^40, see
// hcq/va_layout.hpp).
uint64_t va_size_bytes();
// HCQ_CPU_THREADS: worker threads per CPU device for kernels (default: number of cores, 1..4096).
unsigned cpu_threads();
// HCQ_CC: the C compiler the CPU device uses (default: clang-19, else clang).
std::string cpu_cc();
// HCQ_CPU_FEATURES: CPU features the CPU device must not use, as "-amx_tile,-avx512_bf16" (names in
// hcq/cpu_features.hpp), so the fallback kernels run on a CPU that has the feature. Unset: none. Checked by
// drivers/cpu/cpu_features.cpp at each CPU device open.
std::optional<std::string> cpu_features();
// HCQ_DUMP: "1" = capture every submission and allocation to ./hcq-capture-<pid>.jsonl, any other text = to that
// path; unset, empty or "0" = off (nullopt). Read once, when the capture file is first needed (hcq/capture.cpp).
std::optional<std::string> dump();
// HCQ_BUNDLE_DIR: where hang bundles go (default ${TMPDIR:-/tmp}/hcq-bundles); "off" writes none. At each bundle.
std::string bundle_dir();
// HCQ_BUNDLE_MAX: hang bundles one process writes at most (default 16, 0..2^20). At each bundle.
unsigned bundle_max();

// HCQ_DEBUG: what the framework prints to stderr at each realize (docs/knobs.md): 1 kernel count and time, 2 each
// kernel (name, device, global/local, time, GB/s, GFLOP/s), 4 also the generated source, 5 also the graph before
// and after scheduling. 0 (default) prints nothing. Read at each realize.
int debug();
// HCQ_NOOPT=1: the framework's code generator applies no optimisation (plain loops, one workgroup). 0 or 1.
bool noopt();
// HCQ_BEAM: how many renderings of each new CPU kernel a search compiles, checks and times before the schedule uses
// the fastest (framework/engine/beam.hpp); the winner is kept on disk. 0 (default) searches nothing; 1..64. Read at
// each schedule built.
unsigned beam();
// For a tool that measures a search (hcq bench's "beam" products): while set, beam() returns it instead of reading
// HCQ_BEAM. std::nullopt: back to the environment. Thread-safe (no setenv).
void override_beam(std::optional<unsigned> width);
// HCQ_JIT_CHECK=1: a TinyJit's first replays (framework/jit/check.hpp) also run the function eagerly and compare every
// output bit for bit; a difference is a JitError. 0 or 1. Read at each capture (a TinyJit's call 1).
bool jit_check();
// HCQ_VALIDATE=1: every framework kernel run off the CPU device is run again on the CPU device and compared
// (framework/engine/validate.hpp); a difference is a ValidationError. 0 or 1. Read at each realize and capture.
bool validate();
// HCQ_SIM_L2=0: the simulated GPUs keep no L2 model (a kernel's writes go straight to memory), to tell a missing cache
// writeback from other bugs. 0 or 1, default 1. Read when a simulated GPU opens.
bool sim_l2();
// HCQ_SIM_THREAD_SEED: the seed of the order in which the host runs the threads of an HCQ_THREAD_KERNEL workgroup
// after each barrier (the simulators' twins and the CPU device; drivers/cpu/workgroup_threads.hpp). Default
// kDefaultSimThreadSeed, so CI runs one order; any other value shows another interleaving. 0..2^64-1. Read at each
// launch.
inline constexpr uint64_t kDefaultSimThreadSeed = 1;
uint64_t sim_thread_seed();

}  // namespace hcq::knobs
