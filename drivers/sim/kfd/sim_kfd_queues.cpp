// The simulated KFD's queues: CREATE_QUEUE / DESTROY_QUEUE, doorbell writes reaching a queue's runner, queue state.
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
// Queues

int SimKfd::create_queue(void* a) {
  auto* args = static_cast<kfd_ioctl_create_queue_args*>(a);
  // set_queue_properties_from_user
  if (args->queue_percentage > kMaxQueuePercentage) return -EINVAL;
  if (args->queue_priority > kMaxQueuePriority) return -EINVAL;
  if (args->ring_base_address && !access_ok(args->ring_base_address, args->ring_size)) return -EFAULT;
  if (args->ring_size != 0 && !std::has_single_bit(args->ring_size)) return -EINVAL;
  if (!access_ok(args->read_pointer_address, 4) || !access_ok(args->write_pointer_address, 4)) return -EFAULT;
  if (args->eop_buffer_address && !access_ok(args->eop_buffer_address, args->eop_buffer_size)) return -EFAULT;
  if (args->ctx_save_restore_address && !access_ok(args->ctx_save_restore_address, args->ctx_save_restore_size))
    return -EFAULT;
  SimQueueType type;
  switch (args->queue_type) {
    case KFD_IOC_QUEUE_TYPE_COMPUTE: type = SimQueueType::compute_pm4; break;
    case KFD_IOC_QUEUE_TYPE_SDMA:
    case KFD_IOC_QUEUE_TYPE_SDMA_XGMI: type = SimQueueType::sdma; break;
    case KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: type = SimQueueType::compute_aql; break;
    default: return -kENOTSUPP;
  }
  const uint32_t ring_size = std::max(args->ring_size, kMinRingSize);

  std::lock_guard lock(mu_);
  Gpu* g = gpu_by_id(args->gpu_id);
  if (g == nullptr) return -EINVAL;
  if (!g->acquired) return -ESRCH;  // kfd_bind_process_to_device failed
  {
    // kfd_queue_acquire_buffers: what the queue points at must lie in memory mapped on this GPU.
    std::shared_lock vm(vm_mu_);
    if (!range_mapped(*g, args->ring_base_address, ring_size)) return -EINVAL;
    if (!range_mapped(*g, args->read_pointer_address, 8) || !range_mapped(*g, args->write_pointer_address, 8))
      return -EINVAL;
    if (type != SimQueueType::sdma) {
      if (args->eop_buffer_address && !range_mapped(*g, args->eop_buffer_address, args->eop_buffer_size))
        return -EINVAL;
      if (args->ctx_save_restore_address &&
          !range_mapped(*g, args->ctx_save_restore_address, args->ctx_save_restore_size))
        return -EINVAL;
    }
  }
  // Lowest free queue id and doorbell slot of this GPU.
  uint32_t qid = 0;
  while (queues_.count(qid)) ++qid;
  std::vector<bool> used(kMaxQueues);
  for (const auto& [id, q] : queues_)
    if (q->gpu_index == g->index) used[q->slot] = true;
  uint32_t slot = 0;
  while (slot < kMaxQueues && used[slot]) ++slot;
  if (slot == kMaxQueues || qid >= kMaxQueues * gpus_.size()) return -ENOMEM;

  auto q = std::make_shared<Queue>();
  q->gpu_index = g->index;
  q->slot = slot;
  SimQueueDesc& d = q->desc;
  d.queue_id = qid;
  d.gpu_id = g->gpu_id;
  d.target = g->target;
  d.num_xcc = g->spec->num_xcc;
  d.lds_bytes = g->spec->lds_size_in_kb * 1024;
  d.type = type;
  d.ring_va = args->ring_base_address;
  d.ring_size = ring_size;
  d.rptr_va = args->read_pointer_address;
  d.wptr_va = args->write_pointer_address;
  d.doorbell_offset = uint64_t{slot} * 8;
  d.eop_va = args->eop_buffer_address;
  d.eop_size = args->eop_buffer_size;
  d.ctx_save_va = args->ctx_save_restore_address;
  d.ctx_save_size = args->ctx_save_restore_size;
  d.queue_percentage = args->queue_percentage;
  d.queue_priority = args->queue_priority;
  q->host = std::make_unique<Host>(*this, g->gpu_id, qid);
  // The factory must not call back into the host while constructing (the process lock is held here).
  if (factory_) q->runner = factory_(d, *q->host);
  queues_.emplace(qid, q);
  {
    std::unique_lock dl(doorbell_mu_);
    g->by_slot[slot] = q;
  }

  args->queue_id = qid;
  args->doorbell_offset =
      (kMmapTypeDoorbell << kMmapTypeShift) | (uint64_t{g->gpu_id} << kMmapGpuIdShift) | d.doorbell_offset;
  return 0;
}

int SimKfd::destroy_queue(void* a) {
  auto* args = static_cast<kfd_ioctl_destroy_queue_args*>(a);
  std::shared_ptr<Queue> dying;
  {
    std::lock_guard lock(mu_);
    auto it = queues_.find(args->queue_id);
    if (it == queues_.end()) return -EINVAL;
    dying = std::move(it->second);
    queues_.erase(it);
    // No doorbell write finds the queue from here on (one that found it before keeps it alive until it is done).
    std::unique_lock dl(doorbell_mu_);
    gpus_[dying->gpu_index]->by_slot[dying->slot].reset();
  }
  dying.reset();  // stops the runner outside the lock
  return 0;
}

// On every submit: one reader lock and a slot lookup (no process lock, no scan of the queues). The runner is told
// with no lock held (a runner may be stepping the engine, which calls back into the driver, under its own lock), the
// reference taken under the lock keeping the queue alive meanwhile.
bool SimKfd::write_doorbell(volatile void* where, uint64_t value, unsigned bytes) {
  const auto addr = reinterpret_cast<uintptr_t>(where);
  std::shared_ptr<Queue> q;
  {
    std::shared_lock dl(doorbell_mu_);
    auto it = doorbell_maps_.upper_bound(addr);
    if (it == doorbell_maps_.begin()) return false;
    --it;
    const uint64_t offset = addr - it->first;
    if (offset >= kDoorbellSliceBytes) return false;
    if (bytes == 8) *static_cast<volatile uint64_t*>(where) = value;
    else *static_cast<volatile uint32_t*>(where) = static_cast<uint32_t>(value);
    // A queue's doorbell is the 8-byte slot at doorbell_offset = slot * 8; a 4-byte write may hit either half.
    q = gpus_[it->second]->by_slot[offset / 8];
  }
  if (!q) return true;  // a doorbell no queue owns: the store lands, nothing listens (as on hardware)
  q->doorbell_writes.fetch_add(1);
  q->last_doorbell.store(value);
  if (q->runner) q->runner->doorbell(value);
  return true;
}

std::optional<SimKfd::QueueState> SimKfd::queue_state(uint32_t queue_id) const {
  std::lock_guard lock(mu_);
  auto it = queues_.find(queue_id);
  if (it == queues_.end()) return std::nullopt;
  const Queue& q = *it->second;
  return QueueState{q.desc, q.doorbell_writes.load(), q.last_doorbell.load(), q.faulted, q.fault_reason};
}

std::vector<uint32_t> SimKfd::queue_ids() const {
  std::lock_guard lock(mu_);
  std::vector<uint32_t> ids;
  for (const auto& [id, q] : queues_) ids.push_back(id);
  return ids;
}

}  // namespace hcq::sim
