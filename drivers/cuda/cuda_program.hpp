// A kernel loaded through the CUDA driver: the NVRTC cubin (the same NvCompiler output the NV backend loads) as a
// CUmodule, its CUfunction, and the hcq kernel ABI counts the cubin's <name>_hcq_desc gives. Queues name it by a
// serial the device resolves at submit (cuda_device.hpp), so an unloaded program is refused, never launched.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/cuda_api.hpp"
#include "hcq/program.hpp"

namespace hcq::cuda {

class CudaDevice;

class CudaProgram final : public Program {
 public:
  // Takes ownership of `module` (unloaded at destruction, after the device drained).
  CudaProgram(CudaDevice& dev, std::string name, uint32_t num_bufs, uint32_t num_vals, LaunchLimits limits,
              CUmodule module, CUfunction function, uint32_t param_bytes);
  ~CudaProgram() override;

  uint64_t serial() const { return serial_; }
  uint32_t param_bytes() const { return param_bytes_; }

 private:
  CudaDevice& cuda_;
  CUmodule module_;
  uint64_t serial_;
  uint32_t param_bytes_;
};

}  // namespace hcq::cuda
