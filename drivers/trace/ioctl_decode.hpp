// The one decoding table for GPU driver ioctls: KFD (AMDKFD_IOC_*, <linux/kfd_ioctl.h>), NVIDIA RM escapes (NV_ESC_*
// with their NVOS parameter blocks, drivers/nv/rm/abi) and UVM (UVM_*). The TracingOs decorator and the preload shim
// libhcq-trace.so both print calls through it, so a log from the simulator and one from a real process read alike.
//
// Decoding reads the parameter block the caller passed. The kernel reads the same bytes, so they are valid whenever
// the call did not fail with EFAULT; the caller says whether they may be read, and nothing beyond the size the
// request names (or the block's own size, for UVM) is ever touched.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace hcq::trace {

enum class Family { unknown, kfd, rm, uvm };

// What a device path tells: /dev/kfd -> kfd; /dev/nvidiactl, /dev/nvidia<N> -> rm; /dev/nvidia-uvm -> uvm.
Family family_of_path(std::string_view path);
std::string_view family_name(Family f);  // "KFD", "RM", "UVM", ""

struct DecodedIoctl {
  Family family = Family::unknown;
  std::string name;            // "AMDKFD_IOC_CREATE_QUEUE", "NV_ESC_RM_ALLOC", "UVM_REGISTER_GPU"; empty: unknown
  std::string args;            // "{queue_type=COMPUTE_AQL, ring_size=0x1000, queue_id=2}"; empty when not decoded
  std::string driver_version;  // set when this call tells the driver's version ("KFD 1.11", "NVIDIA 580.65.06")
};

// Decodes a call after it ran. `path_family` is the family of the descriptor's path (unknown when the path is not a
// GPU node: then KFD and RM requests are still recognised by their ioctl type, UVM only by UVM_INITIALIZE's number).
// `arg_readable`: the block may be read (the call did not fail with EFAULT and arg is not null).
DecodedIoctl decode_ioctl(Family path_family, unsigned long request, const void* arg, bool arg_readable);

// Names for RM objects and commands: "NV01_DEVICE_0", "AMPERE_CHANNEL_GPFIFO_A"; "NV2080_CTRL_CMD_GR_GET_INFO".
// Unknown ones come back empty.
std::string_view rm_class_name(uint32_t class_id);
std::string_view rm_ctrl_name(uint32_t cmd);

}  // namespace hcq::trace
