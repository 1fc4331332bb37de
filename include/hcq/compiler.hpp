// Compiler: source -> binary, with an on-disk cache under $XDG_CACHE_HOME/hcq (or ~/.cache/hcq).
// Ownership: each Device owns its Compiler (Device::compiler()); binaries it returns are plain bytes the caller owns.
// Threads: one thread at a time per Compiler; the on-disk cache itself is safe across threads and processes
// (entries are written to a temporary file and renamed into place).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hcq {

class CompileCache;

class Compiler {
 public:
  virtual ~Compiler() = default;

  // Cached compile. The key covers identity(), target() and options() and the source. A corrupt or truncated
  // entry is detected (length + checksum + stored key), removed and rebuilt, never loaded. Entries are written
  // to a temporary file and renamed, so concurrent processes share the cache safely.
  // HCQ_ASSERT_COMPILE=1 makes any real compile throw CompileError (to prove the cache serves).
  std::vector<uint8_t> compile_cached(std::string_view source);
  // The same against an explicit cache and HCQ_ASSERT_COMPILE setting (tools, tests, several caches).
  std::vector<uint8_t> compile_cached(std::string_view source, const CompileCache& cache, bool assert_compile);
  // The cache key: identity(), target(), options() and the source, NUL-separated.
  std::string cache_key(std::string_view source) const;

  // The real compile. Throws CompileError with the compiler's diagnostics.
  virtual std::vector<uint8_t> compile(std::string_view source) = 0;

  virtual std::string identity() const = 0;  // compiler name and version, e.g. "clang-19.1.7"
  virtual std::string target() const = 0;    // e.g. "x86_64-znver3", "gfx1100", "sm_90"
  virtual std::string options() const = 0;   // flags that change the output
};

// The cache itself, exposed for tools and tests.
// Thread- and process-safe: readers see either no entry or a whole one (writes go to a temporary file and are
// renamed into place). Failing to write (read-only or full disk) is not an error: the entry is just not stored.
class CompileCache {
 public:
  explicit CompileCache(std::string dir);  // empty: knobs::cache_dir() (HCQ_CACHE_DIR, $XDG_CACHE_HOME/hcq, ...)
  // nullopt when absent or corrupt (a corrupt entry is deleted).
  std::optional<std::vector<uint8_t>> get(std::string_view key) const;
  void put(std::string_view key, const std::vector<uint8_t>& value) const;
  // <dir>/<128-bit hash of the key, 32 hex digits>.hcqc
  std::string path_for(std::string_view key) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

}  // namespace hcq
