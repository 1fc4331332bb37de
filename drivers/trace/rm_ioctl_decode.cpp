// RM escapes (/dev/nvidiactl, /dev/nvidiaN): escape numbers, classes and control commands to names (from
// drivers/nv/rm/abi and the class table of drivers/nv/facts), and the argument blocks of the escapes hcq issues.
#include <cstdio>
#include <span>
#include <string>
#include <string_view>

#include "nv/facts/methods.hpp"
#include "nv/rm/abi/branch.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/ioctl.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "trace/ioctl_args.hpp"

namespace hcq::trace {
namespace detail {
namespace {

struct Named {
  uint32_t id;
  std::string_view name;
};

// Escapes: nv_escape.h and nv-ioctl-numbers.h spell them NV_ESC_*.
const Named kEscapes[] = {
    {abi::esc::rm_alloc_memory, "NV_ESC_RM_ALLOC_MEMORY"},
    {abi::esc::rm_alloc_object, "NV_ESC_RM_ALLOC_OBJECT"},
    {abi::esc::rm_free, "NV_ESC_RM_FREE"},
    {abi::esc::rm_control, "NV_ESC_RM_CONTROL"},
    {abi::esc::rm_alloc, "NV_ESC_RM_ALLOC"},
    {abi::esc::rm_dup_object, "NV_ESC_RM_DUP_OBJECT"},
    {abi::esc::rm_vid_heap_control, "NV_ESC_RM_VID_HEAP_CONTROL"},
    {abi::esc::rm_map_memory, "NV_ESC_RM_MAP_MEMORY"},
    {abi::esc::rm_unmap_memory, "NV_ESC_RM_UNMAP_MEMORY"},
    {abi::esc::rm_map_memory_dma, "NV_ESC_RM_MAP_MEMORY_DMA"},
    {abi::esc::rm_unmap_memory_dma, "NV_ESC_RM_UNMAP_MEMORY_DMA"},
    {abi::esc::card_info, "NV_ESC_CARD_INFO"},
    {abi::esc::register_fd, "NV_ESC_REGISTER_FD"},
    {abi::esc::alloc_os_event, "NV_ESC_ALLOC_OS_EVENT"},
    {abi::esc::free_os_event, "NV_ESC_FREE_OS_EVENT"},
    {abi::esc::status_code, "NV_ESC_STATUS_CODE"},
    {abi::esc::check_version_str, "NV_ESC_CHECK_VERSION_STR"},
    {abi::esc::ioctl_xfer_cmd, "NV_ESC_IOCTL_XFER_CMD"},
    {abi::esc::attach_gpus_to_fd, "NV_ESC_ATTACH_GPUS_TO_FD"},
    {abi::esc::query_device_intr, "NV_ESC_QUERY_DEVICE_INTR"},
    {abi::esc::sys_params, "NV_ESC_SYS_PARAMS"},
    {abi::esc::export_to_dmabuf_fd, "NV_ESC_EXPORT_TO_DMABUF_FD"},
    {abi::esc::wait_open_complete, "NV_ESC_WAIT_OPEN_COMPLETE"},
};

// Classes hcq allocates that abi/classes.hpp names, by id.
const Named kClasses[] = {
    {abi::cls::root_client, "NV01_ROOT_CLIENT"},
    {abi::cls::memory_system, "NV01_MEMORY_SYSTEM"},
    {abi::cls::memory_local_user, "NV01_MEMORY_LOCAL_USER"},
    {abi::cls::memory_virtual, "NV01_MEMORY_VIRTUAL"},
    {abi::cls::memory_system_os_descriptor, "NV01_MEMORY_SYSTEM_OS_DESCRIPTOR"},
    {abi::cls::device, "NV01_DEVICE_0"},
    {abi::cls::subdevice, "NV20_SUBDEVICE_0"},
    {abi::cls::gt200_debugger, "GT200_DEBUGGER"},
    // Per-architecture classes without methods (drivers/nv/facts/arch.cpp holds their ids), named as their class
    // headers (clc461.h, ...) do. The channel, compute and copy classes are named by the class table.
    {0xc461, "TURING_USERMODE_A"},
    {0xc561, "AMPERE_USERMODE_A"},
    {0xc661, "HOPPER_USERMODE_A"},
    {0xc761, "BLACKWELL_USERMODE_A"},
    {0xa06c, "KEPLER_CHANNEL_GROUP_A"},
    {0x9067, "FERMI_CONTEXT_SHARE_A"},
    {0x90f1, "FERMI_VASPACE_A"},
};
// RM control commands: ctrl0000*.h .. ctrlc36f*.h spell them NV<class>_CTRL_CMD_*.
const Named kCtrls[] = {
    {abi::ctrl::system_get_build_version_v2, "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION_V2"},
    {abi::ctrl::gpu_get_id_info_v2, "NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2"},
    {abi::ctrl::gpu_get_classlist, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST"},
    {abi::ctrl::gpu_get_classlist_v2, "NV0080_CTRL_CMD_GPU_GET_CLASSLIST_V2"},
    {abi::ctrl::gpu_get_name_string, "NV2080_CTRL_CMD_GPU_GET_NAME_STRING"},
    {abi::ctrl::gpu_get_gid_info, "NV2080_CTRL_CMD_GPU_GET_GID_INFO"},
    {abi::ctrl::gr_get_info, "NV2080_CTRL_CMD_GR_GET_INFO"},
    {abi::ctrl::fb_get_info_v2, "NV2080_CTRL_CMD_FB_GET_INFO_V2"},
    {abi::ctrl::mc_get_arch_info, "NV2080_CTRL_CMD_MC_GET_ARCH_INFO"},
    {abi::ctrl::channel_group_gpfifo_schedule, "NVA06C_CTRL_CMD_GPFIFO_SCHEDULE"},
    {abi::ctrl::gpfifo_get_work_submit_token, "NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN"},
};

std::string_view lookup(std::span<const Named> table, uint32_t id) {
  for (const Named& n : table)
    if (n.id == id) return n.name;
  return "";
}

void rm_alloc(const void* p, size_t size, Args& a) {
  // NVOS21 and NVOS64 share their first 24 bytes; RM tells them apart by the block's size.
  const auto v = load<abi::RmAllocParams>(p);
  a.num("hRoot", v.client).num("hObjectParent", v.parent).num("hObjectNew", v.object);
  a.named("hClass", v.class_id, rm_class_name(v.class_id)).num("pAllocParms", v.params);
  if (size == sizeof(abi::RmAllocWithRightsParams)) {
    const auto w = load<abi::RmAllocWithRightsParams>(p);
    a.num("paramsSize", w.params_size).num("flags", w.flags).status(w.status);
  } else {
    a.num("paramsSize", v.params_size).status(v.status);
  }
}

void rm_escape_args(uint32_t escape, const void* p, size_t size, Args& a, DecodedIoctl& d) {
  namespace esc = abi::esc;
  if (escape == esc::rm_alloc && (size == sizeof(abi::RmAllocParams) || size == sizeof(abi::RmAllocWithRightsParams))) {
    rm_alloc(p, size, a);
  } else if (escape == esc::rm_free && size == sizeof(abi::RmFreeParams)) {
    const auto v = load<abi::RmFreeParams>(p);
    a.num("hRoot", v.client).num("hObjectParent", v.parent).num("hObjectOld", v.object).status(v.status);
  } else if (escape == esc::rm_control && size == sizeof(abi::RmControlParams)) {
    const auto v = load<abi::RmControlParams>(p);
    a.num("hClient", v.client).num("hObject", v.object).named("cmd", v.cmd, rm_ctrl_name(v.cmd));
    a.num("flags", v.flags).num("params", v.params).num("paramsSize", v.params_size).status(v.status);
  } else if (escape == esc::rm_alloc_memory && size == sizeof(abi::RmAllocMemoryWithFd)) {
    const auto v = load<abi::RmAllocMemoryWithFd>(p);
    a.num("hRoot", v.params.client).num("hObjectParent", v.params.parent).num("hObjectNew", v.params.object);
    a.named("hClass", v.params.class_id, rm_class_name(v.params.class_id)).num("flags", v.params.flags);
    a.num("pMemory", v.params.memory).num("limit", v.params.limit).sint("fd", v.fd).status(v.params.status);
  } else if (escape == esc::rm_map_memory && size == sizeof(abi::RmMapMemoryWithFd)) {
    const auto v = load<abi::RmMapMemoryWithFd>(p);
    a.num("hClient", v.params.client).num("hDevice", v.params.device).num("hMemory", v.params.memory);
    a.num("offset", v.params.offset).num("length", v.params.length).num("flags", v.params.flags);
    a.num("pLinearAddress", v.params.linear_address).sint("fd", v.fd).status(v.params.status);
  } else if (escape == esc::rm_unmap_memory && size == sizeof(abi::RmUnmapMemoryParams)) {
    const auto v = load<abi::RmUnmapMemoryParams>(p);
    a.num("hClient", v.client).num("hDevice", v.device).num("hMemory", v.memory);
    a.num("pLinearAddress", v.linear_address).num("flags", v.flags).status(v.status);
  } else if (escape == esc::rm_unmap_memory_dma && size == sizeof(abi::RmUnmapMemoryDmaParams)) {
    const auto v = load<abi::RmUnmapMemoryDmaParams>(p);
    a.num("hClient", v.client).num("hDevice", v.device).num("hDma", v.dma).num("hMemory", v.memory);
    a.num("dmaOffset", v.dma_offset).num("size", v.size).status(v.status);
  } else if (escape == esc::rm_map_memory_dma && size >= 32) {
    // NVOS46: the first 32 bytes are the same in every branch; dmaOffset and status sit where the branch whose
    // block has this size puts them.
    namespace common = abi::map_memory_dma_common;
    const char* b = static_cast<const char*>(p);
    a.num("hClient", load<uint32_t>(b + common::client)).num("hDevice", load<uint32_t>(b + common::device));
    a.num("hDma", load<uint32_t>(b + common::dma)).num("hMemory", load<uint32_t>(b + common::memory));
    a.num("offset", load<uint64_t>(b + common::offset)).num("length", load<uint64_t>(b + common::length));
    for (const abi::BranchAbi& br : abi::supported_branches()) {
      if (br.map_memory_dma.size != size) continue;
      a.num("flags", load<uint32_t>(b + br.map_memory_dma.flags));
      a.num("dmaOffset", load<uint64_t>(b + br.map_memory_dma.dma_offset));
      a.status(load<uint32_t>(b + br.map_memory_dma.status));
      break;
    }
  } else if (escape == esc::register_fd && size == sizeof(abi::RegisterFd)) {
    a.sint("ctl_fd", load<abi::RegisterFd>(p).ctl_fd);
  } else if (escape == esc::check_version_str && size == sizeof(abi::VersionCheck)) {
    const auto v = load<abi::VersionCheck>(p);
    const std::string version(v.version, strnlen(v.version, sizeof v.version));
    a.num("cmd", v.cmd).num("reply", v.reply).text("versionString", "\"" + version + "\"");
    if (v.reply == abi::kVersionReplyRecognized && !version.empty()) d.driver_version = "NVIDIA " + version;
  } else if (escape == esc::status_code && size == sizeof(abi::StatusCode)) {
    const auto v = load<abi::StatusCode>(p);
    a.num("domain", v.domain).num("bus", v.bus).num("slot", v.slot).status(v.status);
  } else if ((escape == esc::alloc_os_event || escape == esc::free_os_event) && size == sizeof(abi::OsEvent)) {
    const auto v = load<abi::OsEvent>(p);
    a.num("hClient", v.client).num("hDevice", v.device).num("fd", v.fd).status(v.status);
  } else if (escape == esc::card_info && size % sizeof(abi::CardInfo) == 0 && size > 0) {
    size_t valid = 0;
    for (size_t off = 0; off < size; off += sizeof(abi::CardInfo))
      valid += load<abi::CardInfo>(static_cast<const char*>(p) + off).valid != 0;
    a.num("entries", size / sizeof(abi::CardInfo)).num("valid", valid);
  } else if (escape == esc::ioctl_xfer_cmd && size == sizeof(abi::Xfer)) {
    const auto v = load<abi::Xfer>(p);
    a.num("cmd", v.cmd).num("size", v.size).num("ptr", v.ptr);
  }
}

}  // namespace

DecodedIoctl decode_rm(unsigned long request, const void* arg, bool readable) {
  DecodedIoctl d;
  d.family = Family::rm;
  const uint32_t escape = abi::request_escape(request);
  const std::string_view name = lookup(kEscapes, escape);
  char buf[32];
  std::snprintf(buf, sizeof buf, "NV_ESC_0x%02x", escape);
  d.name = name.empty() ? std::string(buf) : std::string(name);
  if (!readable) return d;
  Args a;
  rm_escape_args(escape, arg, abi::request_size(request), a, d);
  d.args = a.str();
  return d;
}

}  // namespace detail

std::string_view rm_class_name(uint32_t class_id) {
  if (const std::string_view n = detail::lookup(detail::kClasses, class_id); !n.empty()) return n;
  // Channel, compute and copy classes: the class table the encoders, decoders and the simulator read names them.
  if (const nv::ClassMethods* c = nv::find_class(class_id)) return c->class_name;
  return "";
}

std::string_view rm_ctrl_name(uint32_t cmd) { return detail::lookup(detail::kCtrls, cmd); }

}  // namespace hcq::trace
