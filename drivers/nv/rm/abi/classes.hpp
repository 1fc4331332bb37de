// RM object classes the backend allocates that are not in drivers/nv/facts/arch.hpp (which holds the per-architecture
// ones: GPFIFO, compute, copy, usermode, channel group, context share, VA space), and the allocation parameter blocks
// of all of them.
// Facts from open-gpu-kernel-modules src/common/sdk/nvidia/inc/class/cl*.h, alloc/alloc_channel.h, nvos.h,
// nvlimits.h. All identical in the 570 and 580 branches.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv::abi {

namespace cls {
constexpr uint32_t root_client = 0x41;                  // NV01_ROOT_CLIENT
constexpr uint32_t memory_system = 0x3e;                // NV01_MEMORY_SYSTEM (NV1_MEMORY_SYSTEM)
constexpr uint32_t memory_local_user = 0x40;            // NV01_MEMORY_LOCAL_USER (NV1_MEMORY_USER): VRAM
constexpr uint32_t memory_virtual = 0x70;               // NV01_MEMORY_VIRTUAL
constexpr uint32_t memory_system_os_descriptor = 0x71;  // NV01_MEMORY_SYSTEM_OS_DESCRIPTOR: host pages we own
constexpr uint32_t device = 0x80;                       // NV01_DEVICE_0
constexpr uint32_t subdevice = 0x2080;                  // NV20_SUBDEVICE_0
constexpr uint32_t gt200_debugger = 0x83de;
// Channel group, context share, VA space and the usermode (doorbell) classes: per architecture, in
// drivers/nv/facts/arch.hpp (NvClasses), with the GPFIFO, compute and copy classes.
}  // namespace cls

// USERD, the channel's control block (clc56f.h Nvc56fControl; the same for later GPFIFO classes): 0x200 bytes, at a
// 512-byte aligned offset of the memory the channel names. GPGet/GPPut and the usermode doorbell offsets are in
// drivers/nv/facts/gpfifo.hpp.
constexpr uint32_t kUserdSize = 0x200;

constexpr uint32_t kMaxSubdevices = 8;  // NV_MAX_SUBDEVICES

// NV0080_ALLOC_PARAMETERS (NV01_DEVICE_0)
struct DeviceAllocParams {
  uint32_t device_id;  // deviceInstance from GPU_GET_ID_INFO_V2
  Handle client_share;
  Handle target_client, target_device;
  uint32_t flags;
  uint32_t pad0;
  uint64_t va_space_size;
  uint64_t va_start_internal, va_limit_internal;
  uint32_t va_mode;  // 0: optional multiple VA spaces (the one that lets us allocate FERMI_VASPACE_A)
  uint32_t pad1;
};
static_assert(sizeof(DeviceAllocParams) == 56 && offsetof(DeviceAllocParams, va_mode) == 48);

// NV2080_ALLOC_PARAMETERS (NV20_SUBDEVICE_0)
struct SubdeviceAllocParams {
  uint32_t subdevice_id;
};
static_assert(sizeof(SubdeviceAllocParams) == 4);

// NV_MEMORY_VIRTUAL_ALLOCATION_PARAMS (NV01_MEMORY_VIRTUAL)
struct MemoryVirtualAllocParams {
  uint64_t offset;
  uint64_t limit;
  Handle vaspace;  // 0: the device's default VA space
  uint32_t pad0;
};
static_assert(sizeof(MemoryVirtualAllocParams) == 24);

// NV_VASPACE_ALLOCATION_PARAMETERS (FERMI_VASPACE_A)
struct VaspaceAllocParams {
  uint32_t index;
  uint32_t flags;  // vaspace_flags
  uint64_t va_size;
  uint64_t va_start_internal, va_limit_internal;
  uint32_t big_page_size;
  uint32_t pad0;
  uint64_t va_base;
  uint32_t pasid;
  uint32_t pad1;
};
static_assert(sizeof(VaspaceAllocParams) == 56 && offsetof(VaspaceAllocParams, va_base) == 40);
namespace vaspace_flags {
constexpr uint32_t is_externally_owned = 1u << 3;  // UVM owns the page tables' contents
constexpr uint32_t enable_page_faulting = 1u << 6;
}  // namespace vaspace_flags

// NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS (KEPLER_CHANNEL_GROUP_A)
struct ChannelGroupAllocParams {
  Handle error_notifier, ecc_error_notifier;
  Handle vaspace;
  uint32_t engine_type;  // engine_type::graphics for a group holding compute and copy channels
  uint8_t is_calling_context_vgpu_plugin;
  uint8_t pad0[3];
};
static_assert(sizeof(ChannelGroupAllocParams) == 20);

namespace engine_type {  // NV2080_ENGINE_TYPE_*
constexpr uint32_t graphics = 1;
constexpr uint32_t copy0 = 9;
}  // namespace engine_type

// NV_CTXSHARE_ALLOCATION_PARAMETERS (FERMI_CONTEXT_SHARE_A): the subcontext binding channels to a VA space.
struct ContextShareAllocParams {
  Handle vaspace;
  uint32_t flags;  // 1: SUBCONTEXT_ASYNC
  uint32_t subctx_id;
};
static_assert(sizeof(ContextShareAllocParams) == 12);
constexpr uint32_t kContextShareAsync = 1;

// NV_MEMORY_DESC_PARAMS, inside the channel parameters (reserved for kernel callers; we leave them zero).
struct MemoryDescParams {
  uint64_t base, size;
  uint32_t address_space, cache_attrib;
};
static_assert(sizeof(MemoryDescParams) == 24);

// NV_CHANNEL_ALLOC_PARAMS (NV_CHANNELGPFIFO_ALLOCATION_PARAMETERS), for every *_CHANNEL_GPFIFO_* class. The layout
// is the same in 570 and 580 (tpc_config_id was added in 570; 560 and older stop before it, 360 bytes).
struct ChannelAllocParams {
  Handle error_notifier;   // memory RM writes channel errors to
  Handle buffer;           // the memory holding the ring
  uint64_t gpfifo_offset;  // GPU VA of the ring
  uint32_t gpfifo_entries;
  uint32_t flags;
  Handle context_share;
  Handle vaspace;
  Handle userd_memory[kMaxSubdevices];
  uint64_t userd_offset[kMaxSubdevices];
  uint32_t engine_type;
  uint32_t cid;
  uint32_t subdevice_id;
  Handle ecc_error_notifier;
  MemoryDescParams instance_mem, userd_mem, ramfc_mem, mthdbuf_mem;
  Handle phys_channel_group;
  uint32_t internal_flags;
  MemoryDescParams error_notifier_mem, ecc_error_notifier_mem;
  uint32_t process_id, sub_process_id;
  uint32_t encrypt_iv[3], decrypt_iv[3];
  uint32_t hmac_nonce[8];
  uint32_t tpc_config_id;
  uint32_t pad0;
};
static_assert(sizeof(ChannelAllocParams) == 368);
static_assert(offsetof(ChannelAllocParams, userd_memory) == 32 && offsetof(ChannelAllocParams, userd_offset) == 64 &&
              offsetof(ChannelAllocParams, engine_type) == 128 && offsetof(ChannelAllocParams, instance_mem) == 144 &&
              offsetof(ChannelAllocParams, phys_channel_group) == 240 &&
              offsetof(ChannelAllocParams, process_id) == 296 && offsetof(ChannelAllocParams, tpc_config_id) == 360);

// NV_MEMORY_ALLOCATION_PARAMS (NV01_MEMORY_LOCAL_USER, NV01_MEMORY_SYSTEM)
struct MemoryAllocParams {
  uint32_t owner;  // the client handle
  uint32_t type;   // nvos32::type_*
  uint32_t flags;  // nvos32::alloc_*
  uint32_t width, height;
  int32_t pitch;
  uint32_t attr, attr2;  // nvos32::attr_*, attr2_*
  uint32_t format;
  uint32_t compr_covg, zcull_covg;
  uint32_t pad0;
  uint64_t range_lo, range_hi;
  uint64_t size;
  uint64_t alignment;
  uint64_t offset;
  uint64_t limit;
  uint64_t address;
  uint32_t ctag_offset;
  Handle vaspace;
  uint32_t internal_flags;
  uint32_t tag;
  int32_t numa_node;
  uint32_t pad1;
};
static_assert(sizeof(MemoryAllocParams) == 128 && offsetof(MemoryAllocParams, range_lo) == 48 &&
              offsetof(MemoryAllocParams, size) == 64 && offsetof(MemoryAllocParams, address) == 96 &&
              offsetof(MemoryAllocParams, numa_node) == 120);

namespace nvos32 {
constexpr uint32_t type_image = 0, type_notifier = 13;
constexpr uint32_t alloc_ignore_bank_placement = 0x1;
constexpr uint32_t alloc_alignment_force = 0x100;
constexpr uint32_t alloc_memory_handle_provided = 0x4000;
constexpr uint32_t alloc_map_not_required = 0x8000;
constexpr uint32_t alloc_persistent_vidmem = 0x10000;
// attr
constexpr uint32_t attr_page_size_shift = 23;  // 24:23
constexpr uint32_t page_size_default = 0, page_size_4kb = 1, page_size_big = 2, page_size_huge = 3;
constexpr uint32_t attr_location_shift = 25;  // 26:25
constexpr uint32_t location_vidmem = 0, location_pci = 1;
constexpr uint32_t attr_physicality_shift = 27;  // 28:27
constexpr uint32_t physicality_noncontiguous = 1, physicality_contiguous = 2, physicality_allow_noncontiguous = 3;
constexpr uint32_t attr_coherency_shift = 29;  // 31:29
constexpr uint32_t coherency_uncached = 0, coherency_cached = 1, coherency_write_combine = 2;
// attr2
constexpr uint32_t attr2_zbc_prefer_no_zbc = 1;    // 1:0
constexpr uint32_t attr2_gpu_cacheable_shift = 2;  // 3:2
constexpr uint32_t gpu_cacheable_yes = 1, gpu_cacheable_no = 2;
constexpr uint32_t attr2_page_size_huge_shift = 20;  // 21:20
constexpr uint32_t page_size_huge_2mb = 1;
}  // namespace nvos32

}  // namespace hcq::nv::abi
