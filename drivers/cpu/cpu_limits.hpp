// Launch limits of the CPU device, shared by the program (host-side checks) and the worker (device-side checks of
// patched dims).
#pragma once

#include "hcq/program.hpp"

namespace hcq::cpu {

inline constexpr LaunchLimits kCpuLaunchLimits{
    .max_threads_per_group = 1024,
    .max_local = {1024, 1024, 1024},
    .max_global = {0x7fffffff, 0x7fffffff, 0x7fffffff},
};

}  // namespace hcq::cpu
