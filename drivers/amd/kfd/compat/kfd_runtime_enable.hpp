// AMDKFD_IOC_RUNTIME_ENABLE (KFD 1.13, the debugger API): the runtime tells KFD it is up, before it creates queues,
// so a debugger attached to the process can take over trap handling. Older <linux/kfd_ioctl.h> (Debian's is 1.11)
// lack it, so its number and argument layout are written here, once, from the uAPI header; both the backend
// (drivers/amd/kfd/kfd.cpp) and the simulated KFD (drivers/sim/kfd) use these.
#pragma once

#include <linux/ioctl.h>
#include <linux/types.h>

namespace hcq::amd::kfd_compat {

struct RuntimeEnableArgs {
  __u64 r_debug;            // to KFD: the runtime's r_debug structure, for a debugger (0: none)
  __u32 mode_mask;          // to KFD: kRuntimeEnable (and kRuntimeTtmpSave) to enable; 0 to disable
  __u32 capabilities_mask;  // from KFD
};
static_assert(sizeof(RuntimeEnableArgs) == 16);

inline constexpr unsigned long kIocRuntimeEnable = _IOWR('K', 0x25, RuntimeEnableArgs);
inline constexpr __u32 kRuntimeEnable = 1;    // KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK
inline constexpr __u32 kRuntimeTtmpSave = 2;  // KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK
// The first KFD minor version (of major 1) with the ioctl. Errors: EBUSY when the runtime is already enabled,
// EEXIST when the process already has user queues.
inline constexpr unsigned kRuntimeEnableMinor = 13;

}  // namespace hcq::amd::kfd_compat
