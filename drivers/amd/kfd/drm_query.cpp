#include "amd/kfd/drm_query.hpp"

#include <amdgpu.h>
#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <xf86drm.h>

#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

constexpr unsigned kDrmMajor = 226;  // the character-device major of every DRM node (card*, renderD*)

}  // namespace

bool is_real_render_node(Os& os, int fd) {
  if (fd < 0 || &os != &real_os()) return false;  // a simulator's fd number is not a kernel fd: never fstat it
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) || ::major(st.st_rdev) != kDrmMajor) return false;
  return drmGetNodeTypeFromFd(fd) == DRM_NODE_RENDER;
}

std::optional<RenderNodeInfo> query_render_node(Os& os, int fd) {
  if (!is_real_render_node(os, fd)) return std::nullopt;
  RenderNodeInfo r;
  drmVersionPtr v = drmGetVersion(fd);
  if (v == nullptr) return std::nullopt;
  r.drm_driver.assign(v->name ? v->name : "", v->name ? static_cast<size_t>(v->name_len) : 0);
  r.drm_version = cat(v->version_major, ".", v->version_minor, ".", v->version_patchlevel);
  drmFreeVersion(v);
  if (r.drm_driver != "amdgpu") return r;  // some other DRM driver: its version is all we can say

  uint32_t major = 0, minor = 0;
  amdgpu_device_handle dev = nullptr;
  if (amdgpu_device_initialize(fd, &major, &minor, &dev) != 0) return r;
  amdgpu_gpu_info gi{};
  if (amdgpu_query_gpu_info(dev, &gi) == 0) {
    r.asic_id = gi.asic_id;
    r.family_id = gi.family_id;
    r.chip_external_rev = gi.chip_external_rev;
    r.max_engine_clock_khz = gi.max_engine_clk;
    r.num_shader_engines = gi.num_shader_engines;
  }
  if (const char* name = amdgpu_get_marketing_name(dev)) r.marketing_name = name;
  amdgpu_device_deinitialize(dev);
  return r;
}

std::optional<RenderNodeInfo> query_render_minor(Os& os, uint32_t minor) {
  if (&os != &real_os()) return std::nullopt;  // a simulator's node: nothing for libdrm to ask, nothing to open
  const std::string path = cat("/dev/dri/renderD", minor);
  const int fd = os.open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  UniqueFd owned(os, fd);
  return query_render_node(os, owned.get());
}

std::optional<KfdVersion> query_kfd_version(Os& os) {
  const int fd = os.open("/dev/kfd", O_RDWR | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  UniqueFd owned(os, fd);
  kfd_ioctl_get_version_args args{};
  if (os.ioctl(owned.get(), AMDKFD_IOC_GET_VERSION, &args) != 0) return std::nullopt;
  return KfdVersion{args.major_version, args.minor_version};
}

}  // namespace hcq::amd
