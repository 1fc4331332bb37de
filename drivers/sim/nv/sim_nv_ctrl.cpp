// The simulated RM's controls (NVOS54), checked in rmapi/control.c's order: the client, the parameter pointer and
// size against the command's block (NV_ERR_INVALID_ARGUMENT), the object, then whether the object's class exports
// the command (NV_ERR_NOT_SUPPORTED).
#include <algorithm>
#include <cstring>

#include "hcq/error.hpp"
#include "nv/rm/abi/ctrl.hpp"
#include "nv/rm/abi/debugger.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "sim/nv/nvproxy_refusals.hpp"
#include "sim/nv/sim_nv_state.hpp"

namespace hcq::sim {

namespace abi = nv::abi;
namespace st = nv::abi::status;
namespace ctrl = nv::abi::ctrl;

namespace {

// A command this simulator answers: its parameter size and the kind of object that exports it.
struct Command {
  uint32_t cmd;
  size_t size;
  RmKind on;
};
constexpr Command kCommands[] = {
    {ctrl::system_get_build_version_v2, sizeof(abi::BuildVersionParams), RmKind::client},
    {ctrl::gpu_get_id_info_v2, sizeof(abi::GpuIdInfoParams), RmKind::client},
    {ctrl::gpu_get_classlist, sizeof(abi::ClassListParams), RmKind::device},
    {ctrl::gpu_get_classlist_v2, sizeof(abi::ClassListV2Params), RmKind::device},
    {ctrl::gpu_get_name_string, sizeof(abi::GpuNameParams), RmKind::subdevice},
    {ctrl::gpu_get_gid_info, sizeof(abi::GidInfoParams), RmKind::subdevice},
    {ctrl::gr_get_info, sizeof(abi::GrInfoParams), RmKind::subdevice},
    {ctrl::fb_get_info_v2, sizeof(abi::FbInfoV2Params), RmKind::subdevice},
    {ctrl::mc_get_arch_info, sizeof(abi::ArchInfoParams), RmKind::subdevice},
    {ctrl::channel_group_gpfifo_schedule, sizeof(abi::GpfifoScheduleParams), RmKind::channel_group},
    {ctrl::gpfifo_get_work_submit_token, sizeof(abi::WorkSubmitTokenParams), RmKind::channel},
    {ctrl::debug_read_all_sm_error_states, sizeof(abi::ReadAllSmErrorStatesParams), RmKind::debugger},
    {ctrl::debug_read_mmu_fault_info, sizeof(abi::ReadMmuFaultInfoParams), RmKind::debugger},
};

const Command* find_command(uint32_t cmd) {
  for (const Command& c : kCommands)
    if (c.cmd == cmd) return &c;
  return nullptr;
}

// The parameter size RM's control table holds for `c` in the branch the simulated driver reports: the blocks that
// differ between branches are shorter in 570 (the table's sizes are 580's).
size_t expected_size(const Command& c, const abi::BranchAbi* branch) {
  if (branch == nullptr) return c.size;
  switch (c.cmd) {
    case ctrl::fb_get_info_v2: return branch->controls.fb_info_v2;
    case ctrl::gpu_get_classlist_v2: return branch->controls.classlist_v2;
    case ctrl::channel_group_gpfifo_schedule: return branch->controls.gpfifo_schedule;
    default: return c.size;
  }
}

void copy_string(char* dst, size_t cap, std::string_view s) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, s.data(), std::min(s.size(), cap - 1));
}

// GR_GET_INFO values of one GPU; 0 for indexes that exist but this simulator does not model.
uint32_t gr_info(const SimNvGpuSpec& g, uint32_t index) {
  switch (index) {
    case abi::gr_info::sm_version: return ((g.sm_version / 10) << 8) | (g.sm_version % 10);
    case abi::gr_info::max_warps_per_sm: return g.sm_version == 86 || g.sm_version == 89 ? 48 : 64;
    case abi::gr_info::shader_pipe_sub_count: return g.sm_count / g.sms_per_tpc;  // enabled TPCs
    case abi::gr_info::litter_num_gpcs: return g.gpcs;
    case abi::gr_info::litter_num_tpc_per_gpc: return g.tpcs_per_gpc;
    case abi::gr_info::litter_num_sm_per_tpc: return g.sms_per_tpc;
    default: return 0;
  }
}

uint32_t fb_info(const SimNvGpuSpec& g, uint32_t index) {
  switch (index) {
    case abi::fb_info::ram_size:
    case abi::fb_info::total_ram_size:
    case abi::fb_info::heap_size:
    case abi::fb_info::usable_ram_size: return static_cast<uint32_t>(g.vram_bytes >> 10);
    default: return 0;
  }
}

std::string uuid_string(const abi::Uuid& u) {
  static const char* hexdig = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += hexdig[u.bytes[i] >> 4];
    s += hexdig[u.bytes[i] & 15];
  }
  return s;
}

}  // namespace

int SimNv::State::rm_control(void* arg) {
  auto* p = static_cast<abi::RmControlParams*>(arg);
  void* params = reinterpret_cast<void*>(static_cast<uintptr_t>(p->params));
  std::vector<std::shared_ptr<NvChannel>> kick;
  {
    std::lock_guard lock(mu);
    if (nvproxy_refusals && nvproxy::refuses_control(p->cmd)) {
      p->status = st::err_not_supported;  // the proxy answers for RM, before looking at client or object
      return 0;
    }
    const Command* c = find_command(p->cmd);
    if (!tree.client_exists(p->client)) {
      p->status = st::err_invalid_client;
      return 0;
    }
    if ((p->params_size != 0) != (params != nullptr) || (c != nullptr && p->params_size != expected_size(*c, branch))) {
      p->status = st::err_invalid_argument;
      return 0;
    }
    const RmObject* obj = tree.find(p->client, p->object);
    if (obj == nullptr) {
      p->status = st::err_object_not_found;
      return 0;
    }
    if (c == nullptr || obj->kind != c->on) {
      p->status = st::err_not_supported;  // the object's class does not export the command
      return 0;
    }
    const SimNvGpuSpec* spec = obj->gpu >= 0 ? gpus.at(static_cast<size_t>(obj->gpu))->spec : nullptr;
    p->status = st::ok;
    switch (p->cmd) {
      case ctrl::system_get_build_version_v2: {
        auto* b = static_cast<abi::BuildVersionParams*>(params);
        copy_string(b->driver_version, sizeof b->driver_version, version);
        copy_string(b->version, sizeof b->version, version);
        copy_string(b->driver_branch, sizeof b->driver_branch, cat("r", version.substr(0, version.find('.')), "_00"));
        copy_string(b->title, sizeof b->title, "hcq simulated RM");
        b->changelist = b->official_changelist = 0;
        break;
      }
      case ctrl::gpu_get_id_info_v2: {
        auto* q = static_cast<abi::GpuIdInfoParams*>(params);
        const NvGpu* found = nullptr;
        for (const auto& g : gpus)
          if (g->gpu_id == q->gpu_id) found = g.get();
        if (found == nullptr) {
          p->status = st::err_invalid_argument;
          break;
        }
        q->device_instance = static_cast<uint32_t>(found->index);
        q->subdevice_instance = 0;
        q->gpu_flags = 0;
        q->sli_status = 0;
        q->board_id = found->gpu_id;
        q->gpu_instance = static_cast<uint32_t>(found->index);
        q->numa_id = -1;
        break;
      }
      case ctrl::gpu_get_classlist: {
        auto* q = static_cast<abi::ClassListParams*>(params);
        const std::vector<uint32_t> all = spec->classes();
        if (q->class_list != 0) {
          if (q->num_classes < all.size()) {
            p->status = st::err_invalid_param_struct;  // the buffer is smaller than the list
            break;
          }
          std::memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(q->class_list)), all.data(),
                      all.size() * sizeof(uint32_t));
        }
        q->num_classes = static_cast<uint32_t>(all.size());
        break;
      }
      case ctrl::gpu_get_classlist_v2: {
        auto* q = static_cast<abi::ClassListV2Params*>(params);
        const std::vector<uint32_t> all = spec->classes();
        // The caller's block holds as many classes as its branch's (checked) size says.
        const size_t room = (p->params_size - sizeof q->num_classes) / sizeof(uint32_t);
        if (all.size() > room) {
          p->status = st::err_invalid_argument;
          break;
        }
        std::memset(q->classes, 0, room * sizeof(uint32_t));
        std::copy(all.begin(), all.end(), q->classes);
        q->num_classes = static_cast<uint32_t>(all.size());
        break;
      }
      case ctrl::gpu_get_name_string: {
        auto* q = static_cast<abi::GpuNameParams*>(params);
        if (q->flags != 0) {
          p->status = st::err_invalid_argument;  // only the ASCII form is simulated
          break;
        }
        copy_string(reinterpret_cast<char*>(q->name), 64, spec->product);
        break;
      }
      case ctrl::gpu_get_gid_info: {
        auto* q = static_cast<abi::GidInfoParams*>(params);
        const NvGpu& g = *gpus.at(static_cast<size_t>(obj->gpu));
        if (q->index != 0) {
          p->status = st::err_invalid_argument;
          break;
        }
        std::memset(q->data, 0, sizeof q->data);
        if ((q->flags & 3) == abi::kGidFormatBinary) {
          std::memcpy(q->data, g.uuid.bytes, abi::kUuidBytes);
          q->length = abi::kUuidBytes;
        } else {
          const std::string text = uuid_string(g.uuid);
          std::memcpy(q->data, text.data(), text.size());
          q->length = static_cast<uint32_t>(text.size() + 1);
        }
        break;
      }
      case ctrl::gr_get_info: {
        auto* q = static_cast<abi::GrInfoParams*>(params);
        if (q->list_size == 0 || q->list_size > abi::gr_info::max_list_size || q->list == 0) {
          p->status = st::err_invalid_argument;
          break;
        }
        auto* list = reinterpret_cast<abi::InfoPair*>(static_cast<uintptr_t>(q->list));
        for (uint32_t i = 0; i < q->list_size; ++i) {
          if (list[i].index >= abi::gr_info::max_list_size) {
            p->status = st::err_invalid_argument;
            break;
          }
          list[i].data = gr_info(*spec, list[i].index);
        }
        break;
      }
      case ctrl::fb_get_info_v2: {
        auto* q = static_cast<abi::FbInfoV2Params*>(params);
        if (q->list_size > (branch ? branch->controls.fb_info_max_list() : abi::kFbInfoMaxList)) {
          p->status = st::err_invalid_argument;
          break;
        }
        for (uint32_t i = 0; i < q->list_size; ++i) q->list[i].data = fb_info(*spec, q->list[i].index);
        break;
      }
      case ctrl::mc_get_arch_info: {
        auto* q = static_cast<abi::ArchInfoParams*>(params);
        q->architecture = spec->mc_architecture;
        q->implementation = spec->mc_implementation;
        q->revision = 0xa1;
        q->sub_revision = 0;
        break;
      }
      case ctrl::channel_group_gpfifo_schedule: {
        auto* q = static_cast<abi::GpfifoScheduleParams*>(params);
        auto grp = std::static_pointer_cast<NvChannelGroup>(obj->payload);
        grp->scheduled = q->enable != 0;
        for (auto& [key, ch] : channels) {
          if (ch->client != p->client || ch->group != p->object) continue;
          const bool was = ch->scheduled;
          ch->scheduled = grp->scheduled;
          // Work the process queued before the group was enabled runs now.
          if (!was && ch->scheduled && !q->skip_submit) kick.push_back(ch);
        }
        break;
      }
      case ctrl::gpfifo_get_work_submit_token: {
        auto* q = static_cast<abi::WorkSubmitTokenParams*>(params);
        q->token = std::static_pointer_cast<NvChannel>(obj->payload)->desc.work_submit_token;
        break;
      }
      case ctrl::debug_read_all_sm_error_states: {
        auto* q = static_cast<abi::ReadAllSmErrorStatesParams*>(params);
        const auto d = std::static_pointer_cast<NvDebugger>(obj->payload);
        const std::shared_ptr<NvChannel> ch = d->channel.lock();
        const RmObject* target = tree.find(d->app_client, q->target_channel);
        if (ch == nullptr) {
          p->status = st::err_invalid_state;  // the debugged compute object's channel is gone
        } else if (target == nullptr || target->kind != RmKind::channel) {
          p->status = st::err_invalid_object_handle;
        } else if (target->handle != d->channel_handle || q->num_sms_to_read > abi::kDebugMaxSmsPerCall ||
                   q->starting_sm >= spec->sm_count) {
          p->status = st::err_invalid_argument;  // another context, or SMs the GPU does not have
        } else {
          // The simulated SMs latch no error registers (a twin's failure is reported as a GR exception with the
          // simulator's reason); the MMU fault state is what RM recorded for the context.
          std::memset(q->sm_error_state, 0, sizeof q->sm_error_state);
          q->mmu_fault = abi::DebugMmuFault{};
          q->mmu_fault.valid = ch->gr_faults.valid ? 1 : 0;
          q->mmu_fault.fault_info = ch->gr_faults.fault_info;
          q->mmu_fault_info = ch->gr_faults.fault_info;
        }
        break;
      }
      case ctrl::debug_read_mmu_fault_info: {
        auto* q = static_cast<abi::ReadMmuFaultInfoParams*>(params);
        const auto d = std::static_pointer_cast<NvDebugger>(obj->payload);
        const std::shared_ptr<NvChannel> ch = d->channel.lock();
        if (ch == nullptr) {
          p->status = st::err_invalid_state;
          break;
        }
        // kgrctxLookupMmuFaultInfo: the ring from its oldest entry to its newest.
        *q = abi::ReadMmuFaultInfoParams{};
        const NvGrFaultRecord& r = ch->gr_faults;
        constexpr uint32_t kSlots = sizeof(r.ring) / sizeof(r.ring[0]);
        for (uint32_t i = r.tail; i != r.head; i = (i + 1) % kSlots)
          q->list[q->count++] = abi::MmuFaultInfoEntry{r.ring[i].address, r.ring[i].fault_type, r.ring[i].access_type};
        break;
      }
      default: p->status = st::err_not_supported; break;
    }
  }
  for (const auto& ch : kick) {
    std::lock_guard rl(ch->runner_mu);
    if (ch->runner) ch->runner->doorbell();
  }
  return 0;
}

}  // namespace hcq::sim
