#include "bench_kernels.hpp"

namespace hcq::tool {

std::optional<BenchKernels> bench_kernels_for(std::string_view interface) {
  if (interface == "cpu" || interface == "kfd" || interface == "sim-kfd" || interface == "rm" || interface == "sim-rm") {
    // C with the HCQ kernel ABI (drivers/cpu/kernel_abi.h; the AMD compiler takes the same source with its own
    // prelude, drivers/amd/compiler/amd_kernel_abi.h): HCQ_KERNEL(name, buffers, values).
    return BenchKernels{
        .empty_source = "HCQ_KERNEL(empty, 0, 0) {}\n",
        .args_source = "HCQ_KERNEL(args, 1, 1) {}\n",
    };
  }
  return std::nullopt;
}

}  // namespace hcq::tool
