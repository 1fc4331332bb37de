// The text of kernel_abi.h, embedded at build time (see meson.build) so the compiler can prepend it to every kernel
// without looking for the header on disk.
#pragma once

namespace hcq::cpu {
extern const char* const kKernelAbiSource;
}  // namespace hcq::cpu
