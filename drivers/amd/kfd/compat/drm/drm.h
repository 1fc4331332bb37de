/* Used only where the system lacks <drm/drm.h> (Debian's linux-libc-dev without the DRM uAPI headers):
 * <linux/kfd_ioctl.h> includes it but needs only the kernel integer types and the _IO* macros. meson adds this
 * directory to the include path only when the real header is missing. */
#pragma once
#include <linux/ioctl.h>
#include <linux/types.h>
