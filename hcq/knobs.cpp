// Environment knobs. Most are read at each call (they are not on hot paths, and tests may change them);
// HCQ_WAIT_TIMEOUT_MS is read once, at first use, because every signal wait asks for it. Every number is checked
// against its knob's range here, where it is read, so no caller ever sees a wrapped or absurd value.
#include "hcq/knobs.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <thread>

#include "hcq/error.hpp"
#include "va_layout.hpp"

namespace hcq::knobs {
namespace {

// The knob's text, or nullopt when unset or empty (an empty knob means "use the default").
std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::string(v);
}

// A decimal number in lo..hi, or the knob's default when unset or empty. Anything else (a sign, a space, a suffix,
// an overflow of 64 bits, a value past the range) names the knob, its text and the range: a negative or huge value
// must never wrap into something the code below would use.
uint64_t number_in(const char* name, uint64_t fallback, uint64_t lo, uint64_t hi, std::string_view what) {
  const std::optional<std::string> text = env(name);
  if (!text) return fallback;
  uint64_t value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end || value < lo || value > hi)
    throw InvalidArgument(cat(name, "=\"", *text, "\" is not ", what, " in ", lo, "..", hi));
  return value;
}

// A 0/1 switch: unset or empty is off; any other text than 0 or 1 ("yes", "2", " 1") is an error rather than off.
bool switch_on(const char* name) {
  const std::optional<std::string> text = env(name);
  if (!text || *text == "0") return false;
  if (*text == "1") return true;
  throw InvalidArgument(cat(name, "=\"", *text, "\" is not 0 or 1"));
}

// HCQ_WAIT_TIMEOUT_MS as read once: the value, or the error a bad text gives (kept, so that every reader sees the
// same answer, and so that wait_timeout_or_default() never has to throw or re-read).
struct WaitTimeoutKnob {
  std::optional<std::chrono::milliseconds> value;
  std::string error;
};

const WaitTimeoutKnob& wait_timeout_knob() noexcept {
  static const WaitTimeoutKnob knob = [] {
    WaitTimeoutKnob k;
    try {
      k.value = std::chrono::milliseconds(number_in("HCQ_WAIT_TIMEOUT_MS", kDefaultWaitTimeoutMs, 0, kMaxWaitTimeoutMs,
                                                    "a whole number of milliseconds"));
    } catch (const InvalidArgument& e) {
      k.error = e.what();
    }
    return k;
  }();
  return knob;
}

bool executable_on_path(std::string_view program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::string_view rest(path);
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    std::string candidate = cat(dir.empty() ? std::string_view(".") : dir, "/", program);
    if (::access(candidate.c_str(), X_OK) == 0) return true;
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return false;
}

}  // namespace

std::optional<std::string> device() { return env("HCQ_DEVICE"); }

std::chrono::milliseconds wait_timeout() {
  const WaitTimeoutKnob& knob = wait_timeout_knob();
  if (!knob.value) throw InvalidArgument(knob.error);
  return *knob.value;
}

std::chrono::milliseconds wait_timeout_or_default() noexcept {
  return wait_timeout_knob().value.value_or(std::chrono::milliseconds(kDefaultWaitTimeoutMs));
}

bool assert_compile() { return switch_on("HCQ_ASSERT_COMPILE"); }

namespace {
std::mutex g_cache_dir_mu;
std::string& cache_dir_override() {
  static auto* dir = new std::string();  // never destroyed: compiles may run during exit
  return *dir;
}
}  // namespace

void override_cache_dir(std::string dir) {
  std::lock_guard lock(g_cache_dir_mu);
  cache_dir_override() = std::move(dir);
}

std::string cache_dir() {
  {
    std::lock_guard lock(g_cache_dir_mu);
    if (!cache_dir_override().empty()) return cache_dir_override();
  }
  if (auto dir = env("HCQ_CACHE_DIR")) return *dir;
  if (auto xdg = env("XDG_CACHE_HOME")) return *xdg + "/hcq";
  if (auto home = env("HOME")) return *home + "/.cache/hcq";
  // No home at all (some CI sandboxes): a per-user directory under /tmp rather than a crash.
  return cat("/tmp/hcq-cache-", ::getuid());
}

uint64_t va_size_bytes() {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  static_assert(va_layout::kDefaultSize % kGiB == 0);
  // 2^17 GiB = 128 TiB, the whole x86-64 user half: anything above cannot be reserved.
  return kGiB *
         number_in("HCQ_VA_SIZE_GB", va_layout::kDefaultSize / kGiB, 1, uint64_t{1} << 17, "a whole number of GiB");
}

unsigned cpu_threads() {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());  // 0 means "unknown"
  return static_cast<unsigned>(number_in("HCQ_CPU_THREADS", cores, 1, 4096, "a whole number of threads"));
}

int debug() { return static_cast<int>(number_in("HCQ_DEBUG", 0, 0, 7, "a debug level")); }

bool noopt() { return switch_on("HCQ_NOOPT"); }

namespace {
std::atomic<int64_t> g_beam_override{-1};  // -1: none
}  // namespace

void override_beam(std::optional<unsigned> width) { g_beam_override = width ? static_cast<int64_t>(*width) : -1; }

unsigned beam() {
  if (const int64_t o = g_beam_override.load(); o >= 0) return static_cast<unsigned>(o);
  return static_cast<unsigned>(number_in("HCQ_BEAM", 0, 0, 64, "a number of candidates"));
}

bool jit_check() { return switch_on("HCQ_JIT_CHECK"); }

bool validate() { return switch_on("HCQ_VALIDATE"); }

bool sim_l2() { return !env("HCQ_SIM_L2") || switch_on("HCQ_SIM_L2"); }

uint64_t sim_thread_seed() {
  return number_in("HCQ_SIM_THREAD_SEED", kDefaultSimThreadSeed, 0, UINT64_MAX, "a whole number");
}

std::string cpu_cc() {
  if (auto cc = env("HCQ_CC")) return *cc;
  return executable_on_path("clang-19") ? "clang-19" : "clang";
}

std::optional<std::string> cpu_features() { return env("HCQ_CPU_FEATURES"); }

std::optional<std::string> dump() {
  std::optional<std::string> v = env("HCQ_DUMP");
  if (v && *v == "0") return std::nullopt;
  return v;
}

std::string bundle_dir() {
  if (auto d = env("HCQ_BUNDLE_DIR")) return *d;
  return env("TMPDIR").value_or("/tmp") + "/hcq-bundles";
}

unsigned bundle_max() {
  return static_cast<unsigned>(number_in("HCQ_BUNDLE_MAX", 16, 0, uint64_t{1} << 20, "a whole number of bundles"));
}

}  // namespace hcq::knobs
