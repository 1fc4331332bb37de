// The ioctl table: request numbers (from the uAPI headers and drivers/nv/rm/abi) to names and block decoders.
#include "trace/ioctl_decode.hpp"

#include <linux/kfd_ioctl.h>

#include <cstdio>
#include <cstring>
#include <span>
#include <type_traits>

#include "amd/kfd/compat/kfd_runtime_enable.hpp"
#include "nv/rm/abi/branch.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/ioctl.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/abi/uvm.hpp"

namespace hcq::trace {
namespace {

namespace abi = hcq::nv::abi;

// "{a=1, b=0x2000}": the decoded block as one piece of text.
class Args {
 public:
  Args& num(std::string_view name, uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, v < 10 ? "%llu" : "0x%llx", static_cast<unsigned long long>(v));
    return text(name, buf);
  }
  Args& sint(std::string_view name, int64_t v) { return text(name, std::to_string(v)); }
  Args& text(std::string_view name, std::string_view v) {
    s_ += s_.empty() ? "{" : ", ";
    s_.append(name).append("=").append(v);
    return *this;
  }
  // A value with its name where one is known: "hClass=NV01_DEVICE_0 (0x80)".
  Args& named(std::string_view field, uint64_t v, std::string_view name) {
    if (name.empty()) return num(field, v);
    char buf[24];
    std::snprintf(buf, sizeof buf, " (0x%llx)", static_cast<unsigned long long>(v));
    return text(field, std::string(name) + buf);
  }
  Args& status(abi::NvStatus s) { return text("status", abi::status_name(s)); }
  std::string str() const { return s_.empty() ? s_ : s_ + "}"; }

 private:
  std::string s_;
};

template <class T>
T load(const void* p) {
  static_assert(std::is_trivially_copyable_v<T>);
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

using Decoder = void (*)(const void* arg, Args& a, DecodedIoctl& d);

struct Entry {
  unsigned long request;  // the whole request number (KFD: _IOWR('K', nr, size); UVM: the command)
  std::string_view name;
  Decoder decode;         // reads exactly the block the request names (KFD: its size bits; UVM: the command's)
};

// ---------------------------------------------------------------- KFD
std::string_view queue_type_name(uint32_t t) {
  switch (t) {
    case KFD_IOC_QUEUE_TYPE_COMPUTE: return "COMPUTE";
    case KFD_IOC_QUEUE_TYPE_SDMA: return "SDMA";
    case KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: return "COMPUTE_AQL";
    case KFD_IOC_QUEUE_TYPE_SDMA_XGMI: return "SDMA_XGMI";
    default: return "";
  }
}

std::string alloc_flags_text(uint32_t flags) {
  static constexpr std::pair<uint32_t, std::string_view> kFlags[] = {
      {KFD_IOC_ALLOC_MEM_FLAGS_VRAM, "VRAM"},
      {KFD_IOC_ALLOC_MEM_FLAGS_GTT, "GTT"},
      {KFD_IOC_ALLOC_MEM_FLAGS_USERPTR, "USERPTR"},
      {KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL, "DOORBELL"},
      {KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, "MMIO_REMAP"},
      {KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE, "WRITABLE"},
      {KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE, "EXECUTABLE"},
      {KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC, "PUBLIC"},
      {KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE, "NO_SUBSTITUTE"},
      {KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM, "AQL_QUEUE_MEM"},
      {KFD_IOC_ALLOC_MEM_FLAGS_COHERENT, "COHERENT"},
      {KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED, "UNCACHED"},
  };
  std::string s;
  uint32_t left = flags;
  for (const auto& [bit, name] : kFlags) {
    if (!(flags & bit)) continue;
    if (!s.empty()) s += '|';
    s += name;
    left &= ~bit;
  }
  if (left || s.empty()) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%x", left);
    if (!s.empty()) s += '|';
    s += buf;
  }
  return s;
}

void kfd_get_version(const void* p, Args& a, DecodedIoctl& d) {
  const auto v = load<kfd_ioctl_get_version_args>(p);
  a.num("major_version", v.major_version).num("minor_version", v.minor_version);
  d.driver_version = "KFD " + std::to_string(v.major_version) + "." + std::to_string(v.minor_version);
}
void kfd_create_queue(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_create_queue_args>(p);
  a.num("gpu_id", v.gpu_id).named("queue_type", v.queue_type, queue_type_name(v.queue_type));
  a.num("ring_base_address", v.ring_base_address).num("ring_size", v.ring_size);
  a.num("queue_percentage", v.queue_percentage).num("queue_priority", v.queue_priority);
  a.num("eop_buffer_address", v.eop_buffer_address).num("eop_buffer_size", v.eop_buffer_size);
  a.num("ctx_save_restore_address", v.ctx_save_restore_address).num("ctx_save_restore_size", v.ctx_save_restore_size);
  a.num("ctl_stack_size", v.ctl_stack_size);
  a.num("queue_id", v.queue_id).num("doorbell_offset", v.doorbell_offset);
  a.num("write_pointer_address", v.write_pointer_address).num("read_pointer_address", v.read_pointer_address);
}
void kfd_destroy_queue(const void* p, Args& a, DecodedIoctl&) {
  a.num("queue_id", load<kfd_ioctl_destroy_queue_args>(p).queue_id);
}
void kfd_update_queue(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_update_queue_args>(p);
  a.num("queue_id", v.queue_id).num("ring_base_address", v.ring_base_address).num("ring_size", v.ring_size);
  a.num("queue_percentage", v.queue_percentage).num("queue_priority", v.queue_priority);
}
void kfd_set_memory_policy(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_set_memory_policy_args>(p);
  a.num("gpu_id", v.gpu_id).num("default_policy", v.default_policy).num("alternate_policy", v.alternate_policy);
  a.num("alternate_aperture_base", v.alternate_aperture_base).num("alternate_aperture_size", v.alternate_aperture_size);
}
void kfd_get_clock_counters(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_get_clock_counters_args>(p);
  a.num("gpu_id", v.gpu_id).num("gpu_clock_counter", v.gpu_clock_counter).num("cpu_clock_counter", v.cpu_clock_counter);
  a.num("system_clock_counter", v.system_clock_counter).num("system_clock_freq", v.system_clock_freq);
}
void kfd_apertures_new(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_get_process_apertures_new_args>(p);
  a.num("kfd_process_device_apertures_ptr", v.kfd_process_device_apertures_ptr).num("num_of_nodes", v.num_of_nodes);
}
void kfd_create_event(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_create_event_args>(p);
  a.num("event_type", v.event_type).num("auto_reset", v.auto_reset).num("node_id", v.node_id);
  a.num("event_page_offset", v.event_page_offset).num("event_id", v.event_id).num("event_slot_index", v.event_slot_index);
  a.num("event_trigger_data", v.event_trigger_data);
}
void kfd_event_id(const void* p, Args& a, DecodedIoctl&) {
  a.num("event_id", load<kfd_ioctl_destroy_event_args>(p).event_id);
}
void kfd_wait_events(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_wait_events_args>(p);
  a.num("events_ptr", v.events_ptr).num("num_events", v.num_events).num("wait_for_all", v.wait_for_all);
  a.num("timeout", v.timeout).num("wait_result", v.wait_result);
}
void kfd_scratch_va(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_set_scratch_backing_va_args>(p);
  a.num("gpu_id", v.gpu_id).num("va_addr", v.va_addr);
}
void kfd_trap_handler(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_set_trap_handler_args>(p);
  a.num("gpu_id", v.gpu_id).num("tba_addr", v.tba_addr).num("tma_addr", v.tma_addr);
}
void kfd_acquire_vm(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_acquire_vm_args>(p);
  a.num("drm_fd", v.drm_fd).num("gpu_id", v.gpu_id);
}
void kfd_alloc_memory(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_alloc_memory_of_gpu_args>(p);
  a.num("gpu_id", v.gpu_id).num("va_addr", v.va_addr).num("size", v.size).text("flags", alloc_flags_text(v.flags));
  a.num("handle", v.handle).num("mmap_offset", v.mmap_offset);
}
void kfd_free_memory(const void* p, Args& a, DecodedIoctl&) {
  a.num("handle", load<kfd_ioctl_free_memory_of_gpu_args>(p).handle);
}
void kfd_map_memory(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_map_memory_to_gpu_args>(p);  // the unmap block is the same
  a.num("handle", v.handle).num("device_ids_array_ptr", v.device_ids_array_ptr);
  a.num("n_devices", v.n_devices).num("n_success", v.n_success);
}
void kfd_xnack(const void* p, Args& a, DecodedIoctl&) {
  a.sint("xnack_enabled", load<kfd_ioctl_set_xnack_mode_args>(p).xnack_enabled);
}
void kfd_runtime_enable(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<hcq::amd::kfd_compat::RuntimeEnableArgs>(p);
  a.num("r_debug", v.r_debug).num("mode_mask", v.mode_mask).num("capabilities_mask", v.capabilities_mask);
}
void kfd_available_memory(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<kfd_ioctl_get_available_memory_args>(p);
  a.num("gpu_id", v.gpu_id).num("available", v.available);
}

#define KFD(NAME, FN) {AMDKFD_IOC_##NAME, "AMDKFD_IOC_" #NAME, FN}
#define KFD_NAME_ONLY(NAME) {AMDKFD_IOC_##NAME, "AMDKFD_IOC_" #NAME, nullptr}
const Entry kKfd[] = {
    KFD(GET_VERSION, kfd_get_version),
    KFD(CREATE_QUEUE, kfd_create_queue),
    KFD(DESTROY_QUEUE, kfd_destroy_queue),
    KFD(SET_MEMORY_POLICY, kfd_set_memory_policy),
    KFD(GET_CLOCK_COUNTERS, kfd_get_clock_counters),
    KFD_NAME_ONLY(GET_PROCESS_APERTURES),
    KFD(UPDATE_QUEUE, kfd_update_queue),
    KFD(CREATE_EVENT, kfd_create_event),
    KFD(DESTROY_EVENT, kfd_event_id),
    KFD(SET_EVENT, kfd_event_id),
    KFD(RESET_EVENT, kfd_event_id),
    KFD(WAIT_EVENTS, kfd_wait_events),
    KFD_NAME_ONLY(DBG_REGISTER_DEPRECATED),
    KFD_NAME_ONLY(DBG_UNREGISTER_DEPRECATED),
    KFD_NAME_ONLY(DBG_ADDRESS_WATCH_DEPRECATED),
    KFD_NAME_ONLY(DBG_WAVE_CONTROL_DEPRECATED),
    KFD(SET_SCRATCH_BACKING_VA, kfd_scratch_va),
    KFD_NAME_ONLY(GET_TILE_CONFIG),
    KFD(SET_TRAP_HANDLER, kfd_trap_handler),
    KFD(GET_PROCESS_APERTURES_NEW, kfd_apertures_new),
    KFD(ACQUIRE_VM, kfd_acquire_vm),
    KFD(ALLOC_MEMORY_OF_GPU, kfd_alloc_memory),
    KFD(FREE_MEMORY_OF_GPU, kfd_free_memory),
    KFD(MAP_MEMORY_TO_GPU, kfd_map_memory),
    KFD(UNMAP_MEMORY_FROM_GPU, kfd_map_memory),
    KFD_NAME_ONLY(SET_CU_MASK),
    KFD_NAME_ONLY(GET_QUEUE_WAVE_STATE),
    KFD_NAME_ONLY(GET_DMABUF_INFO),
    KFD_NAME_ONLY(IMPORT_DMABUF),
    KFD_NAME_ONLY(ALLOC_QUEUE_GWS),
    KFD_NAME_ONLY(SMI_EVENTS),
    KFD_NAME_ONLY(SVM),
    KFD(SET_XNACK_MODE, kfd_xnack),
    KFD_NAME_ONLY(CRIU_OP),
    KFD(AVAILABLE_MEMORY, kfd_available_memory),
    // Newer than this system's uAPI header; hcq's backend writes its number once (drivers/amd/kfd/compat).
    {hcq::amd::kfd_compat::kIocRuntimeEnable, "AMDKFD_IOC_RUNTIME_ENABLE", kfd_runtime_enable},
};
#undef KFD
#undef KFD_NAME_ONLY

// ---------------------------------------------------------------- RM
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
};
// The per-architecture classes (drivers/nv/facts/arch.hpp holds their ids), by the class header that defines them:
// clc56f.h defines AMPERE_CHANNEL_GPFIFO_A, and so on.
struct HeaderName {
  std::string_view header;  // "NVC56F": NV + the id in upper-case hex
  std::string_view name;
};
constexpr HeaderName kClassHeaders[] = {
    {"NVC56F", "AMPERE_CHANNEL_GPFIFO_A"}, {"NVC86F", "HOPPER_CHANNEL_GPFIFO_A"},
    {"NVC96F", "BLACKWELL_CHANNEL_GPFIFO_A"}, {"NVCA6F", "BLACKWELL_CHANNEL_GPFIFO_B"},
    {"NVC6C0", "AMPERE_COMPUTE_A"},       {"NVC7C0", "AMPERE_COMPUTE_B"},
    {"NVC9C0", "ADA_COMPUTE_A"},          {"NVCBC0", "HOPPER_COMPUTE_A"},
    {"NVCDC0", "BLACKWELL_COMPUTE_A"},    {"NVCEC0", "BLACKWELL_COMPUTE_B"},
    {"NVC7B5", "AMPERE_DMA_COPY_B"},      {"NVC8B5", "HOPPER_DMA_COPY_A"},
    {"NVC9B5", "BLACKWELL_DMA_COPY_A"},   {"NVCAB5", "BLACKWELL_DMA_COPY_B"},
    {"NVC461", "TURING_USERMODE_A"},      {"NVC561", "AMPERE_USERMODE_A"},
    {"NVC661", "HOPPER_USERMODE_A"},      {"NVC761", "BLACKWELL_USERMODE_A"},
    {"NVA06C", "KEPLER_CHANNEL_GROUP_A"}, {"NV9067", "FERMI_CONTEXT_SHARE_A"},
    {"NV90F1", "FERMI_VASPACE_A"},
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

// ---------------------------------------------------------------- UVM
template <class Block>
void uvm_status(const void* p, Args& a, DecodedIoctl&) {
  a.status(load<Block>(p).status);
}
void uvm_initialize(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmInitializeParams>(p);
  a.num("flags", v.flags).status(v.status);
}
void uvm_mm_initialize(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmMmInitializeParams>(p);
  a.sint("uvmFd", v.uvm_fd).status(v.status);
}
void uvm_register_gpu(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmRegisterGpuParams>(p);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("numaEnabled", v.numa_enabled);
  a.sint("numaNodeId", v.numa_node_id).status(v.status);
}
void uvm_register_vaspace(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmRegisterGpuVaspaceParams>(p);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("hVaSpace", v.vaspace).status(v.status);
}
void uvm_register_channel(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmRegisterChannelParams>(p);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("hChannel", v.channel);
  a.num("base", v.base).num("length", v.length).status(v.status);
}
void uvm_unregister_channel(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmUnregisterChannelParams>(p);
  a.num("hClient", v.client).num("hChannel", v.channel).status(v.status);
}
void uvm_range(const void* p, Args& a, DecodedIoctl&) {  // CREATE_EXTERNAL_RANGE and FREE share the layout
  const auto v = load<abi::UvmFreeParams>(p);
  a.num("base", v.base).num("length", v.length).status(v.status);
}
void uvm_map_external(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmMapExternalAllocationParams>(p);
  a.num("base", v.base).num("length", v.length).num("offset", v.offset).num("gpuAttributesCount", v.gpu_count);
  a.sint("rmCtrlFd", v.rm_ctrl_fd).num("hClient", v.client).num("hMemory", v.memory).status(v.status);
}
void uvm_unmap_external(const void* p, Args& a, DecodedIoctl&) {
  const auto v = load<abi::UvmUnmapExternalParams>(p);
  a.num("base", v.base).num("length", v.length).status(v.status);
}

#define UVM(NAME, CMD, FN) {abi::uvm::CMD, "UVM_" #NAME, FN}
const Entry kUvm[] = {
    UVM(INITIALIZE, initialize, uvm_initialize),
    {abi::uvm::deinitialize, "UVM_DEINITIALIZE", nullptr},
    UVM(REGISTER_GPU_VASPACE, register_gpu_vaspace, uvm_register_vaspace),
    UVM(UNREGISTER_GPU_VASPACE, unregister_gpu_vaspace, uvm_status<abi::UvmUnregisterGpuVaspaceParams>),
    UVM(REGISTER_CHANNEL, register_channel, uvm_register_channel),
    UVM(UNREGISTER_CHANNEL, unregister_channel, uvm_unregister_channel),
    {abi::uvm::enable_peer_access, "UVM_ENABLE_PEER_ACCESS", nullptr},
    UVM(UNMAP_EXTERNAL, unmap_external, uvm_unmap_external),
    UVM(MAP_EXTERNAL_ALLOCATION, map_external_allocation, uvm_map_external),
    UVM(FREE, free, uvm_range),
    UVM(REGISTER_GPU, register_gpu, uvm_register_gpu),
    UVM(UNREGISTER_GPU, unregister_gpu, uvm_status<abi::UvmUnregisterGpuParams>),
    UVM(CREATE_EXTERNAL_RANGE, create_external_range, uvm_range),
    UVM(MM_INITIALIZE, mm_initialize, uvm_mm_initialize),
};
#undef UVM

constexpr unsigned long ioc_type(unsigned long request) { return (request >> 8) & 0xff; }
constexpr unsigned long ioc_nr(unsigned long request) { return request & 0xff; }
constexpr size_t ioc_size(unsigned long request) { return (request >> 16) & 0x3fff; }

void run_entry(const Entry& e, const void* arg, bool readable, DecodedIoctl& d) {
  d.name = std::string(e.name);
  if (!e.decode || !readable) return;
  Args a;
  e.decode(arg, a, d);
  d.args = a.str();
}

DecodedIoctl decode_kfd(unsigned long request, const void* arg, bool readable) {
  DecodedIoctl d;
  d.family = Family::kfd;
  for (const Entry& e : kKfd) {
    if (e.request == request) {
      run_entry(e, arg, readable, d);
      return d;
    }
  }
  // The right command with a block of another size. KFD grows a block only at its end (newer kernels' CREATE_QUEUE
  // is 96 bytes, this header's 88), so a larger one is decoded up to the fields we know and the rest counted; a
  // smaller one is named with its size and not read.
  for (const Entry& e : kKfd) {
    if (ioc_nr(e.request) != ioc_nr(request) || ioc_type(e.request) != ioc_type(request)) continue;
    const size_t ours = ioc_size(e.request), theirs = ioc_size(request);
    if (theirs < ours) {
      d.name = std::string(e.name) + " (size " + std::to_string(theirs) + ", this uAPI's is " + std::to_string(ours) +
               ")";
      return d;
    }
    run_entry(e, arg, readable, d);
    if (!d.args.empty()) {
      d.args.pop_back();  // the closing brace
      d.args += ", +" + std::to_string(theirs - ours) + " bytes newer than this uAPI}";
    }
    return d;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "AMDKFD_IOC_0x%02lx", ioc_nr(request));
  d.name = buf;
  return d;
}

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

DecodedIoctl decode_uvm(unsigned long request, const void* arg, bool readable) {
  DecodedIoctl d;
  d.family = Family::uvm;
  for (const Entry& e : kUvm) {
    if (e.request == request) {
      run_entry(e, arg, readable, d);
      return d;
    }
  }
  d.name = "UVM_" + std::to_string(request);
  return d;
}

}  // namespace

Family family_of_path(std::string_view path) {
  if (path == "/dev/kfd") return Family::kfd;
  if (path == "/dev/nvidia-uvm" || path == "/dev/nvidia-uvm-tools") return Family::uvm;
  if (path == "/dev/nvidiactl") return Family::rm;
  if (path.starts_with("/dev/nvidia")) {
    const std::string_view n = path.substr(11);
    if (!n.empty() && n.find_first_not_of("0123456789") == std::string_view::npos) return Family::rm;
  }
  return Family::unknown;
}

std::string_view family_name(Family f) {
  switch (f) {
    case Family::kfd: return "KFD";
    case Family::rm: return "RM";
    case Family::uvm: return "UVM";
    default: return "";
  }
}

std::string_view rm_class_name(uint32_t class_id) {
  if (const std::string_view n = lookup(kClasses, class_id); !n.empty()) return n;
  char header[16];
  std::snprintf(header, sizeof header, "NV%04X", class_id);
  for (const HeaderName& h : kClassHeaders)
    if (h.header == header) return h.name;
  return "";
}

std::string_view rm_ctrl_name(uint32_t cmd) { return lookup(kCtrls, cmd); }

DecodedIoctl decode_ioctl(Family path_family, unsigned long request, const void* arg, bool arg_readable) {
  arg_readable = arg_readable && arg != nullptr;
  // UVM commands are bare numbers (no ioctl type), so only the path can tell them, except UVM_INITIALIZE and
  // UVM_DEINITIALIZE whose numbers stand out.
  if (path_family == Family::uvm || request == abi::uvm::initialize || request == abi::uvm::deinitialize)
    return decode_uvm(request, arg, arg_readable);
  if (ioc_type(request) == AMDKFD_IOCTL_BASE && path_family != Family::rm)
    return decode_kfd(request, arg, arg_readable);
  if (ioc_type(request) == abi::kIoctlType && path_family != Family::kfd)
    return decode_rm(request, arg, arg_readable);
  DecodedIoctl d;
  d.family = Family::unknown;
  return d;
}

}  // namespace hcq::trace
