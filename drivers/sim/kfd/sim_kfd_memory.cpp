// The simulated KFD's memory: buffer objects (allocate, free, map on GPUs), GPU address translation, and the mmap of
// /dev/kfd and render-node offsets.
#include "sim/kfd/sim_kfd.hpp"

#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "amd/kfd/compat/kfd_runtime_enable.hpp"
#include "amd/target.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"
#include "sim/common/memfd_backing.hpp"
#include "sim/kfd/sim_kfd_objects.hpp"

namespace hcq::sim {

using namespace sim_kfd_detail;

// ---------------------------------------------------------------------------------------------------------------
// Memory

int SimKfd::alloc_memory(void* a) {
  auto* args = static_cast<kfd_ioctl_alloc_memory_of_gpu_args*>(a);
  std::lock_guard lock(mu_);
  Gpu* g = gpu_by_id(args->gpu_id);
  if (g == nullptr) return -EINVAL;
  if (!g->acquired) return -ENODEV;  // kfd_bind_process_to_device: no VM acquired yet
  // Stricter than the kernel, which ignores bits it does not know.
  if (args->flags & ~kAllocKnownFlags) return -EINVAL;
  if (args->size == 0) return -EINVAL;
  const uint64_t size = align_up(args->size, kPage);
  if (size < args->size) return -EINVAL;  // overflow
  if (args->va_addr % kPage != 0 || args->va_addr < kGpuVmBase || args->va_addr >= kUserVaTop ||
      size > kUserVaTop - args->va_addr)
    return -EINVAL;  // amdgpu_vm_bo_map: unaligned or outside the GPUVM aperture

  auto bo = std::make_shared<Bo>();
  bo->gpu_id = g->gpu_id;
  bo->gpu_index = g->index;
  bo->va = args->va_addr;
  bo->size = size;
  bo->flags = args->flags;
  // The first memory type bit wins, as in amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu.
  const uint32_t f = args->flags;
  if (f & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) {
    if (g->vram_used + size > g->spec->vram_bytes) return -ENOMEM;
    bo->kind = Bo::Kind::vram;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_GTT) {
    bo->kind = Bo::Kind::gtt;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
    const uint64_t user = args->mmap_offset;
    if (user == 0 || user % kPage != 0 || !access_ok(user, size)) return -EINVAL;
    bo->kind = Bo::Kind::userptr;
    bo->host = reinterpret_cast<std::byte*>(user);
    bo->mmap_offset = user;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) {
    if (args->size != kDoorbellSliceBytes) return -EINVAL;
    bo->kind = Bo::Kind::doorbell;
    bo->fd = g->doorbells.fd;
    bo->host = g->doorbells.host;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) {
    if (args->size != kPage) return -EINVAL;
    bo->kind = Bo::Kind::mmio;
    bo->fd = g->mmio.fd;
    bo->host = g->mmio.host;
  } else {
    return -EINVAL;  // no memory type
  }
  if (bo->kind == Bo::Kind::vram || bo->kind == Bo::Kind::gtt) {
    auto b = MemfdBacking::make(bo->kind == Bo::Kind::vram ? "hcq-sim-vram" : "hcq-sim-gtt", size);
    if (!b) return -ENOMEM;
    bo->fd = b->fd;
    bo->host = b->host;
    bo->owns_fd = true;
    if (bo->kind == Bo::Kind::vram) g->vram_used += size;
  }
  if (bo->kind != Bo::Kind::userptr) {
    bo->mmap_offset = next_mmap_offset_;
    next_mmap_offset_ += size;
  }
  bo->handle = (uint64_t{g->gpu_id} << 32) | g->next_idr++;
  args->handle = bo->handle;
  args->mmap_offset = bo->mmap_offset;
  bos_.emplace(bo->handle, std::move(bo));
  return 0;
}

int SimKfd::free_memory(void* a) {
  auto* args = static_cast<kfd_ioctl_free_memory_of_gpu_args*>(a);
  std::lock_guard lock(mu_);
  if (gpu_by_id(static_cast<uint32_t>(args->handle >> 32)) == nullptr) return -EINVAL;
  auto it = bos_.find(args->handle);
  if (it == bos_.end()) return -EINVAL;
  Bo& bo = *it->second;
  if (!bo.mapped_on.empty()) return -EBUSY;  // "BO VA ... is still mapped"
  if (bo.kind == Bo::Kind::vram) gpus_[bo.gpu_index]->vram_used -= bo.size;
  bos_.erase(it);  // the event page keeps its buffer alive through event_page_bo_, as the kernel's reference does
  return 0;
}

bool SimKfd::range_mapped(const Gpu& g, uint64_t va, uint64_t size) const {
  if (size == 0 || va + size < va) return false;
  auto it = g.vm.upper_bound(va);
  if (it == g.vm.begin()) return false;
  --it;
  const Bo& bo = *it->second;
  return va >= bo.va && va + size <= bo.va + bo.size;
}

int SimKfd::map_memory(void* a, bool map) {
  auto* args = static_cast<kfd_ioctl_map_memory_to_gpu_args*>(a);  // unmap args have the same layout
  static_assert(sizeof(kfd_ioctl_map_memory_to_gpu_args) == sizeof(kfd_ioctl_unmap_memory_from_gpu_args));
  if (args->n_devices == 0) return -EINVAL;
  if (args->n_success > args->n_devices) return -EINVAL;
  if (args->n_devices > 65536) return -ENOMEM;  // the kernel's kmalloc_array of the id list fails first
  if (args->device_ids_array_ptr == 0) return -EFAULT;
  std::vector<uint32_t> ids(args->n_devices);
  std::memcpy(ids.data(), reinterpret_cast<const void*>(args->device_ids_array_ptr), ids.size() * 4);

  std::lock_guard lock(mu_);
  if (gpu_by_id(static_cast<uint32_t>(args->handle >> 32)) == nullptr) return -EINVAL;
  std::shared_ptr<Bo> bo = bo_by_handle(args->handle);
  if (!bo) return -EINVAL;
  for (uint32_t i = args->n_success; i < args->n_devices; ++i) {
    Gpu* g = gpu_by_id(ids[i]);
    if (g == nullptr) return -EINVAL;
    if (!g->acquired) return -ENODEV;
    std::unique_lock vm(vm_mu_);
    const bool mapped = bo->mapped_on.count(g->gpu_id) != 0;
    if (map) {
      if (!mapped) {
        // amdgpu_vm_bo_map: a range that overlaps another mapping on this VM is refused.
        auto next = g->vm.lower_bound(bo->va);
        if (next != g->vm.end() && next->first < bo->va + bo->size) return -EINVAL;
        if (next != g->vm.begin()) {
          auto prev = std::prev(next);
          if (prev->second->va + prev->second->size > bo->va) return -EINVAL;
        }
        g->vm.emplace(bo->va, bo.get());
        bo->mapped_on.insert(g->gpu_id);
        // Memory with an fd shows in the GPU's mirror with the buffer's permissions (userptr pages cannot). The
        // cache reaches memory through the simulator's own mapping, which the view keeps while it shows the buffer:
        // a process's teardown drops its buffers while its queues' runners may still run kernels on them.
        g->view->map(GpuView::Range{bo->va, bo->size, bo->fd, 0, (bo->flags & KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) != 0,
                                    (bo->flags & KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) != 0, bo->host, bo});
      }
    } else {
      if (!mapped) return -EINVAL;  // "BO VA ... is not mapped to vm"
      g->vm.erase(bo->va);
      bo->mapped_on.erase(g->gpu_id);
      g->view->unmap(bo->va, bo->size);
    }
    args->n_success = i + 1;
  }
  return 0;
}

GpuView* SimKfd::view(uint32_t gpu_id) const {
  for (const auto& g : gpus_)
    if (g->gpu_id == gpu_id) return g->view.get();
  return nullptr;
}

std::byte* SimKfd::translate(uint32_t gpu_id, uint64_t va, uint64_t size) {
  std::shared_lock vm(vm_mu_);
  const Gpu* g = nullptr;
  for (const auto& x : gpus_)
    if (x->gpu_id == gpu_id) g = x.get();
  if (g == nullptr || !range_mapped(*g, va, size)) return nullptr;
  const Bo& bo = *std::prev(g->vm.upper_bound(va))->second;
  if (bo.process_view != nullptr && va + size <= bo.va + bo.process_view_bytes) return bo.process_view + (va - bo.va);
  return bo.host + (va - bo.va);
}

void* SimKfd::mmap(int file, void* addr, size_t length, int prot, int flags, off_t offset, int* err) {
  const uint64_t off = static_cast<uint64_t>(offset);
  if (off % kPage != 0 || length == 0) {
    *err = EINVAL;
    return MAP_FAILED;
  }
  std::unique_lock lock(mu_);
  auto fit = files_.find(file);
  if (fit == files_.end()) {
    *err = EBADF;
    return MAP_FAILED;
  }
  const File f = fit->second;
  int fd = -1;
  off_t fd_offset = 0;
  bool doorbell = false;
  size_t doorbell_gpu = 0;
  Bo* viewed = nullptr;  // a buffer the process now maps (its byte 0 at the returned address)
  if (f.kind == File::Kind::render) {
    // A buffer's render-node offset, exactly (drm_gem_mmap looks the offset up exactly); no larger than the buffer.
    Bo* found = nullptr;
    for (const auto& [h, bo] : bos_)
      if (bo->kind != Bo::Kind::userptr && bo->gpu_index == f.gpu_index && bo->mmap_offset == off) found = bo.get();
    viewed = found;
    if (found == nullptr || length > found->size) {
      *err = EINVAL;
      return MAP_FAILED;
    }
    fd = found->fd;
    doorbell = found->kind == Bo::Kind::doorbell;
    doorbell_gpu = found->gpu_index;
  } else {
    const uint64_t type = off >> kMmapTypeShift;
    const uint32_t gpu_id = static_cast<uint32_t>((off >> kMmapGpuIdShift) & 0xffff);
    if (type == kMmapTypeDoorbell || type == kMmapTypeMmio) {
      Gpu* g = gpu_by_id(gpu_id);
      const uint64_t want = type == kMmapTypeDoorbell ? kDoorbellSliceBytes : kPage;
      if (g == nullptr || length != want) {
        *err = EINVAL;
        return MAP_FAILED;
      }
      fd = type == kMmapTypeDoorbell ? g->doorbells.fd : g->mmio.fd;
      doorbell = type == kMmapTypeDoorbell;
      doorbell_gpu = g->index;
    } else if (type == kMmapTypeEvents) {
      // The event page: its size must round to the same page order as KFD_SIGNAL_EVENT_LIMIT slots.
      const uint64_t pages_bytes = align_up(length, kPage);
      if (!event_page_bo_ || pages_bytes <= kEventPageBytes / 2 || pages_bytes > kEventPageBytes) {
        *err = EINVAL;
        return MAP_FAILED;
      }
      fd = event_page_bo_->fd;
      fd_offset = 0;
    } else {
      *err = EFAULT;
      return MAP_FAILED;
    }
  }
  void* p = ::mmap(addr, length, prot, (flags & ~MAP_ANONYMOUS & ~MAP_PRIVATE) | MAP_SHARED, fd, fd_offset);
  if (p == MAP_FAILED) {
    *err = errno;
    return MAP_FAILED;
  }
  {
    std::unique_lock vm(vm_mu_);
    forget_process_views(p, length);  // a mapping over an older one replaces it
    if (viewed != nullptr) {
      viewed->process_view = static_cast<std::byte*>(p);
      viewed->process_view_bytes = length;
    }
  }
  lock.unlock();
  if (doorbell) {
    std::unique_lock dl(doorbell_mu_);
    doorbell_maps_[reinterpret_cast<uintptr_t>(p)] = doorbell_gpu;
  }
  return p;
}

void SimKfd::forget_process_views(void* addr, size_t length) {
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  for (const auto& [h, bo] : bos_) {
    const auto view = reinterpret_cast<uintptr_t>(bo->process_view);
    if (bo->process_view != nullptr && view < lo + length && lo < view + bo->process_view_bytes) {
      bo->process_view = nullptr;  // even a partial unmap: the simulator's own mapping serves it from now on
      bo->process_view_bytes = 0;
    }
  }
}

void SimKfd::on_munmap(void* addr, size_t length) {
  {
    std::lock_guard lock(mu_);
    std::unique_lock vm(vm_mu_);
    forget_process_views(addr, length);
  }
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  std::unique_lock dl(doorbell_mu_);
  for (auto it = doorbell_maps_.lower_bound(lo); it != doorbell_maps_.end() && it->first < lo + length;)
    it = doorbell_maps_.erase(it);
}

}  // namespace hcq::sim
