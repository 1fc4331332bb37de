// The simulated RM's object escapes: RM_ALLOC (every class the backend uses, with its parameter checks), RM_FREE,
// RM_ALLOC_MEMORY (OS-descriptor memory), RM_MAP_MEMORY / RM_UNMAP_MEMORY (CPU mappings, completed by mmap) and
// RM_MAP_MEMORY_DMA / RM_UNMAP_MEMORY_DMA (GPU mappings into an NV01_MEMORY_VIRTUAL range).
//
// Where RM only copies the class's own parameter size and this file also insists that paramsSize says so, the
// comment says it is stricter: a wrong size there is a bug in the caller worth failing loudly on.
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "hcq/backend/align.hpp"
#include "nv/facts/arch.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/debugger.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "sim/nv/nvproxy_refusals.hpp"
#include "sim/nv/sim_nv_rm_alloc.hpp"
#include "sim/nv/sim_nv_state.hpp"

namespace hcq::sim {

namespace abi = nv::abi;
namespace st = nv::abi::status;
namespace cls = nv::abi::cls;

namespace {

constexpr uint64_t kPage = SimNv::kPage;
constexpr uint32_t kUserdAlign = 512;  // NV_RAMUSERD_BASE_SHIFT: USERD sits on a 512-byte boundary
// NV2080_ENGINE_TYPE_COPY0..COPY9: ten copy engines numbered from the abi's first.
constexpr uint32_t kEngineCopy0 = abi::engine_type::copy0, kEngineCopyLast = kEngineCopy0 + 9;

bool is_memory(RmKind k) {
  return k == RmKind::memory_local || k == RmKind::memory_system || k == RmKind::memory_os_descriptor;
}

// The kind of any class the simulated RM knows on some GPU; nullopt: NV_ERR_INVALID_CLASS.
std::optional<RmKind> kind_of_class(uint32_t c) {
  switch (c) {
    case cls::device: return RmKind::device;
    case cls::subdevice: return RmKind::subdevice;
    case cls::memory_system: return RmKind::memory_system;
    case cls::memory_local_user: return RmKind::memory_local;
    case cls::memory_system_os_descriptor: return RmKind::memory_os_descriptor;
    case cls::memory_virtual: return RmKind::memory_virtual;
    case cls::gt200_debugger: return RmKind::debugger;
    default: break;
  }
  for (const nv::NvArchInfo& a : nv::nv_arch_table()) {
    for (uint32_t u : a.classes.usermode)
      if (c == u) return RmKind::usermode;
    if (c == a.classes.va_space) return RmKind::vaspace;
    if (c == a.classes.channel_group) return RmKind::channel_group;
    if (c == a.classes.context_share) return RmKind::context_share;
    if (c == a.classes.gpfifo) return RmKind::channel;
    if (c == a.classes.compute) return RmKind::compute;
    if (c == a.classes.copy) return RmKind::copy;
  }
  return std::nullopt;
}

// The size of a class's allocation parameters and whether RM requires them (resource_list.h RS_REQUIRED).
struct ParamRule {
  size_t size;
  bool required;
};
ParamRule params_of(RmKind k) {
  switch (k) {
    case RmKind::device: return {sizeof(abi::DeviceAllocParams), false};
    case RmKind::subdevice: return {sizeof(abi::SubdeviceAllocParams), false};
    case RmKind::vaspace: return {sizeof(abi::VaspaceAllocParams), true};
    case RmKind::channel_group: return {sizeof(abi::ChannelGroupAllocParams), true};
    case RmKind::context_share: return {sizeof(abi::ContextShareAllocParams), true};
    case RmKind::channel: return {sizeof(abi::ChannelAllocParams), true};
    case RmKind::memory_local:
    case RmKind::memory_system: return {sizeof(abi::MemoryAllocParams), true};
    case RmKind::memory_virtual: return {sizeof(abi::MemoryVirtualAllocParams), true};
    case RmKind::memory_os_descriptor: return {0, true};  // NV_OS_DESC_MEMORY_ALLOCATION_PARAMS: not simulated
    case RmKind::debugger: return {sizeof(abi::DebuggerAllocParams), true};
    default: return {0, false};
  }
}

// The memory object `h` of `client` (any of the three memory classes), or nullptr.
std::shared_ptr<NvMemory> memory_of(RmObjectTree& tree, RmHandle client, RmHandle h) {
  RmObject* o = tree.find(client, h);
  if (o == nullptr || !is_memory(o->kind)) return nullptr;
  return std::static_pointer_cast<NvMemory>(o->payload);
}

RmStatus alloc_subdevice(RmAllocRequest& r) {
  abi::SubdeviceAllocParams p{};
  if (r.params) std::memcpy(&p, r.params, sizeof p);
  if (p.subdevice_id != 0) return st::err_invalid_argument;  // one subdevice per simulated device
  return st::ok;
}

// Only through RM_ALLOC_MEMORY (NVOS02) here.
RmStatus alloc_os_descriptor(RmAllocRequest&) { return st::err_not_supported; }

// The handler of each kind RM_ALLOC creates; a kind without one (the device) needs nothing beyond the shared checks.
constexpr std::pair<RmKind, RmAllocHandler> kAllocHandlers[] = {
    {RmKind::subdevice, alloc_subdevice},
    {RmKind::vaspace, alloc_vaspace},
    {RmKind::memory_virtual, alloc_memory_virtual},
    {RmKind::channel_group, alloc_channel_group},
    {RmKind::context_share, alloc_context_share},
    {RmKind::channel, alloc_channel},
    {RmKind::compute, alloc_engine_object},
    {RmKind::copy, alloc_engine_object},
    {RmKind::memory_local, alloc_memory},
    {RmKind::memory_system, alloc_memory},
    {RmKind::memory_os_descriptor, alloc_os_descriptor},
    {RmKind::debugger, alloc_debugger},
};

RmAllocHandler alloc_handler(RmKind k) {
  for (const auto& [kind, handler] : kAllocHandlers)
    if (kind == k) return handler;
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
int SimNv::State::rm_alloc(int file, void* arg, size_t size) {
  // NVOS21 and NVOS64 share their first 24 bytes (handles, class, params pointer); the size and status differ.
  auto* a21 = static_cast<abi::RmAllocParams*>(arg);
  auto* a64 = static_cast<abi::RmAllocWithRightsParams*>(arg);
  const bool v64 = size == sizeof(abi::RmAllocWithRightsParams);
  const uint32_t params_size = v64 ? a64->params_size : a21->params_size;
  void* params = reinterpret_cast<void*>(static_cast<uintptr_t>(a21->params));
  RmStatus& status = v64 ? a64->status : a21->status;

  std::lock_guard lock(mu);
  if (a21->class_id == cls::root_client) {
    RmHandle h = 0;
    status = tree.new_client(a21->object, file, &h);
    if (status == st::ok) a21->object = h;
    return 0;
  }
  const std::optional<RmKind> kind = kind_of_class(a21->class_id);
  if (!kind || (nvproxy_refusals && nvproxy::refuses_class(a21->class_id))) {
    status = st::err_invalid_class;
    return 0;
  }
  RmHandle handle = a21->object;
  const RmObject* parent = nullptr;
  status = tree.check_alloc(a21->client, a21->parent, *kind, &handle, &parent);
  if (status != st::ok) return 0;

  const ParamRule rule = params_of(*kind);
  if (rule.required && params == nullptr) {
    status = st::err_invalid_argument;  // rmapiParamsAcquire: a required block with a NULL pointer
    return 0;
  }
  if (params != nullptr && params_size != rule.size) {
    status = st::err_invalid_argument;  // stricter than RM, which copies the class's size whatever was said
    return 0;
  }

  RmObject obj;
  obj.handle = handle;
  obj.parent = parent->handle;
  obj.class_id = a21->class_id;
  obj.kind = *kind;
  obj.gpu = parent->gpu;

  if (*kind == RmKind::device) {
    abi::DeviceAllocParams d{};
    if (params) std::memcpy(&d, params, sizeof d);
    if (d.device_id >= gpus.size()) {
      status = st::err_invalid_argument;  // deviceConstruct: no GPU with that device instance
      return 0;
    }
    obj.gpu = static_cast<int>(d.device_id);
  }
  NvGpu& g = *gpus.at(static_cast<size_t>(obj.gpu));
  if (!g.spec->supports_class(a21->class_id)) {
    status = st::err_invalid_class;  // a class of another generation: not in this GPU's class list
    return 0;
  }

  RmAllocRequest request{*this, a21->client, *parent, obj, params, g};
  if (const RmAllocHandler handler = alloc_handler(*kind)) {
    status = handler(request);
    if (status != st::ok) return 0;
  }
  tree.insert(a21->client, std::move(obj));
  a21->object = handle;
  status = st::ok;
  return 0;
}

RmStatus SimNv::State::alloc_channel(RmHandle client, const RmObject& parent, RmObject& obj, void* params) {
  abi::ChannelAllocParams p;
  std::memcpy(&p, params, sizeof p);
  NvGpu& g = *gpus.at(static_cast<size_t>(obj.gpu));
  // kchannelConstruct: a power-of-two ring of at least two entries, at an 8-byte aligned VA.
  if (p.gpfifo_entries < 2 || !std::has_single_bit(p.gpfifo_entries) || p.gpfifo_offset % 8 != 0)
    return st::err_invalid_argument;
  auto ch = std::make_shared<NvChannel>();
  ch->gpu = g.index;
  ch->client = client;
  ch->handle = obj.handle;
  ch->group = parent.kind == RmKind::channel_group ? parent.handle : 0;
  // A channel in a group runs once GPFIFO_SCHEDULE enables the group; one allocated straight under the device
  // would need its own schedule control, which this simulator does not take, so it runs from the start.
  ch->scheduled = ch->group == 0;
  if (p.error_notifier != 0) {
    ch->error_notifier = memory_of(tree, client, p.error_notifier);
    if (!ch->error_notifier) return st::err_object_not_found;
  }
  if (p.context_share != 0) {
    const RmObject* cs = tree.find(client, p.context_share);
    if (cs == nullptr || cs->kind != RmKind::context_share || cs->parent != parent.handle)
      return st::err_object_not_found;
  }
  if (p.userd_memory[0] != 0) {
    ch->userd = memory_of(tree, client, p.userd_memory[0]);
    if (!ch->userd) return st::err_object_not_found;
    if (p.userd_offset[0] % kUserdAlign != 0 || p.userd_offset[0] + abi::kUserdSize > ch->userd->size)
      return st::err_invalid_argument;
    ch->userd_offset = p.userd_offset[0];
  } else {
    // RM allocates USERD itself when the process gives none.
    auto m = std::make_shared<NvMemory>();
    m->where = NvMemory::Where::sysmem;
    m->gpu = g.index;
    m->size = m->page_size = kPage;
    auto b = NvBacking::make("hcq-sim-nv-userd", kPage);
    if (!b) return st::err_no_memory;
    m->backing = *b;
    ch->userd = m;
  }
  uint32_t engine_type = p.engine_type;
  if (engine_type == 0 && parent.kind == RmKind::channel_group)
    engine_type = std::static_pointer_cast<NvChannelGroup>(parent.payload)->engine_type;
  if (engine_type == 0) engine_type = abi::engine_type::graphics;
  ChannelDesc& d = ch->desc;
  if (engine_type == abi::engine_type::graphics) {
    d.engine = NvEngineKind::compute;
  } else if (engine_type >= kEngineCopy0 && engine_type <= kEngineCopyLast) {
    d.engine = NvEngineKind::copy;
    d.engine_instance = engine_type - kEngineCopy0;
  } else {
    return st::err_invalid_argument;
  }
  d.arch = g.spec->arch;
  d.gpu_index = static_cast<uint32_t>(g.index);
  d.channel_id = g.next_channel_id++;
  d.gpfifo_class = obj.class_id;
  d.gpfifo_va = p.gpfifo_offset;
  d.gpfifo_entries = p.gpfifo_entries;
  d.userd_va = SimNv::kUserdAperture + uint64_t{d.channel_id} * SimNv::kUserdStride;
  d.work_submit_token = d.channel_id;
  obj.payload = ch;
  channels[{g.index, d.channel_id}] = ch;
  {
    std::unique_lock dl(doorbell_mu);
    doorbell_channels[{g.index, d.work_submit_token}] = ch;
  }
  to_start.push_back(ch);
  return st::ok;
}

int SimNv::State::rm_free(void* arg, std::vector<RmObject>& freed) {
  auto* p = static_cast<abi::RmFreeParams*>(arg);
  std::lock_guard lock(mu);
  p->status = tree.free(p->client, p->object, freed);
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// NVOS02 on /dev/nvidia<N>: OS-descriptor memory, the process's own pages.
int SimNv::State::rm_alloc_memory(void* arg) {
  auto* w = static_cast<abi::RmAllocMemoryWithFd*>(arg);
  abi::RmAllocMemoryParams& p = w->params;
  std::lock_guard lock(mu);
  if (p.class_id != cls::memory_system_os_descriptor) {
    p.status = kind_of_class(p.class_id) ? st::err_not_supported : st::err_invalid_class;
    return 0;
  }
  RmHandle handle = p.object;
  const RmObject* parent = nullptr;
  p.status = tree.check_alloc(p.client, p.parent, RmKind::memory_os_descriptor, &handle, &parent);
  if (p.status != st::ok) return 0;
  const uint64_t size = p.limit + 1;
  // RmAllocOsDescriptor: page-aligned, non-empty, addressable pages.
  if (p.memory == 0 || p.memory % kPage != 0 || p.limit == ~uint64_t{0} || size % kPage != 0) {
    p.status = st::err_invalid_argument;
    return 0;
  }
  auto m = std::make_shared<NvMemory>();
  m->where = NvMemory::Where::os_descriptor;
  m->gpu = static_cast<size_t>(parent->gpu);
  m->size = size;
  m->page_size = kPage;
  m->backing.host = reinterpret_cast<std::byte*>(static_cast<uintptr_t>(p.memory));
  m->backing.size = size;
  RmObject obj;
  obj.handle = handle;
  obj.parent = parent->handle;
  obj.class_id = p.class_id;
  obj.kind = RmKind::memory_os_descriptor;
  obj.gpu = parent->gpu;
  obj.payload = m;
  tree.insert(p.client, std::move(obj));
  p.object = handle;
  p.status = st::ok;
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// NVOS33: prepares the mmap of `fd`.
int SimNv::State::rm_map_memory(void* arg) {
  auto* w = static_cast<abi::RmMapMemoryWithFd*>(arg);
  abi::RmMapMemoryParams& p = w->params;
  const std::optional<int> target = own_file(w->fd);
  std::lock_guard lock(mu);
  const RmObject* mem = tree.find(p.client, p.memory);
  const RmObject* dev = tree.find(p.client, p.device);
  if (!tree.client_exists(p.client)) {
    p.status = st::err_invalid_client;
    return 0;
  }
  if (mem == nullptr || dev == nullptr) {
    p.status = st::err_object_not_found;
    return 0;
  }
  if ((dev->kind != RmKind::device && dev->kind != RmKind::subdevice) || dev->gpu != mem->gpu) {
    p.status = st::err_invalid_object_parent;
    return 0;
  }
  NvFile::MmapContext ctx;
  if (mem->kind == RmKind::usermode) {
    if (p.offset != 0 || p.length == 0 || p.length > nv::gpfifo::kUsermodeSize) {
      p.status = st::err_invalid_limit;
      return 0;
    }
    ctx.usermode_gpu = static_cast<size_t>(mem->gpu);
  } else if (mem->kind == RmKind::memory_local || mem->kind == RmKind::memory_system) {
    auto m = std::static_pointer_cast<NvMemory>(mem->payload);
    if (p.length == 0 || p.offset % kPage != 0 || p.offset > m->size || p.length > m->size - p.offset) {
      p.status = st::err_invalid_limit;
      return 0;
    }
    ctx.memory = m;
  } else {
    p.status = st::err_invalid_object;  // not a mappable memory object
    return 0;
  }
  NvFile* f = target ? file(*target) : nullptr;
  if (f == nullptr || f->kind == NvFile::Kind::uvm) {
    p.status = st::err_invalid_argument;  // rm_create_mmap_context: not an nvidia fd
    return 0;
  }
  // RmCreateMmapContextLocked: what lies in no BAR of the GPU (RM system memory) is mapped through the control
  // device, so the file must be an nvidiactl one; BAR memory (VRAM, the usermode registers) through the GPU's own
  // /dev/nvidia<N> (nv_add_mapping_context_to_file checks the file's device). Either mismatch: invalid argument.
  const bool sysmem = mem->kind == RmKind::memory_system;
  if (sysmem ? f->kind != NvFile::Kind::ctl : f->kind != NvFile::Kind::gpu || f->gpu != static_cast<size_t>(mem->gpu)) {
    p.status = st::err_invalid_argument;
    return 0;
  }
  if (f->mmap_context) {
    p.status = st::err_state_in_use;  // a mapping prepared on this file and not yet mmapped
    return 0;
  }
  ctx.offset = p.offset;
  ctx.length = p.length;
  f->mmap_context = ctx;
  // A cookie RM_UNMAP_MEMORY gets back; not an address the process may use.
  p.linear_address = 0xdead000000000000ull | (uint64_t{p.memory} << 12);
  p.status = st::ok;
  return 0;
}

int SimNv::State::rm_unmap_memory(void* arg) {
  auto* p = static_cast<abi::RmUnmapMemoryParams*>(arg);
  std::lock_guard lock(mu);
  if (!tree.client_exists(p->client)) p->status = st::err_invalid_client;
  else if (tree.find(p->client, p->memory) == nullptr || tree.find(p->client, p->device) == nullptr)
    p->status = st::err_object_not_found;
  else p->status = st::ok;
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// NVOS46 (in the layout of the branch this driver reports): maps memory into an NV01_MEMORY_VIRTUAL range.
int SimNv::State::rm_map_memory_dma(void* arg, size_t size) {
  const abi::MapMemoryDmaLayout& layout = branch->map_memory_dma;
  auto bytes = std::span<std::byte>(static_cast<std::byte*>(arg), size);
  abi::MapMemoryDma p = abi::decode_map_memory_dma(layout, bytes);
  auto finish = [&](RmStatus s) {
    p.status = s;
    abi::encode_map_memory_dma(layout, p, bytes);
    return 0;
  };
  std::lock_guard lock(mu);
  if (!tree.client_exists(p.client)) return finish(st::err_invalid_client);
  const RmObject* dma = tree.find(p.client, p.dma);
  if (dma == nullptr) return finish(st::err_object_not_found);
  if (dma->kind != RmKind::memory_virtual) return finish(st::err_invalid_object_handle);
  std::shared_ptr<NvMemory> m = memory_of(tree, p.client, p.memory);
  if (!m) return finish(st::err_object_not_found);
  const auto& range = static_cast<const NvVirtualRange&>(*dma->payload);
  const uint64_t length = p.length ? p.length : m->size - std::min(p.offset, m->size);
  if (p.offset > m->size || length > m->size - p.offset || length == 0) return finish(st::err_invalid_limit);
  NvGpu& g = *gpus.at(range.gpu);
  std::unique_lock vm(vm_mu);
  uint64_t va = p.dma_offset;
  const bool fixed = (p.flags >> abi::nvos46_flags::dma_offset_fixed_shift) & 1;
  if (!fixed) {
    // First fit above the range's base, page aligned.
    va = align_up(std::max<uint64_t>(range.base, kPage), m->page_size);
    for (const auto& [at, mp] : g.dma_vm)
      if (at < va + length && va < at + mp.size) va = align_up(at + mp.size, m->page_size);
  }
  if (va % kPage != 0) return finish(st::err_invalid_offset);
  if (va < range.base || va + length - 1 > range.limit || va + length < va) return finish(st::err_invalid_limit);
  auto next = g.dma_vm.lower_bound(va);
  if (next != g.dma_vm.end() && next->first < va + length) return finish(st::err_invalid_address);
  if (next != g.dma_vm.begin() && std::prev(next)->first + std::prev(next)->second.size > va)
    return finish(st::err_invalid_address);
  NvGpuMapping mp;
  mp.memory = m;
  mp.va = va;
  mp.size = length;
  mp.offset = p.offset;
  mp.client = p.client;
  mp.dma = p.dma;
  g.dma_vm[va] = std::move(mp);
  sync_view(g);
  p.dma_offset = va;
  return finish(st::ok);
}

int SimNv::State::rm_unmap_memory_dma(void* arg) {
  auto* p = static_cast<abi::RmUnmapMemoryDmaParams*>(arg);
  std::lock_guard lock(mu);
  if (!tree.client_exists(p->client)) {
    p->status = st::err_invalid_client;
    return 0;
  }
  const RmObject* dma = tree.find(p->client, p->dma);
  if (dma == nullptr || dma->kind != RmKind::memory_virtual) {
    p->status = st::err_object_not_found;
    return 0;
  }
  NvGpu& g = *gpus.at(static_cast<const NvVirtualRange&>(*dma->payload).gpu);
  std::unique_lock vm(vm_mu);
  auto it = g.dma_vm.find(p->dma_offset);
  if (it == g.dma_vm.end() || it->second.dma != p->dma || it->second.client != p->client) {
    p->status = st::err_invalid_offset;
    return 0;
  }
  g.dma_vm.erase(it);
  sync_view(g);
  p->status = st::ok;
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
void SimNv::State::forget_freed_locked(const std::vector<RmObject>& freed,
                                       std::vector<std::shared_ptr<NvChannel>>& dying) {
  for (const RmObject& o : freed) {
    if (o.kind == RmKind::channel && o.payload) {
      auto ch = std::static_pointer_cast<NvChannel>(o.payload);
      channels.erase({ch->gpu, ch->desc.channel_id});
      {
        std::unique_lock dl(doorbell_mu);
        doorbell_channels.erase({ch->gpu, ch->desc.work_submit_token});
      }
      dying.push_back(ch);
    } else if (o.kind == RmKind::memory_virtual && o.payload) {
      NvGpu& g = *gpus.at(static_cast<const NvVirtualRange&>(*o.payload).gpu);
      std::unique_lock vm(vm_mu);
      std::erase_if(g.dma_vm, [&](const auto& kv) { return kv.second.dma == o.handle; });
      sync_view(g);
    } else if ((o.kind == RmKind::compute || o.kind == RmKind::copy) && o.payload) {
      const auto& e = static_cast<const NvEngineObject&>(*o.payload);
      if (auto ch = e.channel.lock()) {
        auto it = std::find(ch->engine_classes.begin(), ch->engine_classes.end(), e.class_id);
        if (it != ch->engine_classes.end()) ch->engine_classes.erase(it);
      }
    } else if (o.kind == RmKind::memory_local && o.payload) {
      NvGpu& g = *gpus.at(static_cast<size_t>(o.gpu));
      g.vram_used -= std::min(g.vram_used, static_cast<const NvMemory&>(*o.payload).size);
    }
  }
}

}  // namespace hcq::sim
