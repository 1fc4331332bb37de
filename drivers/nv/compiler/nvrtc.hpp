// NVRTC, loaded at run time with dlopen: CUDA C++ -> cubin without a link-time dependency on the CUDA toolkit. Only
// the handful of entry points the NV compiler calls are resolved. Without the library, compiling is impossible and
// says so (CompileError naming every path tried); nothing else in hcq needs it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hcq::nv {

class Nvrtc {
 public:
  // Where to look, in order: the versioned and plain sonames through the default search path, then the CUDA
  // toolkit's lib64.
  static std::vector<std::string> default_candidates();

  // Opens the first candidate that loads and has every entry point. Throws CompileError naming each candidate and
  // why it failed (dlerror text).
  static std::shared_ptr<const Nvrtc> open(const std::vector<std::string>& candidates);

  ~Nvrtc();
  Nvrtc(const Nvrtc&) = delete;
  Nvrtc& operator=(const Nvrtc&) = delete;

  const std::string& path() const { return path_; }
  int major() const { return major_; }
  int minor() const { return minor_; }

  struct Result {
    bool ok = false;
    std::string log;             // the compiler's diagnostics (also on success: warnings)
    std::vector<uint8_t> cubin;  // when ok
  };
  // One compile of `source` (named `name` in diagnostics) with `options`. Thread-safe (NVRTC programs are
  // independent). Throws CompileError only when NVRTC itself fails outside the compile (out of memory, ...).
  Result compile(const std::string& source, const std::string& name, const std::vector<std::string>& options) const;

 private:
  Nvrtc() = default;
  struct Api;
  void* handle_ = nullptr;
  std::unique_ptr<Api> api_;
  std::string path_;
  int major_ = 0, minor_ = 0;
};

}  // namespace hcq::nv
