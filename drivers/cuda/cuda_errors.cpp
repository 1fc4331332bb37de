#include "cuda/cuda_errors.hpp"

#include <algorithm>
#include <array>

#include "hcq/error.hpp"

namespace hcq::cuda {
namespace {

using K = ErrorKind;

// cuda.h's CUresult enum (CUDA 13.0), in code order. The kinds are hcq's reading of each code's documentation: what
// the caller passed (invalid_argument), what the installation lacks (unsupported_driver), an image this GPU cannot
// run (compile_error), the GPU faulting (device_fault). Sticky: the codes whose documentation says the process is
// left in an inconsistent state (or the context must be destroyed) and every later call returns the same error.
constexpr CuResultInfo kTable[] = {
    {0, "CUDA_SUCCESS", K::error, false},
    {1, "CUDA_ERROR_INVALID_VALUE", K::invalid_argument, false},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", K::out_of_memory, false},
    {3, "CUDA_ERROR_NOT_INITIALIZED", K::unsupported_driver, false},
    {4, "CUDA_ERROR_DEINITIALIZED", K::unsupported_driver, false},
    {5, "CUDA_ERROR_PROFILER_DISABLED", K::invalid_argument, false},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", K::invalid_argument, false},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", K::invalid_argument, false},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", K::invalid_argument, false},
    {34, "CUDA_ERROR_STUB_LIBRARY", K::unsupported_driver, false},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", K::unsupported_driver, false},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", K::unsupported_driver, false},
    {100, "CUDA_ERROR_NO_DEVICE", K::unsupported_driver, false},
    {101, "CUDA_ERROR_INVALID_DEVICE", K::invalid_argument, false},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED", K::unsupported_driver, false},
    {200, "CUDA_ERROR_INVALID_IMAGE", K::compile_error, false},
    {201, "CUDA_ERROR_INVALID_CONTEXT", K::invalid_argument, false},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", K::invalid_argument, false},
    {205, "CUDA_ERROR_MAP_FAILED", K::error, false},
    {206, "CUDA_ERROR_UNMAP_FAILED", K::error, false},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED", K::invalid_argument, false},
    {208, "CUDA_ERROR_ALREADY_MAPPED", K::invalid_argument, false},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", K::compile_error, false},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED", K::invalid_argument, false},
    {211, "CUDA_ERROR_NOT_MAPPED", K::invalid_argument, false},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", K::invalid_argument, false},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", K::invalid_argument, false},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", K::device_fault, false},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT", K::invalid_argument, false},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", K::invalid_argument, false},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", K::invalid_argument, false},
    {218, "CUDA_ERROR_INVALID_PTX", K::compile_error, false},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", K::invalid_argument, false},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", K::device_fault, false},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", K::unsupported_driver, false},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", K::compile_error, false},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", K::unsupported_driver, false},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", K::invalid_argument, false},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", K::unsupported_driver, false},
    {226, "CUDA_ERROR_CONTAINED", K::device_fault, true},
    {300, "CUDA_ERROR_INVALID_SOURCE", K::invalid_argument, false},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", K::invalid_argument, false},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", K::compile_error, false},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", K::compile_error, false},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", K::error, false},
    {400, "CUDA_ERROR_INVALID_HANDLE", K::invalid_argument, false},
    {401, "CUDA_ERROR_ILLEGAL_STATE", K::invalid_argument, false},
    {402, "CUDA_ERROR_LOSSY_QUERY", K::invalid_argument, false},
    {500, "CUDA_ERROR_NOT_FOUND", K::invalid_argument, false},
    {600, "CUDA_ERROR_NOT_READY", K::error, false},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", K::device_fault, true},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", K::invalid_argument, false},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", K::device_fault, true},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", K::invalid_argument, false},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", K::invalid_argument, false},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", K::invalid_argument, false},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", K::invalid_argument, false},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", K::invalid_argument, false},
    {710, "CUDA_ERROR_ASSERT", K::device_fault, true},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", K::invalid_argument, false},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", K::invalid_argument, false},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", K::invalid_argument, false},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", K::device_fault, true},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", K::device_fault, true},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", K::device_fault, true},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", K::device_fault, true},
    {718, "CUDA_ERROR_INVALID_PC", K::device_fault, true},
    {719, "CUDA_ERROR_LAUNCH_FAILED", K::device_fault, true},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", K::invalid_argument, false},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", K::device_fault, true},
    {800, "CUDA_ERROR_NOT_PERMITTED", K::invalid_argument, false},
    {801, "CUDA_ERROR_NOT_SUPPORTED", K::unsupported_driver, false},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", K::unsupported_driver, false},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", K::unsupported_driver, false},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", K::unsupported_driver, false},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED", K::unsupported_driver, false},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE", K::unsupported_driver, false},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY", K::unsupported_driver, false},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", K::unsupported_driver, false},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", K::unsupported_driver, false},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", K::device_fault, true},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED", K::unsupported_driver, false},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH", K::unsupported_driver, false},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", K::invalid_argument, false},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", K::invalid_argument, false},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", K::invalid_argument, false},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", K::invalid_argument, false},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", K::invalid_argument, false},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", K::invalid_argument, false},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", K::invalid_argument, false},
    {907, "CUDA_ERROR_CAPTURED_EVENT", K::invalid_argument, false},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", K::invalid_argument, false},
    {909, "CUDA_ERROR_TIMEOUT", K::timeout, false},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", K::invalid_argument, false},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE", K::device_fault, true},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", K::invalid_argument, false},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED", K::invalid_argument, false},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", K::invalid_argument, false},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", K::invalid_argument, false},
    {916, "CUDA_ERROR_KEY_ROTATION", K::unsupported_driver, false},
    {999, "CUDA_ERROR_UNKNOWN", K::error, false},
};

constexpr bool sorted_by_code() {
  for (size_t i = 1; i < std::size(kTable); ++i)
    if (kTable[i - 1].code >= kTable[i].code) return false;
  return true;
}
static_assert(sorted_by_code(), "kTable must be in code order (cu_result_info searches it)");

}  // namespace

std::span<const CuResultInfo> cu_results() { return kTable; }

const CuResultInfo* cu_result_info(int code) {
  const auto* it = std::lower_bound(std::begin(kTable), std::end(kTable), code,
                                    [](const CuResultInfo& i, int c) { return i.code < c; });
  return it != std::end(kTable) && it->code == code ? it : nullptr;
}

std::string cu_error_message(int code, std::string_view call, const char* text, std::string_view context) {
  const CuResultInfo* info = cu_result_info(code);
  return cat(context, context.empty() ? "" : ": ", call, " failed: ", info ? info->name : "unknown CUresult", " (",
             code, ")", text ? ": " : "", text ? text : "");
}

std::exception_ptr cu_error(int code, std::string_view call, const char* text, std::string_view context) {
  std::string m = cu_error_message(code, call, text, context);
  const CuResultInfo* info = cu_result_info(code);
  switch (info ? info->kind : K::error) {
    case K::invalid_argument: return std::make_exception_ptr(InvalidArgument(std::move(m)));
    case K::out_of_memory: return std::make_exception_ptr(OutOfMemory(std::move(m)));
    case K::unsupported_driver: return std::make_exception_ptr(UnsupportedDriver(std::move(m)));
    case K::compile_error: return std::make_exception_ptr(CompileError(std::move(m)));
    case K::device_fault: return std::make_exception_ptr(DeviceFault(std::move(m)));
    case K::timeout: return std::make_exception_ptr(TimeoutError(std::move(m)));
    case K::error: break;
  }
  return std::make_exception_ptr(Error(std::move(m)));
}

}  // namespace hcq::cuda
