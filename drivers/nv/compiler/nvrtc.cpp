#include "nv/compiler/nvrtc.hpp"

#include <dlfcn.h>

#include "hcq/error.hpp"

namespace hcq::nv {

// NVRTC's C API as we call it: every entry point returns an nvrtcResult (0 = NVRTC_SUCCESS); a program is an opaque
// handle.
struct Nvrtc::Api {
  using Program = void*;
  int (*version)(int*, int*) = nullptr;
  int (*create)(Program*, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*destroy)(Program*) = nullptr;
  int (*compile)(Program, int, const char* const*) = nullptr;
  int (*log_size)(Program, size_t*) = nullptr;
  int (*log)(Program, char*) = nullptr;
  int (*cubin_size)(Program, size_t*) = nullptr;
  int (*cubin)(Program, char*) = nullptr;
  const char* (*error_string)(int) = nullptr;
};

namespace {

template <class F>
bool resolve(void* handle, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(name);
  return fn != nullptr;
}

}  // namespace

std::vector<std::string> Nvrtc::default_candidates() {
  return {"libnvrtc.so.13",
          "libnvrtc.so",
          "/usr/local/cuda/lib64/libnvrtc.so.13",
          "/usr/local/cuda/lib64/libnvrtc.so",
          "libnvrtc.so.12",
          "/usr/local/cuda/lib64/libnvrtc.so.12"};
}

std::shared_ptr<const Nvrtc> Nvrtc::open(const std::vector<std::string>& candidates) {
  std::string tried;
  for (const std::string& path : candidates) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = dlerror();
      tried += cat("\n  ", path, ": ", e ? e : "not loadable");
      continue;
    }
    std::shared_ptr<Nvrtc> n(new Nvrtc());
    n->handle_ = h;
    n->api_ = std::make_unique<Api>();
    n->path_ = path;
    Api& a = *n->api_;
    std::string missing;
    resolve(h, "nvrtcVersion", a.version, missing);
    resolve(h, "nvrtcCreateProgram", a.create, missing);
    resolve(h, "nvrtcDestroyProgram", a.destroy, missing);
    resolve(h, "nvrtcCompileProgram", a.compile, missing);
    resolve(h, "nvrtcGetProgramLogSize", a.log_size, missing);
    resolve(h, "nvrtcGetProgramLog", a.log, missing);
    resolve(h, "nvrtcGetCUBINSize", a.cubin_size, missing);
    resolve(h, "nvrtcGetCUBIN", a.cubin, missing);
    resolve(h, "nvrtcGetErrorString", a.error_string, missing);
    if (!missing.empty()) {
      tried += cat("\n  ", path, ": loaded, but lacks ", missing);
      dlclose(h);  // nothing of it was used
      continue;
    }
    if (a.version(&n->major_, &n->minor_) != 0) {
      tried += cat("\n  ", path, ": nvrtcVersion failed");
      continue;
    }
    return n;
  }
  throw CompileError(
      cat("NV compiler: NVRTC is not available, so CUDA kernels cannot be compiled (loading cubins "
          "still works). Install the CUDA toolkit's NVRTC (libnvrtc.so.13). Tried:",
          tried.empty() ? std::string("\n  (no candidates)") : tried));
}

// NVRTC stays mapped for the life of the process: it keeps per-thread state that must not outlive its code, and
// the loader's reference count makes a second open() of the same path cheap.
Nvrtc::~Nvrtc() = default;

Nvrtc::Result Nvrtc::compile(const std::string& source, const std::string& name,
                             const std::vector<std::string>& options) const {
  const Api& a = *api_;
  auto what = [&](int rc) {
    const char* s = a.error_string(rc);
    return cat(s ? s : "unknown NVRTC error", " (", rc, ")");
  };
  Api::Program prog = nullptr;
  if (const int rc = a.create(&prog, source.c_str(), name.c_str(), 0, nullptr, nullptr); rc != 0)
    throw CompileError(cat("NV compiler: nvrtcCreateProgram failed: ", what(rc)));
  struct Destroy {
    const Api& a;
    Api::Program& p;
    ~Destroy() { a.destroy(&p); }
  } destroy{a, prog};

  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());
  Result r;
  const int compiled = a.compile(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  if (a.log_size(prog, &log_size) == 0 && log_size > 1) {
    std::string log(log_size, '\0');
    if (a.log(prog, log.data()) == 0) r.log = log.substr(0, log.find('\0'));
  }
  if (compiled != 0) {
    if (r.log.empty()) r.log = what(compiled);
    return r;
  }
  size_t size = 0;
  if (const int rc = a.cubin_size(prog, &size); rc != 0)
    throw CompileError(cat("NV compiler: nvrtcGetCUBINSize failed: ", what(rc)));
  r.cubin.resize(size);
  if (const int rc = a.cubin(prog, reinterpret_cast<char*>(r.cubin.data())); rc != 0)
    throw CompileError(cat("NV compiler: nvrtcGetCUBIN failed: ", what(rc)));
  r.ok = true;
  return r;
}

}  // namespace hcq::nv
