// The simulated nvidia-uvm: the ioctls the backend uses, with UVM's checks and statuses (uvm.c, uvm_va_space.c,
// uvm_map_external.c, uvm_va_range.c). The request number is the command; the block's size is the command's; the
// ioctl returns 0 with the NV_STATUS in the block, or -EINVAL for a command UVM does not know.
#include <cerrno>
#include <cstring>

#include "nv/rm/abi/status.hpp"
#include "nv/rm/abi/uvm.hpp"
#include "sim/nv/sim_nv_state.hpp"

namespace hcq::sim {

namespace abi = nv::abi;
namespace st = nv::abi::status;
namespace uvm = nv::abi::uvm;

namespace {

constexpr uint64_t k4K = 4096;
constexpr uint32_t kMaxMappingType = 3;  // UvmGpuMappingType: default, read/write/atomic, read/write, read-only
constexpr uint32_t kMaxCachingType = 2;  // UvmGpuCachingType: default, force uncached, force cached

// uvm_api_range_invalid_4k
bool range_invalid_4k(uint64_t base, uint64_t length) {
  return base % k4K != 0 || length % k4K != 0 || base == 0 || length == 0 || base + length < base;
}

bool overlaps(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) { return a < b + blen && b < a + alen; }

// Every UVM block ends in the status the driver writes; the ioctl itself succeeds.
template <class P>
int reply(P* p, RmStatus s) {
  p->status = s;
  return 0;
}

}  // namespace

int SimNv::State::uvm_ioctl(int id, unsigned long request, void* arg) {
  if (arg == nullptr) return -EFAULT;
  // Where an open(/dev/nvidia-uvm) stands; the fd named in MM_INITIALIZE and RM fds are resolved before locking.
  std::optional<int> other;
  switch (request) {
    case uvm::mm_initialize: other = own_file(static_cast<abi::UvmMmInitializeParams*>(arg)->uvm_fd); break;
    case uvm::register_gpu_vaspace:
      other = own_file(static_cast<abi::UvmRegisterGpuVaspaceParams*>(arg)->rm_ctrl_fd);
      break;
    case uvm::register_channel: other = own_file(static_cast<abi::UvmRegisterChannelParams*>(arg)->rm_ctrl_fd); break;
    case uvm::map_external_allocation:
      other = own_file(static_cast<abi::UvmMapExternalAllocationParams*>(arg)->rm_ctrl_fd);
      break;
    default: break;
  }
  std::lock_guard lock(mu);
  NvFile* f = file(id);
  if (f == nullptr) return -EBADF;

  if (request == uvm::initialize) {
    auto* p = static_cast<abi::UvmInitializeParams*>(arg);
    if (f->uvm == NvFile::Uvm::uninitialized) {
      f->uvm = NvFile::Uvm::va_space;
      f->uvm_space = std::make_unique<NvUvmSpace>();
      f->uvm_space->flags = p->flags;
      p->status = st::ok;
    } else if (f->uvm == NvFile::Uvm::va_space) {
      p->status = p->flags == f->uvm_space->flags ? st::ok : st::err_invalid_argument;
    } else {
      p->status = st::err_invalid_argument;
    }
    return 0;
  }
  if (request == uvm::mm_initialize) {
    auto* p = static_cast<abi::UvmMmInitializeParams*>(arg);
    NvFile* va = other ? file(*other) : nullptr;
    if (f->uvm != NvFile::Uvm::uninitialized) p->status = st::err_invalid_state;
    else if (va == nullptr || va->kind != NvFile::Kind::uvm || va->uvm != NvFile::Uvm::va_space)
      p->status = st::err_invalid_argument;
    else {
      f->uvm = NvFile::Uvm::mm;
      p->status = st::ok;
    }
    return 0;
  }
  if (request == uvm::deinitialize) return 0;

  // Everything else needs an initialized VA space on this fd (UVM_ROUTE_CMD_*_INIT_CHECK).
  NvUvmSpace* vs = f->uvm == NvFile::Uvm::va_space ? f->uvm_space.get() : nullptr;
  auto gpu_by_uuid = [&](const abi::Uuid& u) -> NvGpu* {
    for (auto& g : gpus)
      if (std::memcmp(g->uuid.bytes, u.bytes, sizeof u.bytes) == 0) return g.get();
    return nullptr;
  };
  auto ctl_ok = [&]() {
    NvFile* c = other ? file(*other) : nullptr;
    return c != nullptr && c->kind == NvFile::Kind::ctl;
  };
  // Drops this file's mappings of [base, base + length) on every GPU (or on one). A mapping that straddles an end
  // keeps its part outside (uvm_ext_gpu_map_split).
  auto unmap = [&](uint64_t base, uint64_t length, const NvGpu* only) {
    const uint64_t end = base + length;  // callers pass end <= 2^64 - 1 or the whole space
    std::unique_lock vm(vm_mu);
    for (auto& g : gpus) {
      if (only && g.get() != only) continue;
      std::vector<NvGpuMapping> keep;
      std::erase_if(g->uvm_vm, [&](const auto& kv) {
        const NvGpuMapping& m = kv.second;
        if (m.uvm_file != id || !overlaps(m.va, m.size, base, length)) return false;
        if (m.va < base) {
          NvGpuMapping head = m;
          head.size = base - m.va;
          keep.push_back(head);
        }
        if (length != ~uint64_t{0} && m.va + m.size > end) {
          NvGpuMapping tail = m;
          tail.va = end;
          tail.size = m.va + m.size - end;
          tail.offset = m.offset + (end - m.va);
          keep.push_back(tail);
        }
        return true;
      });
      for (NvGpuMapping& m : keep) g->uvm_vm[m.va] = std::move(m);
      sync_view(*g);
    }
  };

  switch (request) {
    case uvm::register_gpu: {
      auto* p = static_cast<abi::UvmRegisterGpuParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      NvGpu* g = gpu_by_uuid(p->gpu);
      if (g == nullptr) return reply(p, st::err_gpu_uuid_not_found);
      if (vs->gpus.count(g->index)) return reply(p, st::err_invalid_device);
      vs->gpus.insert(g->index);
      p->numa_enabled = 0;
      p->numa_node_id = -1;
      p->status = st::ok;
      return 0;
    }
    case uvm::unregister_gpu: {
      auto* p = static_cast<abi::UvmUnregisterGpuParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      NvGpu* g = gpu_by_uuid(p->gpu);
      if (g == nullptr || !vs->gpus.count(g->index)) return reply(p, st::err_invalid_device);
      vs->gpus.erase(g->index);
      vs->vaspaces.erase(g->index);
      std::erase_if(vs->ranges, [&](const auto& kv) { return !kv.second.external && kv.second.gpu == g->index; });
      unmap(0, ~uint64_t{0}, g);
      p->status = st::ok;
      return 0;
    }
    case uvm::register_gpu_vaspace: {
      auto* p = static_cast<abi::UvmRegisterGpuVaspaceParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      NvGpu* g = gpu_by_uuid(p->gpu);
      if (g == nullptr || !vs->gpus.count(g->index) || vs->vaspaces.count(g->index))
        return reply(p, st::err_invalid_device);
      if (!ctl_ok()) return reply(p, st::err_invalid_argument);
      const RmObject* v = tree.find(p->client, p->vaspace);
      if (v == nullptr || v->kind != RmKind::vaspace || v->gpu != static_cast<int>(g->index))
        return reply(p, st::err_object_not_found);
      vs->vaspaces[g->index] = {p->client, p->vaspace};
      p->status = st::ok;
      return 0;
    }
    case uvm::unregister_gpu_vaspace: {
      auto* p = static_cast<abi::UvmUnregisterGpuVaspaceParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      NvGpu* g = gpu_by_uuid(p->gpu);
      if (g == nullptr || !vs->vaspaces.count(g->index)) return reply(p, st::err_invalid_device);
      vs->vaspaces.erase(g->index);
      unmap(0, ~uint64_t{0}, g);
      p->status = st::ok;
      return 0;
    }
    case uvm::register_channel: {
      auto* p = static_cast<abi::UvmRegisterChannelParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      NvGpu* g = gpu_by_uuid(p->gpu);
      if (g == nullptr || !vs->vaspaces.count(g->index)) return reply(p, st::err_invalid_device);
      if (!ctl_ok()) return reply(p, st::err_invalid_argument);
      const RmObject* c = tree.find(p->client, p->channel);
      if (c == nullptr || c->kind != RmKind::channel || c->gpu != static_cast<int>(g->index))
        return reply(p, st::err_object_not_found);
      if (range_invalid_4k(p->base, p->length)) return reply(p, st::err_invalid_address);
      for (const auto& [b, r] : vs->ranges)
        if (overlaps(b, r.length, p->base, p->length)) return reply(p, st::err_uvm_address_in_use);
      NvUvmSpace::Range r;
      r.base = p->base;
      r.length = p->length;
      r.external = false;
      r.gpu = g->index;
      r.client = p->client;
      r.channel = p->channel;
      vs->ranges[p->base] = r;
      p->status = st::ok;
      return 0;
    }
    case uvm::unregister_channel: {
      auto* p = static_cast<abi::UvmUnregisterChannelParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      const auto n = std::erase_if(vs->ranges, [&](const auto& kv) {
        return !kv.second.external && kv.second.client == p->client && kv.second.channel == p->channel;
      });
      p->status = n ? st::ok : st::err_invalid_channel;
      return 0;
    }
    case uvm::create_external_range: {
      auto* p = static_cast<abi::UvmCreateExternalRangeParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      if (range_invalid_4k(p->base, p->length)) return reply(p, st::err_invalid_address);
      for (const auto& [b, r] : vs->ranges)
        if (overlaps(b, r.length, p->base, p->length)) return reply(p, st::err_uvm_address_in_use);
      NvUvmSpace::Range r;
      r.base = p->base;
      r.length = p->length;
      vs->ranges[p->base] = r;
      p->status = st::ok;
      return 0;
    }
    case uvm::map_external_allocation: {
      auto* p = static_cast<abi::UvmMapExternalAllocationParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      if (range_invalid_4k(p->base, p->length)) return reply(p, st::err_invalid_address);
      if (p->gpu_count == 0 || p->gpu_count > abi::kUvmMaxGpus) return reply(p, st::err_invalid_argument);
      // The external range holding base must hold the whole mapping.
      auto it = vs->ranges.upper_bound(p->base);
      if (it == vs->ranges.begin()) return reply(p, st::err_invalid_address);
      --it;
      const NvUvmSpace::Range& r = it->second;
      if (!r.external || p->base - r.base >= r.length || p->length > r.length - (p->base - r.base))
        return reply(p, st::err_invalid_address);
      std::vector<NvGpu*> on;
      for (uint64_t i = 0; i < p->gpu_count; ++i) {
        const abi::UvmGpuMappingAttributes& a = p->per_gpu[i];
        if (a.mapping_type > kMaxMappingType || a.caching_type > kMaxCachingType)
          return reply(p, st::err_invalid_argument);
        NvGpu* g = gpu_by_uuid(a.gpu);
        if (g == nullptr || !vs->vaspaces.count(g->index)) return reply(p, st::err_invalid_device);
        on.push_back(g);
      }
      if (!ctl_ok()) return reply(p, st::err_invalid_argument);
      if (!tree.client_exists(p->client)) return reply(p, st::err_invalid_client);
      const RmObject* mo = tree.find(p->client, p->memory);
      if (mo == nullptr || (mo->kind != RmKind::memory_local && mo->kind != RmKind::memory_system &&
                            mo->kind != RmKind::memory_os_descriptor))
        return reply(p, st::err_object_not_found);
      auto mem = std::static_pointer_cast<NvMemory>(mo->payload);
      if (p->offset % k4K != 0 || p->offset > mem->size || p->length > mem->size - p->offset)
        return reply(p, st::err_invalid_offset);
      for (NvGpu* g : on) {
        unmap(p->base, p->length, g);  // what was mapped there before goes (uvm_unmap_external_in_range)
        NvGpuMapping m;
        m.memory = mem;
        m.va = p->base;
        m.size = p->length;
        m.offset = p->offset;
        m.uvm_file = id;
        std::unique_lock vm(vm_mu);
        g->uvm_vm[p->base] = std::move(m);
        sync_view(*g);
      }
      p->status = st::ok;
      return 0;
    }
    case uvm::unmap_external: {
      auto* p = static_cast<abi::UvmUnmapExternalParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      if (range_invalid_4k(p->base, p->length)) return reply(p, st::err_invalid_address);
      auto it = vs->ranges.upper_bound(p->base);
      if (it == vs->ranges.begin()) return reply(p, st::err_invalid_address);
      --it;
      const NvUvmSpace::Range& r = it->second;
      if (!r.external || p->base - r.base >= r.length || p->length > r.length - (p->base - r.base))
        return reply(p, st::err_invalid_address);
      NvGpu* g = gpu_by_uuid(p->gpu);
      if (g == nullptr || !vs->gpus.count(g->index)) return reply(p, st::err_invalid_device);
      unmap(p->base, p->length, g);
      p->status = st::ok;
      return 0;
    }
    case uvm::free: {
      auto* p = static_cast<abi::UvmFreeParams*>(arg);
      if (!vs) return reply(p, st::err_illegal_action);
      auto rit = vs->ranges.find(p->base);
      if (rit == vs->ranges.end() || !rit->second.external) return reply(p, st::err_invalid_address);
      unmap(rit->second.base, rit->second.length, nullptr);
      vs->ranges.erase(rit);
      p->status = st::ok;
      return 0;
    }
    default: return -EINVAL;  // uvm_test_ioctl: not a command this UVM knows
  }
}

void SimNv::State::uvm_file_closed(int id) {
  std::unique_lock vm(vm_mu);
  for (auto& g : gpus) {
    std::erase_if(g->uvm_vm, [&](const auto& kv) { return kv.second.uvm_file == id; });
    sync_view(*g);
  }
}

}  // namespace hcq::sim
