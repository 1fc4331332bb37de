#include "bench_kernels.hpp"

#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/program.hpp"

namespace hcq::tool {

std::optional<BenchKernels> bench_kernels_for(std::string_view interface) {
  // "cuda": the CUDA adapter compiles with the same NVRTC compiler as NV.
  if (interface == "cpu" || interface == "kfd" || interface == "sim-kfd" || interface == "rm" ||
      interface == "sim-rm" || interface == "cuda") {
    // C with the HCQ kernel ABI (include/hcq/kernel_abi.h, which every device's compiler prepends):
    // HCQ_KERNEL(name, buffers, values).
    return BenchKernels{
        .empty_source = "HCQ_KERNEL(empty, 0, 0) {}\n",
        .args_source = "HCQ_KERNEL(args, 1, 1) {}\n",
    };
  }
  return std::nullopt;
}

std::unique_ptr<Program> load_args_kernel(Device& dev) {
  const std::string interface = dev.info().interface;
  const std::optional<BenchKernels> kernels = bench_kernels_for(interface);
  if (!kernels) throw Error(cat("no bench kernels for ", dev.name(), "'s interface ", interface));
  return dev.load_program(BenchKernels::kArgsName, dev.compiler().compile_cached(kernels->args_source));
}

}  // namespace hcq::tool
