// The RM API parameter blocks the escapes carry (NVOSxx in NVIDIA's nvos.h, the fd wrappers in
// nv-unix-nvos-params-wrappers.h), as our own definitions. Pointers travel as u64 (NvP64). Every block here has the
// same layout in the 570 and 580 branches; NVOS46 (MAP_MEMORY_DMA) does not and lives in branch.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv::abi {

// NVOS00: RM_FREE. Frees `object` (and everything under it).
struct RmFreeParams {
  Handle client, parent, object;
  NvStatus status;
};
static_assert(sizeof(RmFreeParams) == 16);

// NVOS21: RM_ALLOC. `object` 0 lets RM pick the handle; `params` points at the class's allocation parameters.
struct RmAllocParams {
  Handle client, parent, object;
  uint32_t class_id;
  uint64_t params;
  uint32_t params_size;
  NvStatus status;
};
static_assert(sizeof(RmAllocParams) == 32 && offsetof(RmAllocParams, params) == 16 &&
              offsetof(RmAllocParams, status) == 28);

// NVOS64: RM_ALLOC with requested access rights and serialization flags. RM tells it from NVOS21 by the size.
struct RmAllocWithRightsParams {
  Handle client, parent, object;
  uint32_t class_id;
  uint64_t params;
  uint64_t rights_requested;
  uint32_t params_size;
  uint32_t flags;
  NvStatus status;
  uint32_t pad0;
};
static_assert(sizeof(RmAllocWithRightsParams) == 48 && offsetof(RmAllocWithRightsParams, status) == 40);

// NVOS54: RM_CONTROL. `cmd` is (class << 16 | category << 8 | index); `params` its parameter block.
struct RmControlParams {
  Handle client, object;
  uint32_t cmd;
  uint32_t flags;
  uint64_t params;
  uint32_t params_size;
  NvStatus status;
};
static_assert(sizeof(RmControlParams) == 32 && offsetof(RmControlParams, params) == 16 &&
              offsetof(RmControlParams, status) == 28);

// NVOS02: RM_ALLOC_MEMORY, used for NV01_MEMORY_SYSTEM_OS_DESCRIPTOR (host pages we own, described by address).
struct RmAllocMemoryParams {
  Handle client, parent, object;
  uint32_t class_id;
  uint32_t flags;  // nvos02_flags
  uint32_t pad0;
  uint64_t memory;  // host address
  uint64_t limit;   // size - 1
  NvStatus status;
  uint32_t pad1;
};
static_assert(sizeof(RmAllocMemoryParams) == 48 && offsetof(RmAllocMemoryParams, memory) == 24 &&
              offsetof(RmAllocMemoryParams, status) == 40);
// What the escape takes: the block plus an fd (-1: none).
struct RmAllocMemoryWithFd {
  RmAllocMemoryParams params;
  int32_t fd;
  uint32_t pad0;
};
static_assert(sizeof(RmAllocMemoryWithFd) == 56);

namespace nvos02_flags {
constexpr uint32_t physicality_shift = 4;  // 7:4
constexpr uint32_t physicality_contiguous = 0, physicality_noncontiguous = 1;
constexpr uint32_t coherency_shift = 12;  // 15:12
constexpr uint32_t coherency_uncached = 0, coherency_cached = 1;
constexpr uint32_t mapping_shift = 30;  // 31:30
constexpr uint32_t mapping_default = 0, mapping_no_map = 1;
}  // namespace nvos02_flags

// NVOS33: RM_MAP_MEMORY. Prepares a CPU mapping of a memory object; the caller then mmaps `fd` (a /dev/nvidia<N>
// descriptor registered with REGISTER_FD, or nvidiactl for system memory) at offset 0 for `length` bytes.
struct RmMapMemoryParams {
  Handle client, device, memory;
  uint32_t pad0;
  uint64_t offset, length;
  uint64_t linear_address;  // out: a cookie, not an address the caller may use
  NvStatus status;
  uint32_t flags;  // nvos33_flags
};
static_assert(sizeof(RmMapMemoryParams) == 48 && offsetof(RmMapMemoryParams, linear_address) == 32 &&
              offsetof(RmMapMemoryParams, status) == 40);
struct RmMapMemoryWithFd {
  RmMapMemoryParams params;
  int32_t fd;
  uint32_t pad0;
};
static_assert(sizeof(RmMapMemoryWithFd) == 56);

namespace nvos33_flags {
constexpr uint32_t access_shift = 0;    // 1:0, 0 = read/write
constexpr uint32_t mapping_shift = 15;  // 16:15
constexpr uint32_t mapping_direct = 1;
constexpr uint32_t caching_type_shift = 23;  // 25:23
constexpr uint32_t caching_cached = 0, caching_uncached = 1, caching_writecombined = 2;
}  // namespace nvos33_flags

// NVOS34: RM_UNMAP_MEMORY (after munmap of the range).
struct RmUnmapMemoryParams {
  Handle client, device, memory;
  uint32_t pad0;
  uint64_t linear_address;
  NvStatus status;
  uint32_t flags;
};
static_assert(sizeof(RmUnmapMemoryParams) == 32 && offsetof(RmUnmapMemoryParams, status) == 24);

// NVOS47: RM_UNMAP_MEMORY_DMA.
struct RmUnmapMemoryDmaParams {
  Handle client, device, dma, memory;
  uint32_t flags;
  uint32_t pad0;
  uint64_t dma_offset;
  uint64_t size;
  NvStatus status;
  uint32_t pad1;
};
static_assert(sizeof(RmUnmapMemoryDmaParams) == 48 && offsetof(RmUnmapMemoryDmaParams, dma_offset) == 24);

namespace nvos46_flags {
constexpr uint32_t cache_snoop_shift = 4;  // 4:4
constexpr uint32_t cache_snoop_enable = 1;
constexpr uint32_t page_size_shift = 8;  // 11:8
constexpr uint32_t page_size_4kb = 1;
constexpr uint32_t dma_offset_fixed_shift = 15;  // 15:15: map at the given dma_offset
}  // namespace nvos46_flags

}  // namespace hcq::nv::abi
