// Every CUresult as a typed hcq error (include/hcq/error.hpp). The table of cuda.h's result codes is data, written
// once: each code's name and the hcq error type it becomes; whether it is sticky (CUDA's docs: the context is left
// in an inconsistent state and every later call returns the same error, so the process must end to use the GPU
// again); the device then keeps it as its DeviceFault.
#pragma once

#include <cstdint>
#include <exception>
#include <span>
#include <string>
#include <string_view>

namespace hcq::cuda {

enum class ErrorKind : uint8_t {
  invalid_argument,    // InvalidArgument: the call was given something wrong
  out_of_memory,       // OutOfMemory
  unsupported_driver,  // UnsupportedDriver: no device, a stub or mismatched driver, a call the driver lacks
  compile_error,       // CompileError: an image the driver cannot load for this GPU
  device_fault,        // DeviceFault: the GPU faulted
  timeout,             // TimeoutError
  error,               // Error: anything else
};

struct CuResultInfo {
  int code;
  std::string_view name;  // "CUDA_ERROR_ILLEGAL_ADDRESS"
  ErrorKind kind;
  bool sticky;  // the context is unusable afterwards
};

// cuda.h's CUresult values in code order.
std::span<const CuResultInfo> cu_results();
// The entry for `code`, or nullptr for a code cuda.h does not define.
const CuResultInfo* cu_result_info(int code);

// The error for a failed call: the table's type (Error for an unknown code), with the message
//   "<context>: <call> failed: <NAME> (<code>): <text>"
// `context` (a device name) and its ": " are left out when empty; <NAME> is "unknown CUresult" for a code outside
// the table; ": <text>" is left out when `text` (cuGetErrorString's) is null.
std::exception_ptr cu_error(int code, std::string_view call, const char* text, std::string_view context = {});
// The same as a message, for reports that do not throw.
std::string cu_error_message(int code, std::string_view call, const char* text, std::string_view context = {});

}  // namespace hcq::cuda
