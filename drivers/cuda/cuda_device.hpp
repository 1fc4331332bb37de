// CudaDevice: an NVIDIA GPU through the CUDA driver API (CUDA[:n]), for machines where the RM path (drivers/nv/rm)
// cannot be opened, and as the yardstick the NV backend is measured against on the same GPU. docs/cuda.md says
// what maps to what:
//   memory   VRAM: cuMemCreate + cuMemMap at the address the unified VA space handed out (cuMemAddressReserve with
//            that address; a driver that places it elsewhere is refused). Host-visible memory: our own pages at the
//            unified VA, pinned and mapped for the GPU with cuMemHostRegister (the GPU address must equal the host's).
//   signals  the process's signal pool pages, registered the same way; waits and writes are stream memory
//            operations (cuStreamWaitValue64 / cuStreamWriteValue64).
//   queues   one compute and one copy stream (cuda_stream.hpp), shared by every queue of the kind.
//   programs the NVRTC cubins NvCompiler builds, loaded with cuModuleLoadData and launched with cuLaunchKernel.
//   faults   a sticky CUresult from any call, or from cuStreamQuery while waiting, is the device's DeviceFault.
#pragma once

#include <array>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "cuda/cuda_api.hpp"
#include "hcq/backend/signal_pool.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"

namespace hcq::nv {
class NvCompiler;
}

namespace hcq::cuda {

class CudaStream;

// What the device reports about itself, read once at open.
struct CudaFacts {
  int ordinal = 0;
  std::string product;  // cuDeviceGetName
  std::array<uint8_t, 16> uuid{};
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  int warp_size = 32;
  int max_shared_optin = 0;
  int max_shared_per_block = 0;  // without an opt-in: what static shared memory may take
  LaunchLimits limits;
  uint64_t memory_bytes = 0;
  bool wait_value_nor = false;  // CU_STREAM_WAIT_VALUE_NOR is supported (poll_bit for a clear bit)
  uint64_t granularity = 0;     // cuMemGetAllocationGranularity (minimum) of device memory
  std::string arch() const { return cat("sm_", cc_major * 10 + cc_minor); }
};

// A kernel the streams may launch, by the serial its program registered (a queue's words name programs by serial,
// never by pointer: a program unloaded before a resubmit is a refusal, not a dangling handle).
struct CudaKernelRef {
  CUfunction function = nullptr;
  uint32_t param_bytes = 0;
};

class CudaDevice final : public Device, private SignalPool::PageMapper {
 public:
  CudaDevice(std::string name, std::shared_ptr<const CudaApi> api, int ordinal);
  ~CudaDevice() override;

  DeviceInfo info() const override;
  std::unique_ptr<HWQueue> new_queue(QueueKind kind) override;
  Allocation alloc_memory(uint64_t size, const BufferSpec& spec) override;
  void free_memory(const Allocation& a) override;
  void map_memory(const Allocation& a) override;
  Compiler& compiler() override;
  std::unique_ptr<Program> load_program(const std::string& name, std::span<const uint8_t> binary) override;
  // Timestamps are %globaltimer, or CLOCK_MONOTONIC without the timestamp kernel: nanoseconds either way.
  double ticks_to_us(uint64_t ticks) const override { return static_cast<double>(ticks) / 1000.0; }
  std::string describe_state() const override;

  const CudaApi& api() const { return *api_; }
  const CudaFacts& facts() const { return facts_; }
  // Makes this device's context current on the calling thread (every CUDA call needs it; cheap).
  void bind_context() const;
  // Checks a call made for this device: a sticky error becomes the device's DeviceFault (recorded, rethrown);
  // anything else is thrown as its typed error.
  void check(CUresult rc, const char* call) const;
  // The kernel that writes %globaltimer at a signal's +8 (one 64-bit parameter: the signal's address), or null when
  // the driver cannot compile its PTX (no PTX JIT library, JIT disabled): timestamps then come from the host clock
  // (timestamp_source() says which).
  CUfunction timestamp_kernel() const { return timestamp_fn_; }
  const std::string& timestamp_source() const { return timestamp_source_; }
  // Whether [va, va+size) is memory the GPU may touch through this device (ours, registered, or mapped here).
  bool knows_range(uint64_t va, uint64_t size) const;
  // Programs register while loaded (cuda_program.cpp).
  void register_kernel(uint64_t serial, CudaKernelRef ref);
  void unregister_kernel(uint64_t serial);
  std::optional<CudaKernelRef> kernel(uint64_t serial) const;

 protected:
  std::exception_ptr poll_fault() const override;

 private:
  struct Mapping {
    enum class Kind : uint8_t { vram, host, registered } kind;
    uint64_t bytes = 0;                     // the range's length (VRAM: rounded to the granularity)
    CUmemGenericAllocationHandle handle{};  // vram
  };
  void map_signal_page(void* addr, size_t size) override;
  void unmap_signal_page(void* addr, size_t size) override;
  // cuMemHostRegister of host memory at `va`, checked to be at the same address for the GPU.
  void register_host(uint64_t va, uint64_t size, const char* what);
  Allocation alloc_vram(uint64_t size, const BufferSpec& spec);
  Allocation alloc_host(uint64_t size, const BufferSpec& spec);
  void stop() noexcept;

  std::shared_ptr<const CudaApi> api_;
  CudaFacts facts_;
  CUcontext ctx_ = nullptr;
  bool ctx_retained_ = false;
  bool mapper_registered_ = false;
  CUmodule timestamp_module_ = nullptr;
  CUfunction timestamp_fn_ = nullptr;
  std::string timestamp_source_;
  std::unique_ptr<CudaStream> compute_, copy_;

  mutable std::shared_mutex ranges_mu_;
  std::map<uint64_t, Mapping> ranges_;  // va -> what lives there

  mutable std::shared_mutex kernels_mu_;
  std::map<uint64_t, CudaKernelRef> kernels_;

  std::once_flag compiler_once_;
  std::unique_ptr<nv::NvCompiler> compiler_;

  mutable std::mutex fault_mu_;
  mutable std::exception_ptr fault_;
};

// CUDA:<index>: the index-th device as CUDA numbers them. Throws UnsupportedDriver saying why not (no library, too
// old, missing entry points, no such device, a device without what the adapter needs).
std::unique_ptr<Device> open_cuda_device(const std::string& name, unsigned index);
// The same over a given API (tests load fake libraries).
std::unique_ptr<Device> open_cuda_device(const std::string& name, unsigned index, std::shared_ptr<const CudaApi> api);

}  // namespace hcq::cuda
