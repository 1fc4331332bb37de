// The text of amd_kernel_abi.h, embedded at build time (see meson.build).
#pragma once

namespace hcq::amd {
extern const char* const kAmdKernelAbiSource;
}  // namespace hcq::amd
