#include "cuda/cuda_program.hpp"

#include <atomic>

#include "cuda/cuda_device.hpp"

namespace hcq::cuda {
namespace {
std::atomic<uint64_t> next_serial{1};
}

CudaProgram::CudaProgram(CudaDevice& dev, std::string name, uint32_t num_bufs, uint32_t num_vals, LaunchLimits limits,
                         CUmodule module, CUfunction function, uint32_t param_bytes)
    : Program(dev, std::move(name), num_bufs, num_vals, limits),
      cuda_(dev),
      module_(module),
      serial_(next_serial.fetch_add(1, std::memory_order_relaxed)),
      param_bytes_(param_bytes) {
  cuda_.register_kernel(serial_, CudaKernelRef{function, param_bytes});
}

CudaProgram::~CudaProgram() {
  cuda_.unregister_kernel(serial_);  // a queue resubmitted after this is refused (DeviceFault), not launched
  retire([this] {
    cuda_.bind_context();
    cuda_.api().module_unload(module_);
  });
}

}  // namespace hcq::cuda
