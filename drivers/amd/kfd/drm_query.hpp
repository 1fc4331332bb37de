// What the amdgpu kernel driver tells about a GPU outside the KFD topology: the DRM driver version and libdrm_amdgpu's
// GPU info and marketing name from the render node, and the KFD ioctl ABI version from /dev/kfd.
//
// libdrm issues its ioctls on the fd directly, not through the OS seam, so it only ever sees an fd that the real
// seam opened and that fstat says is a DRM character device. The simulator's render node is a file descriptor of
// a SimOs (not a kernel object): it is recognised by its seam and skipped, never handed to libdrm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/gpu_diagnosis.hpp"
#include "hcq/backend/os.hpp"

namespace hcq::amd {

struct RenderNodeInfo {
  std::string drm_driver;      // "amdgpu"
  std::string drm_version;     // "3.57.0" (major.minor.patchlevel of the DRM interface)
  std::string marketing_name;  // "AMD Radeon RX 7900 XTX"; empty when libdrm's table does not know the part
  uint32_t asic_id = 0;        // the PCI device id
  uint32_t family_id = 0;      // AMDGPU_FAMILY_*
  uint32_t chip_external_rev = 0;
  uint64_t max_engine_clock_khz = 0;
  uint32_t num_shader_engines = 0;
};

// True when `fd`, opened through `os`, is a real DRM render node (the libc seam, a character device of the DRM
// major). False for a simulator's fd, a regular file, or a closed fd.
bool is_real_render_node(Os& os, int fd);

// What the render node `fd` tells, or nullopt when it is not a real render node or libdrm refuses it. Never throws
// for a driver's refusal: this is information, not bring-up.
std::optional<RenderNodeInfo> query_render_node(Os& os, int fd);

// Opens /dev/dri/renderD<minor> through `os` (read-write), queries it, closes it. Over any seam but the real one it
// opens nothing and returns nullopt.
std::optional<RenderNodeInfo> query_render_minor(Os& os, uint32_t minor);

// The KFD ioctl ABI version (AMDKFD_IOC_GET_VERSION), or nullopt when /dev/kfd does not open or refuses.
std::optional<KfdVersion> query_kfd_version(Os& os);

}  // namespace hcq::amd
