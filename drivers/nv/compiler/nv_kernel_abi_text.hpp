// The text of nv_kernel_abi.h, embedded at build time (see meson.build).
#pragma once

namespace hcq::nv {
extern const char* const kNvKernelAbiSource;
}  // namespace hcq::nv
