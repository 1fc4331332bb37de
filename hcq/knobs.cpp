// Environment knobs. Most are read at each call (they are not on hot paths, and tests may change them);
// HCQ_WAIT_TIMEOUT_MS is read once, at first use, because every signal wait asks for it.
#include "hcq/knobs.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
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

// A whole unsigned decimal number; anything else (sign, spaces, suffix, overflow) names the knob and the text.
uint64_t parse_number(const char* name, const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end)
    throw InvalidArgument(cat(name, "=\"", text, "\" is not a non-negative whole number"));
  return value;
}

std::optional<uint64_t> number(const char* name) {
  auto text = env(name);
  if (!text) return std::nullopt;
  return parse_number(name, *text);
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
  // Read once: waits are hot. A malformed value throws here and is re-read (and re-thrown) at the next call.
  static const std::chrono::milliseconds timeout{number("HCQ_WAIT_TIMEOUT_MS").value_or(30000)};
  return timeout;
}

bool assert_compile() { return number("HCQ_ASSERT_COMPILE").value_or(0) != 0; }

std::string cache_dir() {
  if (auto dir = env("HCQ_CACHE_DIR")) return *dir;
  if (auto xdg = env("XDG_CACHE_HOME")) return *xdg + "/hcq";
  if (auto home = env("HOME")) return *home + "/.cache/hcq";
  // No home at all (some CI sandboxes): a per-user directory under /tmp rather than a crash.
  return cat("/tmp/hcq-cache-", ::getuid());
}

uint64_t va_size_bytes() {
  constexpr uint64_t kGiB = uint64_t{1} << 30;
  const std::optional<uint64_t> asked = number("HCQ_VA_SIZE_GB");
  if (!asked) return va_layout::kDefaultSize;
  const uint64_t gb = *asked;
  // 2^17 GiB = 128 TiB, the whole x86-64 user half: anything above cannot be reserved.
  if (gb == 0 || gb > (uint64_t{1} << 17)) throw InvalidArgument(cat("HCQ_VA_SIZE_GB=", gb, " is outside 1..131072"));
  return gb * kGiB;
}

unsigned cpu_threads() {
  if (auto n = number("HCQ_CPU_THREADS")) {
    if (*n == 0 || *n > 4096) throw InvalidArgument(cat("HCQ_CPU_THREADS=", *n, " is outside 1..4096"));
    return static_cast<unsigned>(*n);
  }
  unsigned cores = std::thread::hardware_concurrency();
  return cores == 0 ? 1 : cores;  // 0 means "unknown"
}

int debug() {
  auto n = number("HCQ_DEBUG");
  if (!n) return 0;
  if (*n > 7) throw InvalidArgument(cat("HCQ_DEBUG=", *n, " is outside 0..7"));
  return static_cast<int>(*n);
}

bool noopt() { return env("HCQ_NOOPT").value_or("0") == "1"; }

std::string cpu_cc() {
  if (auto cc = env("HCQ_CC")) return *cc;
  return executable_on_path("clang-19") ? "clang-19" : "clang";
}

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
  return static_cast<unsigned>(std::min<uint64_t>(number("HCQ_BUNDLE_MAX").value_or(16), 1u << 20));
}

}  // namespace hcq::knobs
