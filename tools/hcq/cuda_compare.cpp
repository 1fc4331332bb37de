#include "cuda_compare.hpp"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <utility>

#include "cuda/cuda_api.hpp"
#include "cuda/cuda_errors.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "stats.hpp"

namespace hcq::tool {
namespace {

using namespace hcq::cuda;  // the driver API's table and facts: drivers/cuda/cuda_api.hpp

constexpr const char* kContext = "CUDA comparison";

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

  std::shared_ptr<const CudaApi> loaded;
  try {
    loaded = load_cuda_api(LoadOptions{request.libcuda_candidates});
  } catch (const UnsupportedDriver& e) {
    return unavailable(e.what());
  }
  const CudaApi& cu = *loaded;
  const auto check = [&cu](CUresult rc, const char* call) { cu.check(rc, call, kContext); };

  // Up to here nothing of CUDA ran; a machine whose libcuda cannot initialise simply has no comparison.
  if (CUresult rc = cu.init(0); rc != kSuccess) return unavailable(cu_error_message(rc, "cuInit", cu.error_text(rc)));
  int version = 0, count = 0;
  check(cu.driver_get_version(&version), "cuDriverGetVersion");
  check(cu.device_get_count(&count), "cuDeviceGetCount");

  // The GPU hcq measured: CUDA numbers devices its own way (fastest first, CUDA_VISIBLE_DEVICES), so match the UUID.
  std::optional<CUdevice> device;
  std::string seen;
  for (int i = 0; i < count && !device; ++i) {
    CUdevice d = 0;
    CUuuid uuid{};
    check(cu.device_get(&d, i), "cuDeviceGet");
    check(cu.device_get_uuid(&uuid, d), "cuDeviceGetUuid");
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
  check(cu.device_get_name(name, sizeof name - 1, *device), "cuDeviceGetName");
  // Spin-wait in cuStreamSynchronize, as hcq's signal wait spins before it sleeps. Refused (708) only by old drivers
  // when the primary context is already active; it then keeps its flags, which the result says nothing about.
  if (CUresult rc = cu.primary_ctx_set_flags(*device, kCtxSchedSpin); rc != kPrimaryContextActive)
    check(rc, "cuDevicePrimaryCtxSetFlags(CU_CTX_SCHED_SPIN)");

  CUcontext ctx = nullptr;
  check(cu.primary_ctx_retain(&ctx, *device), "cuDevicePrimaryCtxRetain");
  Undo release_ctx{[&] { cu.primary_ctx_release(*device); }};
  check(cu.ctx_set_current(ctx), "cuCtxSetCurrent");
  Undo unset_ctx{[&] { cu.ctx_set_current(nullptr); }};

  CUmodule module = nullptr;
  check(cu.module_load_data(&module, request.cubin.data()), "cuModuleLoadData (the cubin hcq launched)");
  Undo unload{[&] { cu.module_unload(module); }};
  CUfunction fn = nullptr;
  if (CUresult rc = cu.module_get_function(&fn, module, request.kernel.c_str()); rc != kSuccess)
    std::rethrow_exception(
        cu_error(rc, cat("cuModuleGetFunction(\"", request.kernel, "\")"), cu.error_text(rc), kContext));
  CUstream stream = nullptr;
  check(cu.stream_create(&stream, kStreamNonBlocking), "cuStreamCreate");
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
    check(cu.launch_kernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
    check(cu.stream_synchronize(stream), "cuStreamSynchronize");
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
  if (interface == "cuda")
    return unavailable(cat(dev.name(),
                           " is the CUDA adapter: its launches are CUDA's own (NV:n on the same GPU is "
                           "what is compared with CUDA)"));
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
