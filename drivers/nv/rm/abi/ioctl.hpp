// The escape ioctls of /dev/nvidiactl and /dev/nvidia<N>: how a request number is formed and the parameter blocks
// of the escapes that are not RM API calls (card info, version check, fd registration).
// Facts from open-gpu-kernel-modules: kernel-open/common/inc/nv-ioctl.h, nv-ioctl-numbers.h, nv.h and
// src/nvidia/arch/nvalloc/unix/include/nv_escape.h. Identical in the 570 and 580 branches for everything here.
#pragma once

#include <cstddef>
#include <cstdint>

namespace hcq::nv::abi {

using Handle = uint32_t;    // NvHandle: an RM object handle
using NvStatus = uint32_t;  // NV_STATUS: status.hpp names them

// ---- request numbers: Linux _IOWR('F', escape, sizeof(params)). The kernel takes the escape from the number bits
// and the parameter size from the size bits, so the size must be exactly that of the block passed.
constexpr uint32_t kIoctlType = 'F';
constexpr size_t kMaxIoctlSize = 16384;  // NV_ABSOLUTE_MAX_IOCTL_SIZE: larger requests fail with EINVAL

constexpr unsigned long escape_request(uint32_t escape, size_t size) {
  return (3ul << 30) | ((static_cast<unsigned long>(size) & 0x3fff) << 16) | (kIoctlType << 8) | (escape & 0xff);
}
constexpr uint32_t request_escape(unsigned long request) { return request & 0xff; }
constexpr uint32_t request_type(unsigned long request) { return (request >> 8) & 0xff; }
constexpr size_t request_size(unsigned long request) { return (request >> 16) & 0x3fff; }
constexpr uint32_t request_dir(unsigned long request) { return (request >> 30) & 3; }

// ---- escape numbers
namespace esc {
// RM API escapes (nv_escape.h), issued on /dev/nvidiactl unless noted.
constexpr uint32_t rm_alloc_memory = 0x27;  // NVOS02, wrapped with an fd; issued on /dev/nvidia<N> only
constexpr uint32_t rm_alloc_object = 0x28;
constexpr uint32_t rm_free = 0x29;     // NVOS00
constexpr uint32_t rm_control = 0x2a;  // NVOS54
constexpr uint32_t rm_alloc = 0x2b;    // NVOS21 or NVOS64, told apart by the parameter size
constexpr uint32_t rm_dup_object = 0x34;
constexpr uint32_t rm_vid_heap_control = 0x4a;
constexpr uint32_t rm_map_memory = 0x4e;        // NVOS33, wrapped with the fd that will be mmap'ed
constexpr uint32_t rm_unmap_memory = 0x4f;      // NVOS34
constexpr uint32_t rm_map_memory_dma = 0x57;    // NVOS46 (layout per branch, see branch.hpp)
constexpr uint32_t rm_unmap_memory_dma = 0x58;  // NVOS47
// Linux-specific escapes (nv-ioctl-numbers.h): NV_IOCTL_BASE 200 + n.
constexpr uint32_t card_info = 200;
constexpr uint32_t register_fd = 201;
constexpr uint32_t alloc_os_event = 206;
constexpr uint32_t free_os_event = 207;
constexpr uint32_t status_code = 209;
constexpr uint32_t check_version_str = 210;
constexpr uint32_t ioctl_xfer_cmd = 211;
constexpr uint32_t attach_gpus_to_fd = 212;
constexpr uint32_t query_device_intr = 213;
constexpr uint32_t sys_params = 214;
constexpr uint32_t export_to_dmabuf_fd = 217;
constexpr uint32_t wait_open_complete = 218;
}  // namespace esc

// ---- CARD_INFO: the parameter block is an array of these; the driver fills as many as the size holds, one per
// GPU it probed (valid != 0), in minor-number order.
struct PciInfo {
  uint32_t domain;
  uint8_t bus, slot, function, pad0;
  uint16_t vendor_id, device_id;
};
static_assert(sizeof(PciInfo) == 12);

struct CardInfo {
  uint8_t valid;  // NvBool
  uint8_t pad0[3];
  PciInfo pci;
  uint32_t gpu_id;  // what GPU_GET_ID_INFO_V2 takes
  uint16_t interrupt_line;
  uint8_t pad1[2];
  uint64_t reg_address, reg_size;
  uint64_t fb_address, fb_size;
  uint32_t minor_number;  // /dev/nvidia<minor_number>
  char dev_name[10];
  uint8_t pad2[2];
};
static_assert(sizeof(CardInfo) == 72);
static_assert(offsetof(CardInfo, gpu_id) == 16 && offsetof(CardInfo, reg_address) == 24 &&
              offsetof(CardInfo, fb_size) == 48 && offsetof(CardInfo, minor_number) == 56);
constexpr size_t kCardInfoEntries = 32;  // NV_MAX_DEVICES: one request asks for this many

// ---- REGISTER_FD, issued on a /dev/nvidia<N> descriptor: ties it to the control fd's clients, so RM_MAP_MEMORY
// can name it and mmap on it then maps the object.
struct RegisterFd {
  int32_t ctl_fd;
};
static_assert(sizeof(RegisterFd) == 4);

// ---- CHECK_VERSION_STR: `query` returns the kernel module's version string; `strict` and `relaxed` compare ours
// (whole string / up to the first '.') and fail with EINVAL on a mismatch, the module's string then in `version`.
struct VersionCheck {
  uint32_t cmd;
  uint32_t reply;  // set to 1 (recognized) by every driver that knows the escape
  char version[64];
};
static_assert(sizeof(VersionCheck) == 72);
namespace version_cmd {
constexpr uint32_t strict = 0;
constexpr uint32_t relaxed = '1';
constexpr uint32_t query = '2';
}  // namespace version_cmd
constexpr uint32_t kVersionReplyRecognized = 1;

// ---- STATUS_CODE: the last error of the GPU at a PCI address.
struct StatusCode {
  uint32_t domain;
  uint8_t bus, slot;
  uint8_t pad0[2];
  uint32_t status;
};
static_assert(sizeof(StatusCode) == 12);

// ---- ALLOC_OS_EVENT / FREE_OS_EVENT (same block)
struct OsEvent {
  Handle client, device;
  uint32_t fd;
  uint32_t status;
};
static_assert(sizeof(OsEvent) == 16);

// ---- IOCTL_XFER_CMD: a request whose block exceeds the size bits, passed by pointer.
struct Xfer {
  uint32_t cmd, size;
  uint64_t ptr;
};
static_assert(sizeof(Xfer) == 16);

}  // namespace hcq::nv::abi
