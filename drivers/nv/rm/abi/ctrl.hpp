// RM_CONTROL commands bring-up and channels use, and their parameter blocks. A command number is
// (class << 16) | (interface << 8) | message; the object it is sent to must be of that class (or a subclass).
// Facts from open-gpu-kernel-modules src/common/sdk/nvidia/inc/ctrl/**. Identical in the 570 and 580 branches but
// for the three blocks branch.hpp sizes per branch (FB info V2, class list V2, GPFIFO schedule): those are written
// here in their 580 form, the largest.
#pragma once

#include <cstddef>
#include <cstdint>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv::abi {

namespace ctrl {
// On the root client (class 0x0000)
constexpr uint32_t system_get_build_version_v2 = 0x13e;
constexpr uint32_t gpu_get_id_info_v2 = 0x205;
// On the device (0x0080)
constexpr uint32_t gpu_get_classlist = 0x800201;
constexpr uint32_t gpu_get_classlist_v2 = 0x800292;
// On the subdevice (0x2080)
constexpr uint32_t gpu_get_name_string = 0x20800110;
constexpr uint32_t gpu_get_gid_info = 0x2080014a;
constexpr uint32_t gr_get_info = 0x20801201;
constexpr uint32_t fb_get_info_v2 = 0x20801303;
constexpr uint32_t mc_get_arch_info = 0x20801701;
// On a channel group (0xa06c)
constexpr uint32_t channel_group_gpfifo_schedule = 0xa06c0101;
// On a GPFIFO channel (any class from VOLTA_CHANNEL_GPFIFO_A 0xc36f on)
constexpr uint32_t gpfifo_get_work_submit_token = 0xc36f0108;

// The class a command belongs to (its top 16 bits).
constexpr uint32_t command_class(uint32_t cmd) { return cmd >> 16; }
}  // namespace ctrl

// NV0000_CTRL_SYSTEM_GET_BUILD_VERSION_V2_PARAMS
struct BuildVersionParams {
  char driver_version[256];  // "580.126.20"
  char version[256];
  char driver_branch[256];
  char title[256];
  uint32_t changelist, official_changelist;
};
static_assert(sizeof(BuildVersionParams) == 1032);

// NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS: gpu_id (from CARD_INFO) in, the instance numbers out.
struct GpuIdInfoParams {
  uint32_t gpu_id;
  uint32_t gpu_flags;
  uint32_t device_instance;  // what NV01_DEVICE_0 takes as device_id
  uint32_t subdevice_instance;
  uint32_t sli_status;
  uint32_t board_id;
  uint32_t gpu_instance;
  int32_t numa_id;
};
static_assert(sizeof(GpuIdInfoParams) == 32);

// NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS: call with class_list 0 to learn num_classes, then with a buffer that big.
struct ClassListParams {
  uint32_t num_classes;
  uint32_t pad0;
  uint64_t class_list;  // pointer to num_classes u32
};
static_assert(sizeof(ClassListParams) == 16);

// NV0080_CTRL_GPU_GET_CLASSLIST_V2_PARAMS (580's 200 classes; 570 has 100: BranchAbi::controls)
constexpr uint32_t kClassListV2Max = 200;
struct ClassListV2Params {
  uint32_t num_classes;
  uint32_t classes[kClassListV2Max];
};
static_assert(sizeof(ClassListV2Params) == 804);

// NV2080_CTRL_GPU_GET_NAME_STRING_PARAMS
struct GpuNameParams {
  uint32_t flags;     // 0: ASCII
  uint8_t name[128];  // ASCII in the first 64 bytes (a union with 64 UTF-16 units)
};
static_assert(sizeof(GpuNameParams) == 132);

// NV2080_CTRL_GPU_GET_GID_INFO_PARAMS: with flags = binary and length 16, data holds the GPU UUID UVM takes.
struct GidInfoParams {
  uint32_t index;
  uint32_t flags;
  uint32_t length;
  uint8_t data[256];
};
static_assert(sizeof(GidInfoParams) == 268);
constexpr uint32_t kGidFormatBinary = 2;  // flags
constexpr uint32_t kUuidBytes = 16;

// NV2080_CTRL_GR_GET_INFO_PARAMS: an array of (index, data) pairs passed by pointer.
struct InfoPair {
  uint32_t index;
  uint32_t data;
};
static_assert(sizeof(InfoPair) == 8);
struct GrRouteInfo {
  uint32_t flags;
  uint32_t pad0;
  uint64_t route;
};
struct GrInfoParams {
  uint32_t list_size;
  uint32_t pad0;
  uint64_t list;  // pointer to list_size InfoPair
  GrRouteInfo route;
};
static_assert(sizeof(GrInfoParams) == 32);
namespace gr_info {
constexpr uint32_t sm_version = 0x0c;  // major << 8 | minor: 0x0800 sm_80, 0x0806 sm_86, 0x0900 sm_90, 0x0a00 sm_100
constexpr uint32_t max_warps_per_sm = 0x0d;
// The enabled TPCs (RM's own UVM path reads it so: nv_gpu_ops.c tpcCount); times SMs per TPC, the SM count.
constexpr uint32_t shader_pipe_sub_count = 0x09;
constexpr uint32_t litter_num_gpcs = 0x14;
constexpr uint32_t litter_num_tpc_per_gpc = 0x17;
constexpr uint32_t litter_num_sm_per_tpc = 0x20;
constexpr uint32_t max_list_size = 0x3a;  // NV2080_CTRL_GR_INFO_MAX_SIZE: longer lists are refused
}  // namespace gr_info

// NV2080_CTRL_FB_GET_INFO_V2_PARAMS: the pairs inline (580's 128; 570 has 57: BranchAbi::controls).
constexpr uint32_t kFbInfoMaxList = 128;
struct FbInfoV2Params {
  uint32_t list_size;
  InfoPair list[kFbInfoMaxList];
};
static_assert(sizeof(FbInfoV2Params) == 1028);
namespace fb_info {
constexpr uint32_t ram_size = 0x07;         // in KiB
constexpr uint32_t total_ram_size = 0x08;   // in KiB
constexpr uint32_t heap_size = 0x09;        // in KiB
constexpr uint32_t usable_ram_size = 0x20;  // in KiB
}  // namespace fb_info

// NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS
struct ArchInfoParams {
  uint32_t architecture;  // arch_info::*
  uint32_t implementation;
  uint32_t revision;
  uint8_t sub_revision;
  uint8_t pad0[3];
};
static_assert(sizeof(ArchInfoParams) == 16);
namespace arch_info {
constexpr uint32_t ga100 = 0x170;  // Ampere
constexpr uint32_t gh100 = 0x180;  // Hopper
constexpr uint32_t ad100 = 0x190;  // Ada
constexpr uint32_t gb100 = 0x1a0;  // Blackwell (datacenter)
constexpr uint32_t gb200 = 0x1b0;  // Blackwell (GB20x)
// NV2080_CTRL_MC_ARCH_INFO_IMPLEMENTATION_*: the chip within an architecture.
constexpr uint32_t impl_ga100 = 0x0, impl_ga102 = 0x2, impl_gh100 = 0x0, impl_gb100 = 0x0;
}  // namespace arch_info

// NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS (= NVA06F's); skip_enable is 580's (570 sends the first two bytes).
struct GpfifoScheduleParams {
  uint8_t enable;
  uint8_t skip_submit;
  uint8_t skip_enable;
};
static_assert(sizeof(GpfifoScheduleParams) == 3);

// NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS: the value written to the usermode doorbell.
struct WorkSubmitTokenParams {
  uint32_t token;
};
static_assert(sizeof(WorkSubmitTokenParams) == 4);

}  // namespace hcq::nv::abi
