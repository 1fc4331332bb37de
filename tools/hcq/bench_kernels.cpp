#include "bench_kernels.hpp"

namespace hcq::tool {

std::optional<BenchKernels> bench_kernels_for(std::string_view interface) {
  if (interface == "cpu") {
    // C with the CPU device's kernel ABI (drivers/cpu/kernel_abi.h): HCQ_KERNEL(name, buffers, values).
    return BenchKernels{
        .empty_source = "HCQ_KERNEL(empty, 0, 0) {}\n",
        .args_source = "HCQ_KERNEL(args, 1, 1) {}\n",
    };
  }
  return std::nullopt;
}

}  // namespace hcq::tool
