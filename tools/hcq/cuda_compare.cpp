#include "cuda_compare.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "stats.hpp"

namespace hcq::tool {
namespace {

// The CUDA driver API as we call it (cuda.h facts: every call returns a CUresult, 0 = CUDA_SUCCESS; handles are
// opaque pointers, a device is an int ordinal).
using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
struct CUuuid {
  uint8_t bytes[16];
};
constexpr CUresult kSuccess = 0;
constexpr CUresult kPrimaryContextActive = 708;  // CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE: flags could not be changed
constexpr unsigned kCtxSchedSpin = 0x01;         // CU_CTX_SCHED_SPIN
constexpr unsigned kStreamNonBlocking = 0x01;    // CU_STREAM_NON_BLOCKING: no implicit sync with the legacy stream

// The entry points, by their exported names: the _v2 ones are what cuda.h maps the plain names to.
struct CudaApi {
  std::string path;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*primary_ctx_set_flags)(CUdevice, unsigned) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;

  // "CUDA_ERROR_INVALID_IMAGE (200): device kernel image is invalid"
  std::string describe(CUresult rc) const {
    const char* name = nullptr;
    const char* text = nullptr;
    if (get_error_name(rc, &name) != kSuccess) name = nullptr;
    if (get_error_string(rc, &text) != kSuccess) text = nullptr;
    return cat(name ? name : "unknown CUresult", " (", rc, ")", text ? std::string(": ") + text : std::string());
  }
  // Throws hcq::Error for a failed call made once CUDA is up.
  void check(CUresult rc, const char* call) const {
    if (rc != kSuccess) throw Error(cat("CUDA comparison: ", call, " failed: ", describe(rc)));
  }
};

template <class F>
void resolve(void* handle, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (fn == nullptr) missing += (missing.empty() ? "" : ", ") + std::string(name);
}

// Loads the first candidate that has every entry point, or says why none did. libcuda is never closed: it starts
// threads of its own that must not outlive its code, and a second open of the same path is only a reference count.
std::optional<CudaApi> load_cuda(const std::vector<std::string>& candidates, std::string& why_not) {
  for (const std::string& path : candidates) {
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      why_not += cat(why_not.empty() ? "" : "; ", path, ": ", e ? e : "not loadable");
      continue;
    }
    CudaApi a;
    a.path = path;
    std::string missing;
    resolve(h, "cuInit", a.init, missing);
    resolve(h, "cuDriverGetVersion", a.driver_get_version, missing);
    resolve(h, "cuDeviceGetCount", a.device_get_count, missing);
    resolve(h, "cuDeviceGet", a.device_get, missing);
    resolve(h, "cuDeviceGetName", a.device_get_name, missing);
    resolve(h, "cuDevicePrimaryCtxSetFlags_v2", a.primary_ctx_set_flags, missing);
    resolve(h, "cuDevicePrimaryCtxRetain", a.primary_ctx_retain, missing);
    resolve(h, "cuDevicePrimaryCtxRelease_v2", a.primary_ctx_release, missing);
    resolve(h, "cuCtxSetCurrent", a.ctx_set_current, missing);
    resolve(h, "cuModuleLoadData", a.module_load_data, missing);
    resolve(h, "cuModuleGetFunction", a.module_get_function, missing);
    resolve(h, "cuModuleUnload", a.module_unload, missing);
    resolve(h, "cuStreamCreate", a.stream_create, missing);
    resolve(h, "cuStreamDestroy_v2", a.stream_destroy, missing);
    resolve(h, "cuLaunchKernel", a.launch_kernel, missing);
    resolve(h, "cuStreamSynchronize", a.stream_synchronize, missing);
    resolve(h, "cuGetErrorName", a.get_error_name, missing);
    resolve(h, "cuGetErrorString", a.get_error_string, missing);
    // The UUID: cuDeviceGetUuid_v2 (CUDA 11.4+), else the original.
    std::string no_v2;
    resolve(h, "cuDeviceGetUuid_v2", a.device_get_uuid, no_v2);
    if (a.device_get_uuid == nullptr) resolve(h, "cuDeviceGetUuid", a.device_get_uuid, missing);
    if (!missing.empty()) {
      why_not += cat(why_not.empty() ? "" : "; ", path, ": loaded, but lacks ", missing);
      continue;
    }
    return a;
  }
  return std::nullopt;
}

std::string uuid_text(const uint8_t (&b)[16]) {
  char s[48];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

// Runs `undo` when the scope ends: each CUDA object is given back in reverse order, also when a check throws.
template <class F>
struct Undo {
  F undo;
  ~Undo() { undo(); }
};
template <class F>
Undo(F) -> Undo<F>;

CudaComparison unavailable(std::string why) { return CudaComparison{std::nullopt, std::move(why)}; }

}  // namespace

CudaComparison compare_cuda_launch(const CudaLaunchRequest& request) {
  if (request.cubin.empty() || request.kernel.empty() || request.runs <= 0 || request.warmup < 0)
    throw InvalidArgument("CUDA comparison: needs a cubin, a kernel name, runs > 0 and warmup >= 0");

  std::string why_not;
  std::optional<CudaApi> loaded = load_cuda(request.libcuda_candidates, why_not);
  if (!loaded) return unavailable(cat("the CUDA driver library could not be loaded (", why_not, ")"));
  const CudaApi& cu = *loaded;

  // Up to here nothing of CUDA ran; a machine whose libcuda cannot initialise simply has no comparison.
  if (CUresult rc = cu.init(0); rc != kSuccess) return unavailable(cat("cuInit failed: ", cu.describe(rc)));
  int version = 0, count = 0;
  cu.check(cu.driver_get_version(&version), "cuDriverGetVersion");
  cu.check(cu.device_get_count(&count), "cuDeviceGetCount");

  // The GPU hcq measured: CUDA numbers devices its own way (fastest first, CUDA_VISIBLE_DEVICES), so match the UUID.
  std::optional<CUdevice> device;
  std::string seen;
  for (int i = 0; i < count && !device; ++i) {
    CUdevice d = 0;
    CUuuid uuid{};
    cu.check(cu.device_get(&d, i), "cuDeviceGet");
    cu.check(cu.device_get_uuid(&uuid, d), "cuDeviceGetUuid");
    if (std::memcmp(uuid.bytes, request.gpu_uuid.data(), sizeof uuid.bytes) == 0) device = d;
    seen += cat(seen.empty() ? "" : ", ", uuid_text(uuid.bytes));
  }
  uint8_t wanted[16];
  std::memcpy(wanted, request.gpu_uuid.data(), sizeof wanted);
  if (!device) {
    return unavailable(cat("CUDA (", cu.path, ") has no device ", uuid_text(wanted), " (it sees ", count,
                           count == 0 ? "" : ": " + seen, ")"));
  }

  char name[256] = {};
  cu.check(cu.device_get_name(name, sizeof name - 1, *device), "cuDeviceGetName");
  // Spin-wait in cuStreamSynchronize, as hcq's signal wait spins before it sleeps. Refused (708) only by old drivers
  // when the primary context is already active; it then keeps its flags, which the result says nothing about.
  if (CUresult rc = cu.primary_ctx_set_flags(*device, kCtxSchedSpin); rc != kPrimaryContextActive)
    cu.check(rc, "cuDevicePrimaryCtxSetFlags(CU_CTX_SCHED_SPIN)");

  CUcontext ctx = nullptr;
  cu.check(cu.primary_ctx_retain(&ctx, *device), "cuDevicePrimaryCtxRetain");
  Undo release_ctx{[&] { cu.primary_ctx_release(*device); }};
  cu.check(cu.ctx_set_current(ctx), "cuCtxSetCurrent");
  Undo unset_ctx{[&] { cu.ctx_set_current(nullptr); }};

  CUmodule module = nullptr;
  cu.check(cu.module_load_data(&module, request.cubin.data()), "cuModuleLoadData (the cubin hcq launched)");
  Undo unload{[&] { cu.module_unload(module); }};
  CUfunction fn = nullptr;
  if (CUresult rc = cu.module_get_function(&fn, module, request.kernel.c_str()); rc != kSuccess)
    throw Error(cat("CUDA comparison: cuModuleGetFunction(\"", request.kernel, "\") failed: ", cu.describe(rc)));
  CUstream stream = nullptr;
  cu.check(cu.stream_create(&stream, kStreamNonBlocking), "cuStreamCreate");
  Undo destroy_stream{[&] { cu.stream_destroy(stream); }};

  // The kernel's one parameter is hcq's argument block (8 zero bytes for a kernel without arguments,
  // include/hcq/kernel_abi.h). CUDA copies as many bytes as the parameter has; the block is larger than
  // any the request allows, so that copy never reads past it.
  alignas(16) static constexpr std::array<uint64_t, 32> kZeroBlock{};
  void* params[] = {const_cast<uint64_t*>(kZeroBlock.data())};

  using Clock = std::chrono::steady_clock;
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(request.runs));
  for (int i = 0; i < request.warmup + request.runs; ++i) {
    const auto t0 = Clock::now();
    cu.check(cu.launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
    cu.check(cu.stream_synchronize(stream), "cuStreamSynchronize");
    const auto t1 = Clock::now();
    if (i >= request.warmup) samples.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  CudaLaunchResult r;
  r.median_us = median(samples);
  r.p99_us = quantile(samples, 0.99);
  r.device = cat(name, ", CUDA driver API ", version / 1000, ".", (version % 1000) / 10, " (", cu.path, ")");
  return CudaComparison{std::move(r), {}};
}

CudaComparison compare_cuda_launch(Device& dev, std::span<const uint8_t> cubin, const std::string& kernel, int warmup,
                                   int runs) {
  const DeviceInfo info = dev.info();
  const std::string& interface = info.interface;
  if (interface == "sim-rm")
    return unavailable(cat(dev.name(), " is a simulated GPU: CUDA launches only on a real NVIDIA GPU (NV:n)"));
  if (interface != "rm")
    return unavailable(
        cat(dev.name(), " is not an NVIDIA GPU (interface ", interface, "): CUDA has no kernel to compare"));
  if (!info.uuid) return unavailable(cat(dev.name(), " reports no GPU UUID: CUDA's device cannot be matched to it"));

  CudaLaunchRequest request;
  request.gpu_uuid = *info.uuid;
  request.cubin = cubin;
  request.kernel = kernel;
  request.warmup = warmup;
  request.runs = runs;
  return compare_cuda_launch(request);
}

}  // namespace hcq::tool
