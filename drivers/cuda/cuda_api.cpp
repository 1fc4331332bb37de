#include "cuda/cuda_api.hpp"

#include <dlfcn.h>

#include <mutex>

#include "cuda/cuda_errors.hpp"
#include "hcq/error.hpp"

namespace hcq::cuda {
namespace {

void* default_open(const char* path, int flags) { return ::dlopen(path, flags); }
void* default_symbol(void* handle, const char* name) { return ::dlsym(handle, name); }

// Resolves one entry point by its exported name; a missing one is added to `missing`.
class Resolver {
 public:
  Resolver(void* handle, void* (*symbol)(void*, const char*)) : handle_(handle), symbol_(symbol) {}
  template <class F>
  void operator()(const char* name, F& fn) {
    fn = reinterpret_cast<F>(symbol_(handle_, name));
    if (fn == nullptr) missing += cat(missing.empty() ? "" : ", ", name);
  }
  std::string missing;

 private:
  void* handle_;
  void* (*symbol_)(void*, const char*);
};

// The whole table but cuDriverGetVersion (resolved first: an old driver is named as such, not as a list of the
// entry points it lacks).
void resolve_all(Resolver& r, CudaApi& a) {
  r("cuInit", a.init);
  r("cuGetErrorName", a.get_error_name);
  r("cuGetErrorString", a.get_error_string);
  r("cuDeviceGetCount", a.device_get_count);
  r("cuDeviceGet", a.device_get);
  r("cuDeviceGetName", a.device_get_name);
  r("cuDeviceGetUuid_v2", a.device_get_uuid);
  r("cuDeviceGetAttribute", a.device_get_attribute);
  r("cuDeviceTotalMem_v2", a.device_total_mem);
  r("cuDevicePrimaryCtxSetFlags_v2", a.primary_ctx_set_flags);
  r("cuDevicePrimaryCtxRetain", a.primary_ctx_retain);
  r("cuDevicePrimaryCtxRelease_v2", a.primary_ctx_release);
  r("cuCtxSetCurrent", a.ctx_set_current);
  r("cuModuleLoadData", a.module_load_data);
  r("cuModuleGetFunction", a.module_get_function);
  r("cuModuleUnload", a.module_unload);
  r("cuFuncGetAttribute", a.func_get_attribute);
  r("cuStreamCreate", a.stream_create);
  r("cuStreamDestroy_v2", a.stream_destroy);
  r("cuStreamQuery", a.stream_query);
  r("cuStreamSynchronize", a.stream_synchronize);
  r("cuStreamWriteValue32_v2", a.stream_write_value32);
  r("cuStreamWriteValue64_v2", a.stream_write_value64);
  r("cuStreamWaitValue32_v2", a.stream_wait_value32);
  r("cuStreamWaitValue64_v2", a.stream_wait_value64);
  r("cuLaunchKernel", a.launch_kernel);
  r("cuLaunchHostFunc", a.launch_host_func);
  r("cuMemcpyAsync", a.memcpy_async);
  r("cuMemsetD8_v2", a.memset_d8);
  r("cuMemHostRegister_v2", a.mem_host_register);
  r("cuMemHostUnregister", a.mem_host_unregister);
  r("cuMemHostGetDevicePointer_v2", a.mem_host_get_device_pointer);
  r("cuMemGetAllocationGranularity", a.mem_get_allocation_granularity);
  r("cuMemAddressReserve", a.mem_address_reserve);
  r("cuMemAddressFree", a.mem_address_free);
  r("cuMemCreate", a.mem_create);
  r("cuMemRelease", a.mem_release);
  r("cuMemMap", a.mem_map);
  r("cuMemUnmap", a.mem_unmap);
  r("cuMemSetAccess", a.mem_set_access);
}

}  // namespace

std::string version_text(int version) { return cat(version / 1000, ".", (version % 1000) / 10); }

const char* CudaApi::error_text(CUresult rc) const {
  const char* text = nullptr;
  if (get_error_string == nullptr || get_error_string(rc, &text) != kSuccess) return nullptr;
  return text;
}

void CudaApi::check(CUresult rc, const char* call, const std::string& context) const {
  if (rc != kSuccess) [[unlikely]]
    std::rethrow_exception(cu_error(rc, call, error_text(rc), context));
}

std::shared_ptr<const CudaApi> load_cuda_api(const LoadOptions& options) {
  void* (*open)(const char*, int) = options.open ? options.open : &default_open;
  void* (*symbol)(void*, const char*) = options.symbol ? options.symbol : &default_symbol;
  std::string why;
  const auto refuse = [&why](const std::string& path, const std::string& reason) {
    why += cat(why.empty() ? "" : "; ", path, ": ", reason);
  };
  for (const std::string& path : options.candidates) {
    ::dlerror();  // clear a stale message
    void* h = open(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = ::dlerror();
      refuse(path, e ? e : "not loadable");
      continue;
    }
    auto api = std::make_shared<CudaApi>();
    api->path = path;
    Resolver version_only(h, symbol);
    version_only("cuDriverGetVersion", api->driver_get_version);
    if (!version_only.missing.empty()) {
      refuse(path, "loaded, but it has no cuDriverGetVersion (not a CUDA driver library)");
      continue;
    }
    if (CUresult rc = api->driver_get_version(&api->version); rc != kSuccess) {
      refuse(path, cu_error_message(rc, "cuDriverGetVersion", nullptr));
      continue;
    }
    if (api->version < kMinDriverVersion) {
      refuse(path, cat("CUDA driver ", version_text(api->version), " (", api->version, ") is too old: hcq needs ",
                       version_text(kMinDriverVersion), " (", kMinDriverVersion,
                       ") or newer, whose stream memory operations are on by default"));
      continue;
    }
    Resolver r(h, symbol);
    resolve_all(r, *api);
    if (!r.missing.empty()) {
      refuse(path, cat("CUDA driver ", version_text(api->version), " lacks ", r.missing));
      continue;
    }
    return api;
  }
  if (options.candidates.empty()) why = "no library to try";
  throw UnsupportedDriver(cat("the CUDA driver library could not be used (", why, ")"));
}

std::shared_ptr<const CudaApi> process_cuda_api() {
  static std::once_flag once;
  static std::shared_ptr<const CudaApi> api;
  static std::string error;
  std::call_once(once, [] {
    try {
      api = load_cuda_api();
    } catch (const UnsupportedDriver& e) {
      error = e.what();
    }
  });
  if (!api) throw UnsupportedDriver(error);
  return api;
}

}  // namespace hcq::cuda
