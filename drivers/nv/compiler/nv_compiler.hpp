// The NV compiler: hcq kernel source -> cubin for one SM version, with NVRTC loaded at run time.
//
//   C kernel source (the hcq kernel ABI, same source as the CPU and AMD devices)
//     -- hcq/kernel_abi.h prepended, compiled as CUDA C++ by NVRTC: --gpu-architecture=sm_XX -default-device
//   cubin (ELF64 EM_CUDA executable)
//     -- checked by the cubin loader (it must load, for the asked SM), then `.hcq.source` appended
//   cubin + source
//
// The source section is for the simulated GPU, which runs a kernel as its host twin built from that source
// (drivers/sim/twins). Real GPUs never see it: hcq loads cubins itself and uploads only the image.
// Without NVRTC the compiler still exists (identity() says NVRTC is unavailable) and compile() throws CompileError
// naming every library path it tried.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"

namespace hcq::nv {

class Nvrtc;

class NvCompiler final : public Compiler {
 public:
  // `arch` is "sm_80", "sm_90", "sm_100", ... (checked by NVRTC at compile time). `nvrtc_candidates`: where to look
  // for NVRTC (default: Nvrtc::default_candidates()); tests pass a bad path to see the error.
  explicit NvCompiler(std::string arch, std::vector<std::string> nvrtc_candidates = {});
  ~NvCompiler() override;

  // Source -> cubin (with .hcq.source). Throws CompileError with NVRTC's diagnostics, or when NVRTC is missing.
  std::vector<uint8_t> compile(std::string_view source) override;
  // "NVRTC 13.0" (or "NVRTC unavailable" when it cannot be loaded: nothing compiles then, so no cache entry can be
  // served under that identity either).
  std::string identity() const override;
  std::string target() const override { return arch_; }
  // Every NVRTC option and a hash of the ABI prelude (a changed ABI must not be served an old binary).
  std::string options() const override;

  // The NVRTC options used, for tests and tools.
  std::vector<std::string> nvrtc_options() const;

 private:
  // Loads NVRTC once; throws the CompileError of Nvrtc::open (remembered: later calls throw it again).
  const Nvrtc& nvrtc() const;
  std::string arch_;
  std::vector<std::string> candidates_;
  mutable std::once_flag once_;
  mutable std::shared_ptr<const Nvrtc> nvrtc_;
  mutable std::string open_error_;
};

}  // namespace hcq::nv
