// The text of include/hcq/kernel_abi.h, embedded at build time (drivers/common/meson.build). The CPU, AMD and NV
// compilers prepend it to every kernel source: one header serves every target (it picks its section from what each
// compiler predefines), and no compiler has to find the header on disk at run time.
#pragma once

namespace hcq::drivers {
extern const char* const kKernelAbiText;
}  // namespace hcq::drivers
