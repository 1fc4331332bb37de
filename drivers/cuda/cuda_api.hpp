// The CUDA driver API as hcq calls it, loaded at run time (dlopen of libcuda.so.1): no link-time dependency, so the
// project builds and runs where there is no NVIDIA driver. One definition for every user: the CUDA adapter
// (drivers/cuda) and `hcq bench`'s CUDA comparison (tools/hcq/cuda_compare.cpp).
//
// The facts below are cuda.h's (CUDA 12/13): every call returns a CUresult (0 = CUDA_SUCCESS); handles are opaque
// pointers; a device is an int ordinal; device addresses are 64-bit. The exported names are the ones cuda.h maps the
// plain names to (cuMemHostRegister -> cuMemHostRegister_v2, ...); the stream calls are the legacy-default-stream
// exports, which is what they are on the explicit streams hcq makes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hcq::cuda {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = uint64_t;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUmemGenericAllocationHandle = uint64_t;
struct CUuuid {
  uint8_t bytes[16];
};

// cuda.h: CUmemLocation, CUmemAllocationProp, CUmemAccessDesc (the _v1 layouts, what cuMemCreate/cuMemSetAccess take).
struct CUmemLocation {
  int type;  // CUmemLocationType
  int id;
};
struct CUmemAllocationProp {
  int type;                  // CUmemAllocationType
  int requestedHandleTypes;  // CUmemAllocationHandleType
  CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;  // CUmemAccess_flags
};

// The constants hcq passes (cuda.h's names and values).
inline constexpr CUresult kSuccess = 0;                   // CUDA_SUCCESS
inline constexpr CUresult kNotReady = 600;                // CUDA_ERROR_NOT_READY: cuStreamQuery of a busy stream
inline constexpr CUresult kPrimaryContextActive = 708;    // CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE
inline constexpr CUresult kHostMemoryRegistered = 712;    // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
inline constexpr CUresult kJitCompilerNotFound = 221;     // CUDA_ERROR_JIT_COMPILER_NOT_FOUND: no PTX JIT library
inline constexpr CUresult kJitCompilationDisabled = 223;  // CUDA_ERROR_JIT_COMPILATION_DISABLED
inline constexpr unsigned kCtxSchedSpin = 0x01;           // CU_CTX_SCHED_SPIN
inline constexpr unsigned kStreamNonBlocking = 0x01;      // CU_STREAM_NON_BLOCKING
inline constexpr unsigned kWaitValueGeq = 0x0;            // CU_STREAM_WAIT_VALUE_GEQ: (int64)(*addr - value) >= 0
inline constexpr unsigned kWaitValueAnd = 0x2;            // CU_STREAM_WAIT_VALUE_AND: (*addr & value) != 0
inline constexpr unsigned kWaitValueNor = 0x3;            // CU_STREAM_WAIT_VALUE_NOR: ~(*addr | value) != 0
inline constexpr unsigned kWriteValueDefault = 0x0;       // CU_STREAM_WRITE_VALUE_DEFAULT: after a memory barrier
inline constexpr unsigned kHostRegisterPortable = 0x01;   // CU_MEMHOSTREGISTER_PORTABLE: every context sees it
inline constexpr unsigned kHostRegisterDeviceMap = 0x02;  // CU_MEMHOSTREGISTER_DEVICEMAP
inline constexpr int kMemAllocationTypePinned = 0x1;      // CU_MEM_ALLOCATION_TYPE_PINNED
inline constexpr int kMemLocationTypeDevice = 0x1;        // CU_MEM_LOCATION_TYPE_DEVICE
inline constexpr int kMemAccessReadWrite = 0x3;           // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
inline constexpr int kMemGranularityMinimum = 0x0;        // CU_MEM_ALLOC_GRANULARITY_MINIMUM
inline constexpr int kFuncAttrMaxThreadsPerBlock = 0;     // CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK

// CUdevice_attribute values hcq reads.
enum class DeviceAttr : int {
  max_threads_per_block = 1,
  max_block_dim_x = 2,
  max_block_dim_y = 3,
  max_block_dim_z = 4,
  max_grid_dim_x = 5,
  max_grid_dim_y = 6,
  max_grid_dim_z = 7,
  max_shared_memory_per_block = 8,
  warp_size = 10,
  multiprocessor_count = 16,
  unified_addressing = 41,
  compute_capability_major = 75,
  compute_capability_minor = 76,
  can_use_host_pointer_for_registered_mem = 91,
  max_shared_memory_per_block_optin = 97,
  virtual_memory_management_supported = 102,
  can_use_64_bit_stream_mem_ops = 122,
  can_use_stream_wait_value_nor = 123,
};

// The oldest driver hcq accepts: CUDA 12.0, the first whose stream memory operations (cuStreamWaitValue64_v2 and
// friends) are on by default; before it they needed the nvidia module's NVreg_EnableStreamMemOPs=1.
inline constexpr int kMinDriverVersion = 12000;

// "12.8" for cuDriverGetVersion's 12080.
std::string version_text(int version);

// The entry points, resolved from one library. Each is non-null once load_cuda_api returned.
struct CudaApi {
  std::string path;  // the library that was loaded
  int version = 0;   // cuDriverGetVersion
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_get_uuid)(CUuuid*, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_total_mem)(size_t*, CUdevice) = nullptr;
  CUresult (*primary_ctx_set_flags)(CUdevice, unsigned) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*func_get_attribute)(int*, int, CUfunction) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;
  CUresult (*stream_query)(CUstream) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*stream_write_value32)(CUstream, CUdeviceptr, uint32_t, unsigned) = nullptr;
  CUresult (*stream_write_value64)(CUstream, CUdeviceptr, uint64_t, unsigned) = nullptr;
  CUresult (*stream_wait_value32)(CUstream, CUdeviceptr, uint32_t, unsigned) = nullptr;
  CUresult (*stream_wait_value64)(CUstream, CUdeviceptr, uint64_t, unsigned) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**) = nullptr;
  CUresult (*launch_host_func)(CUstream, void (*)(void*), void*) = nullptr;
  CUresult (*memcpy_async)(CUdeviceptr, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t) = nullptr;
  CUresult (*mem_host_register)(void*, size_t, unsigned) = nullptr;
  CUresult (*mem_host_unregister)(void*) = nullptr;
  CUresult (*mem_host_get_device_pointer)(CUdeviceptr*, void*, unsigned) = nullptr;
  CUresult (*mem_get_allocation_granularity)(size_t*, const CUmemAllocationProp*, int) = nullptr;
  CUresult (*mem_address_reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, uint64_t) = nullptr;
  CUresult (*mem_address_free)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, uint64_t) = nullptr;
  CUresult (*mem_release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*mem_map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, uint64_t) = nullptr;
  CUresult (*mem_unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*mem_set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;

  // cuGetErrorString's text for `rc`, or nullptr when the driver has none (it returns CUDA_ERROR_INVALID_VALUE then).
  const char* error_text(CUresult rc) const;
  // Throws the typed error of a failed call (cuda_errors.hpp: "<context>: <call> failed: NAME (code): text");
  // returns when rc is CUDA_SUCCESS.
  void check(CUresult rc, const char* call, const std::string& context = {}) const;
};

// How the loader finds the library: tests point it at fake libraries (or at a dlopen that fails).
struct LoadOptions {
  // Tried in order; the first that loads, is new enough and has every entry point wins.
  std::vector<std::string> candidates = {"libcuda.so.1"};
  // dlopen and dlsym by default.
  void* (*open)(const char* path, int flags) = nullptr;
  void* (*symbol)(void* handle, const char* name) = nullptr;
};

// Loads the CUDA driver API, or throws UnsupportedDriver naming, for each candidate, what was looked for and why it
// did not do: the library name and dlerror's text; the version found against kMinDriverVersion; or the entry points
// it lacks. A library is never closed: libcuda starts threads that must not outlive its code.
std::shared_ptr<const CudaApi> load_cuda_api(const LoadOptions& options = {});

// The process's CUDA driver API from the default candidates, loaded once (the same result, or the same error, every
// time).
std::shared_ptr<const CudaApi> process_cuda_api();

}  // namespace hcq::cuda
