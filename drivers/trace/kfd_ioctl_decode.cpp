// KFD ioctls (/dev/kfd): request numbers from <linux/kfd_ioctl.h> to names, and their argument blocks decoded.
#include <linux/kfd_ioctl.h>

#include <cstdio>
#include <string>
#include <utility>

#include "amd/kfd/compat/kfd_runtime_enable.hpp"
#include "trace/ioctl_args.hpp"

namespace hcq::trace::detail {
namespace {

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
  a.num("event_page_offset", v.event_page_offset)
      .num("event_id", v.event_id)
      .num("event_slot_index", v.event_slot_index);
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

}  // namespace

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
      d.name =
          std::string(e.name) + " (size " + std::to_string(theirs) + ", this uAPI's is " + std::to_string(ours) + ")";
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

}  // namespace hcq::trace::detail
