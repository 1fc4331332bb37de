// What gVisor's NVIDIA proxy (nvproxy) refuses when a sandbox runs with its default driver capabilities, compute
// and utility, limited to the calls this simulator implements. The simulated driver answers each refusal as the
// proxy does, before RM sees the call, so the backend's fallbacks can be exercised without a sandbox.
//
// Facts from gVisor's pkg/sentry/devices/nvproxy (version.go: the per-version tables of escapes, controls and
// classes with the capabilities each needs, unchanged for the 580.65.06 .. 580.173.02 ABIs as far as these calls go;
// handlers.go: a missing capability or a missing entry is a handler error; frontend.go: what each dispatcher makes
// of that error).
#pragma once

#include <cstdint>

namespace hcq::sim::nvproxy {

// An escape the proxy refuses: the ioctl fails with EINVAL (frontend.go, the escape dispatcher). RM_MAP_MEMORY_DMA
// and RM_UNMAP_MEMORY_DMA need the graphics or video capability; STATUS_CODE has no entry at all.
bool refuses_escape(uint32_t escape);

// A class the proxy refuses: RM_ALLOC returns 0 with NV_ERR_INVALID_CLASS in the block (frontend.go, the allocation
// dispatcher, mirroring RM's answer for a class it does not know). NV01_MEMORY_VIRTUAL needs graphics or video;
// AMPERE_USERMODE_A has no entry (TURING_USERMODE_A, HOPPER_USERMODE_A and BLACKWELL_USERMODE_A do).
bool refuses_class(uint32_t class_id);

// A control the proxy refuses: RM_CONTROL returns 0 with NV_ERR_NOT_SUPPORTED in the block (frontend.go, the control
// dispatcher, mirroring RM's answer for a command the object does not export). DEBUG_READ_MMU_FAULT_INFO and
// SYSTEM_GET_BUILD_VERSION_V2 have no entry.
bool refuses_control(uint32_t cmd);

}  // namespace hcq::sim::nvproxy
