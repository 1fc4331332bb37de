// NV_STATUS codes and their names (open-gpu-kernel-modules src/common/sdk/nvidia/inc/nvstatuscodes.h, 580 branch;
// 570 lacks a few of the newest, which changes nothing for a table of names).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv::abi {

namespace status {
constexpr NvStatus ok = 0x00000000;
constexpr NvStatus err_generic = 0x0000ffff;
constexpr NvStatus err_buffer_too_small = 0x00000002;
constexpr NvStatus err_gpu_uuid_not_found = 0x00000012;
constexpr NvStatus err_illegal_action = 0x00000016;
constexpr NvStatus err_in_use = 0x00000017;
constexpr NvStatus err_insert_duplicate_name = 0x00000019;
constexpr NvStatus err_insufficient_resources = 0x0000001a;
constexpr NvStatus err_insufficient_permissions = 0x0000001b;
constexpr NvStatus err_invalid_address = 0x0000001e;
constexpr NvStatus err_invalid_argument = 0x0000001f;
constexpr NvStatus err_invalid_channel = 0x00000021;
constexpr NvStatus err_invalid_class = 0x00000022;
constexpr NvStatus err_invalid_client = 0x00000023;
constexpr NvStatus err_invalid_command = 0x00000024;
constexpr NvStatus err_invalid_device = 0x00000026;
constexpr NvStatus err_invalid_flags = 0x00000029;
constexpr NvStatus err_invalid_limit = 0x0000002e;
constexpr NvStatus err_invalid_lock_state = 0x0000002f;
constexpr NvStatus err_invalid_object = 0x00000031;
constexpr NvStatus err_invalid_object_handle = 0x00000033;
constexpr NvStatus err_invalid_object_parent = 0x00000036;
constexpr NvStatus err_invalid_offset = 0x00000037;
constexpr NvStatus err_invalid_owner = 0x00000039;
constexpr NvStatus err_invalid_param_struct = 0x0000003a;
constexpr NvStatus err_invalid_state = 0x00000040;
constexpr NvStatus err_invalid_read = 0x00000042;
constexpr NvStatus err_missing_table_entry = 0x0000004a;
constexpr NvStatus err_no_memory = 0x00000051;
constexpr NvStatus err_not_supported = 0x00000056;
constexpr NvStatus err_object_not_found = 0x00000057;
constexpr NvStatus err_object_type_mismatch = 0x00000058;
constexpr NvStatus err_operating_system = 0x00000059;
constexpr NvStatus err_state_in_use = 0x00000063;
constexpr NvStatus err_uvm_address_in_use = 0x00000068;
constexpr NvStatus warn_nothing_to_do = 0x00010006;
}  // namespace status

// "NV_ERR_INVALID_CLASS"; "NV_STATUS 0x1234" for a code we do not know.
std::string status_name(NvStatus s);

}  // namespace hcq::nv::abi
