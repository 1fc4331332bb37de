// /dev/nvidia-uvm ioctls: the request number is the command itself (not an _IOWR encoding), the block's size is
// implied by the command, and every block ends in an NV_STATUS the driver writes (the ioctl itself returns 0).
// Facts from open-gpu-kernel-modules kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_linux_ioctl.h, uvm_types.h. The blocks
// used here are identical in the 570 and 580 branches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv::abi {

namespace uvm {
constexpr unsigned long initialize = 0x30000001;  // must be the first call on a UVM fd
constexpr unsigned long deinitialize = 0x30000002;
constexpr unsigned long register_gpu_vaspace = 25;
constexpr unsigned long unregister_gpu_vaspace = 26;
constexpr unsigned long register_channel = 27;
constexpr unsigned long unregister_channel = 28;
constexpr unsigned long enable_peer_access = 29;
constexpr unsigned long unmap_external = 66;
constexpr unsigned long map_external_allocation = 33;
constexpr unsigned long free = 34;
constexpr unsigned long register_gpu = 37;
constexpr unsigned long unregister_gpu = 38;
constexpr unsigned long create_external_range = 73;
constexpr unsigned long mm_initialize = 75;  // on a second UVM fd, naming the first
}  // namespace uvm

struct Uuid {
  uint8_t bytes[16];
};
static_assert(sizeof(Uuid) == 16);

struct UvmInitializeParams {
  uint64_t flags;
  NvStatus status;
  uint32_t pad0;
};
static_assert(sizeof(UvmInitializeParams) == 16);

struct UvmMmInitializeParams {
  int32_t uvm_fd;
  NvStatus status;
};
static_assert(sizeof(UvmMmInitializeParams) == 8);

struct UvmRegisterGpuParams {
  Uuid gpu;              // in/out
  uint8_t numa_enabled;  // out
  uint8_t pad0[3];
  int32_t numa_node_id;  // out
  int32_t rm_ctrl_fd;    // -1: UVM opens its own RM client
  Handle client;
  Handle smc_part_ref;
  NvStatus status;
};
static_assert(sizeof(UvmRegisterGpuParams) == 40 && offsetof(UvmRegisterGpuParams, status) == 36);

struct UvmUnregisterGpuParams {
  Uuid gpu;
  NvStatus status;
};
static_assert(sizeof(UvmUnregisterGpuParams) == 20);

struct UvmRegisterGpuVaspaceParams {
  Uuid gpu;
  int32_t rm_ctrl_fd;
  Handle client;
  Handle vaspace;
  NvStatus status;
};
static_assert(sizeof(UvmRegisterGpuVaspaceParams) == 32);

struct UvmUnregisterGpuVaspaceParams {
  Uuid gpu;
  NvStatus status;
};
static_assert(sizeof(UvmUnregisterGpuVaspaceParams) == 20);

// A channel's instance blocks and context buffers are mapped by UVM into [base, base + length) of our VA.
struct UvmRegisterChannelParams {
  Uuid gpu;
  int32_t rm_ctrl_fd;
  Handle client;
  Handle channel;
  uint32_t pad0;
  uint64_t base;
  uint64_t length;
  NvStatus status;
  uint32_t pad1;
};
static_assert(sizeof(UvmRegisterChannelParams) == 56 && offsetof(UvmRegisterChannelParams, base) == 32);

struct UvmUnregisterChannelParams {
  Uuid gpu;
  Handle client;
  Handle channel;
  NvStatus status;
};
static_assert(sizeof(UvmUnregisterChannelParams) == 28);

// Reserves [base, base + length) of the process VA for external allocations (UVM_FREE gives it back).
struct UvmCreateExternalRangeParams {
  uint64_t base;
  uint64_t length;
  NvStatus status;
  uint32_t pad0;
};
static_assert(sizeof(UvmCreateExternalRangeParams) == 24);

// UvmGpuMappingAttributes
struct UvmGpuMappingAttributes {
  Uuid gpu;
  uint32_t mapping_type;  // 1: read/write/atomic
  uint32_t caching_type;  // 0: default
  uint32_t format_type;
  uint32_t element_bits;
  uint32_t compression_type;
};
static_assert(sizeof(UvmGpuMappingAttributes) == 36);
constexpr uint32_t kUvmMappingReadWriteAtomic = 1;
constexpr uint32_t kUvmMaxGpus = 256;  // NV_MAX_DEVICES * UVM_PARENT_ID_MAX_SUB_PROCESSORS

// Maps RM memory `memory` (of client `client` on the RM fd `rm_ctrl_fd`) at [base, base + length), inside an
// external range, on the GPUs listed.
struct UvmMapExternalAllocationParams {
  uint64_t base;
  uint64_t length;
  uint64_t offset;
  UvmGpuMappingAttributes per_gpu[kUvmMaxGpus];
  uint64_t gpu_count;
  int32_t rm_ctrl_fd;
  Handle client;
  Handle memory;
  NvStatus status;
};
static_assert(offsetof(UvmMapExternalAllocationParams, gpu_count) == 9240 &&
              sizeof(UvmMapExternalAllocationParams) == 9264);

// Unmaps [base, base + length) from one GPU; the external range stays.
struct UvmUnmapExternalParams {
  uint64_t base;
  uint64_t length;
  Uuid gpu;
  NvStatus status;
  uint32_t pad0;
};
static_assert(sizeof(UvmUnmapExternalParams) == 40);

struct UvmFreeParams {
  uint64_t base;
  uint64_t length;
  NvStatus status;
  uint32_t pad0;
};
static_assert(sizeof(UvmFreeParams) == 24);

}  // namespace hcq::nv::abi
