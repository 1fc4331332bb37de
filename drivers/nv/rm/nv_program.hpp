// A kernel loaded on an NVIDIA GPU: the cubin's image uploaded to VRAM (relocated for its base), and what a queue
// needs to launch it — the QMD's per-program fields, built once (code address and prefetch, registers, shared and
// local memory, constant banks 1..7), and the constant bank 0 it fills per launch: the driver prefix (the shared
// and local memory windows, as compiled code expects them) then, at the kernel's EIATTR_PARAM_CBANK offset, the
// parameter block of the hcq kernel ABI (num_bufs() 8-byte addresses, then num_vals() 32-bit values).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hcq/program.hpp"
#include "nv/cubin/cubin.hpp"

namespace hcq::nv {

class NvDevice;
class NvMemory;
struct NvArchInfo;

class NvProgram final : public Program {
 public:
  struct Facts {
    CubinKernel kernel;  // as the cubin describes it
    uint64_t image_va = 0;
    uint64_t code_va = 0;          // the kernel's first instruction
    std::vector<uint32_t> qmd;     // the QMD with the program's fields set (QmdBuilder::program)
    std::vector<uint8_t> cbank0;   // constant bank 0 without parameters: the driver prefix, zeros after it
    nv::LaunchLimits arch_limits;  // the architecture's per-block limits, for Cubin::check_launch
    hcq::LaunchLimits limits;      // nv_launch_limits(): what HWQueue::exec checks
    uint32_t num_bufs = 0, num_vals = 0;
    std::string cubin_id;  // Cubin::identity()
  };

  // `image` holds the uploaded cubin image; `on_unload` (may be empty) runs at destruction, after the device has
  // drained, before the image is freed.
  NvProgram(NvDevice& dev, std::string name, Facts facts, std::unique_ptr<NvMemory> image,
            std::function<void()> on_unload);
  ~NvProgram() override;

  const CubinKernel& kernel() const { return facts_.kernel; }
  uint64_t code_va() const { return facts_.code_va; }
  std::span<const uint32_t> qmd_template() const { return facts_.qmd; }
  std::span<const uint8_t> cbank0_template() const { return facts_.cbank0; }
  uint32_t param_offset() const { return facts_.kernel.param_offset; }
  const nv::LaunchLimits& arch_limits() const { return facts_.arch_limits; }
  const Facts& facts() const { return facts_; }
  // A number no other NvProgram of this process has, before or after: what a queue's launch memo is keyed on (an
  // address would do as well only until the program is unloaded and another one loaded in its place).
  uint64_t serial() const { return serial_; }

 private:
  Facts facts_;
  uint64_t serial_;
  std::unique_ptr<NvMemory> image_;
  std::function<void()> on_unload_;
};

// The launch limits of every kernel on `arch` together: the architecture's block size, before any kernel's
// registers reduce it. What DeviceInfo::launch_limits reports; nv_launch_limits() lies within it.
hcq::LaunchLimits nv_arch_launch_limits(const NvArchInfo& arch);

// The launch limits hcq checks for `k` on `arch`: the architecture's block size, reduced to what the kernel's
// registers (and its __launch_bounds__) allow; grids as the QMD's raster fields hold them.
hcq::LaunchLimits nv_launch_limits(const NvArchInfo& arch, const CubinKernel& k);

// Constant bank 0 for `k` on `arch` without its parameters: `bytes` long (at least param_offset + param_size,
// 16-byte multiple), the driver prefix where the architecture puts it (shared window, local window, the stack top
// kCudaStackTop: words 6..11 before Blackwell, 188..191 and 223 on it, as tinygrad writes them).
std::vector<uint8_t> cbank0_prefix(const NvArchInfo& arch, const CubinKernel& k);

}  // namespace hcq::nv
