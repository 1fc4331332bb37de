// The simulated KFD's events: create, destroy, set/reset, WAIT_EVENTS with its waiters, interrupts from the queues'
// end-of-pipe and exception events (memory faults).
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
// Events

int SimKfd::create_event(void* a) {
  auto* args = static_cast<kfd_ioctl_create_event_args*>(a);
  std::lock_guard lock(mu_);
  if (args->event_page_offset) {
    // The process hands its own buffer as the event page (by handle).
    if (event_page_bo_) return -EINVAL;  // "Event page is already set"
    if (gpu_by_id(static_cast<uint32_t>(args->event_page_offset >> 32)) == nullptr) return -EINVAL;
    std::shared_ptr<Bo> bo = bo_by_handle(args->event_page_offset);
    if (!bo || bo->kind == Bo::Kind::userptr || bo->kind == Bo::Kind::doorbell || bo->kind == Bo::Kind::mmio)
      return -EINVAL;
    if (bo->size < kEventPageBytes) return -EINVAL;  // "Event page is too small"
    event_page_bo_ = bo;
    event_page_ = reinterpret_cast<uint64_t*>(bo->host);
    std::memset(event_page_, 0xff, kEventPageBytes);  // every slot unsignaled
  }
  if (args->event_type > KFD_IOC_EVENT_MEMORY) return -EINVAL;  // stricter: the kernel files these as "other"
  Event e;
  e.type = args->event_type;
  e.auto_reset = args->auto_reset != 0;
  if (e.type == KFD_IOC_EVENT_SIGNAL || e.type == KFD_IOC_EVENT_DEBUG_EVENT) {
    uint32_t id = 0;
    while (id < 4096 && events_.count(id)) ++id;
    if (id == 4096) return -ENOSPC;
    if (!event_page_bo_) {
      // No page given: the kernel allocates one, which the process maps through /dev/kfd.
      auto bo = std::make_shared<Bo>();
      auto b = MemfdBacking::make("hcq-sim-events", kEventPageBytes);
      if (!b) return -ENOMEM;
      bo->fd = b->fd;
      bo->host = b->host;
      bo->size = kEventPageBytes;
      bo->owns_fd = true;
      event_page_bo_ = bo;
      event_page_ = reinterpret_cast<uint64_t*>(bo->host);
      std::memset(event_page_, 0xff, kEventPageBytes);
      args->event_page_offset = kMmapTypeEvents << kMmapTypeShift;
    }
    e.id = id;
    event_page_[id] = kUnsignaledSlot;
    args->event_trigger_data = id;
    args->event_slot_index = id;
  } else {
    e.id = next_nonsignal_event_++;
  }
  args->event_id = e.id;
  events_.emplace(e.id, e);
  return 0;
}

int SimKfd::destroy_event(void* a) {
  auto* args = static_cast<kfd_ioctl_destroy_event_args*>(a);
  std::lock_guard lock(mu_);
  auto it = events_.find(args->event_id);
  if (it == events_.end()) return -EINVAL;
  forget_waiters_locked(it->second);
  events_.erase(it);
  return 0;
}

void SimKfd::forget_waiters_locked(Event& e) {
  for (Waiter* w : e.waiters) {
    w->gone = true;
    w->queued = false;
  }
  e.waiters.clear();
  events_cv_.notify_all();
}

int SimKfd::set_event(void* a, bool set) {
  const uint32_t id = static_cast<kfd_ioctl_set_event_args*>(a)->event_id;  // reset args: same layout
  std::lock_guard lock(mu_);
  auto it = events_.find(id);
  // Only signal events can be signaled (or reset) from the CPU.
  if (it == events_.end() || it->second.type != KFD_IOC_EVENT_SIGNAL) return -EINVAL;
  if (set) signal_event_locked(it->second);
  else it->second.signaled = false;
  return 0;
}

void SimKfd::signal_event_locked(Event& e, bool by_interrupt) {
  // The kernel's set_event(): every waiter on the list is activated and woken; an auto-reset event stays set only
  // when no one was waiting (the next WAIT_EVENTS then takes it at once).
  e.signaled = !e.auto_reset || e.waiters.empty();
  if (by_interrupt) ++e.counters.interrupts;
  for (Waiter* w : e.waiters) {
    if (by_interrupt && !w->activated) ++e.counters.woken_by_interrupt;
    w->activated = true;
  }
  events_cv_.notify_all();
}

int SimKfd::wait_events(void* a) {
  auto* args = static_cast<kfd_ioctl_wait_events_args*>(a);
  if (args->num_events == 0) return -EINVAL;
  if (args->num_events > 4096 * 2) return -ENOMEM;
  if (args->events_ptr == 0) return -EFAULT;
  auto* user = reinterpret_cast<kfd_event_data*>(args->events_ptr);
  std::vector<kfd_event_data> evs(args->num_events);
  std::memcpy(evs.data(), user, evs.size() * sizeof(kfd_event_data));

  std::unique_lock lock(mu_);
  // kfd_wait_on_events: one waiter per event, in order. A waiter takes an event that is already set (resetting an
  // auto-reset one); otherwise it joins the event's list. An unknown id fails the call (events taken so far stay
  // taken, as in the kernel).
  std::vector<Waiter> ws(evs.size());
  auto leave = [&] {
    for (Waiter& w : ws) {
      if (!w.queued) continue;
      std::vector<Waiter*>& list = events_.at(w.event_id).waiters;
      list.erase(std::find(list.begin(), list.end(), &w));
      w.queued = false;
    }
  };
  for (size_t i = 0; i < evs.size(); ++i) {
    auto it = events_.find(evs[i].event_id);
    if (it == events_.end()) {
      leave();
      return -EINVAL;
    }
    Event& e = it->second;
    ++e.counters.waits;
    ws[i].event_id = e.id;
    ws[i].activated = e.signaled;
    if (e.auto_reset) e.signaled = false;
    if (!ws[i].activated) {
      e.waiters.push_back(&ws[i]);
      ws[i].queued = true;
    }
  }
  // test_event_condition: FAIL once an event is destroyed under us; COMPLETE when any (all) fired.
  auto condition = [&] {
    size_t fired = 0;
    for (const Waiter& w : ws) {
      if (w.gone) return static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_FAIL);
      if (w.activated) ++fired;
    }
    const bool done = args->wait_for_all ? fired == ws.size() : fired > 0;
    return static_cast<uint32_t>(done ? KFD_IOC_WAIT_RESULT_COMPLETE : KFD_IOC_WAIT_RESULT_TIMEOUT);
  };
  auto settled = [&] { return condition() != KFD_IOC_WAIT_RESULT_TIMEOUT; };
  if (!settled() && args->timeout != 0) {  // a zero timeout is a poll
    if (args->timeout == kEventTimeoutInfinite) events_cv_.wait(lock, settled);
    else events_cv_.wait_for(lock, std::chrono::milliseconds(args->timeout), settled);
  }
  const uint32_t result = condition();
  leave();
  args->wait_result = result;
  if (result == KFD_IOC_WAIT_RESULT_FAIL) return -EIO;
  if (result == KFD_IOC_WAIT_RESULT_COMPLETE) {
    // copy_signaled_event_data: the exception data of the events that fired for this waiter.
    for (size_t i = 0; i < evs.size(); ++i) {
      if (!ws[i].activated) continue;
      const Event& e = events_.at(ws[i].event_id);
      if (e.type == KFD_IOC_EVENT_MEMORY) evs[i].memory_exception_data = e.data.memory_exception_data;
      if (e.type == KFD_IOC_EVENT_HW_EXCEPTION) evs[i].hw_exception_data = e.data.hw_exception_data;
    }
    lock.unlock();
    std::memcpy(user, evs.data(), evs.size() * sizeof(kfd_event_data));
  }
  return 0;
}

void SimKfd::raise_interrupt(uint32_t /*gpu_id*/, uint32_t context_id) {
  std::lock_guard lock(mu_);
  if (event_page_ == nullptr) return;  // no signal event yet: nothing an interrupt could name
  // kfd_signal_event_interrupt: the event the context id names, if the GPU wrote its slot; otherwise (an id that
  // names nothing, or a slot not written) every signal event whose slot was written. Each slot found written is
  // acknowledged (set back to unsignaled) before its event is set.
  constexpr uint32_t kSlots = kEventPageBytes / 8;
  auto fire = [&](Event& e) {
    if (e.type != KFD_IOC_EVENT_SIGNAL && e.type != KFD_IOC_EVENT_DEBUG_EVENT) return false;
    if (e.id >= kSlots) return false;
    // The GPU stores the slot from its own thread (the engines store atomically); so do we.
    std::atomic_ref<uint64_t> slot(event_page_[e.id]);
    if (slot.load(std::memory_order_acquire) == kUnsignaledSlot) return false;
    slot.store(kUnsignaledSlot, std::memory_order_relaxed);
    signal_event_locked(e, true);
    return true;
  };
  if (auto it = events_.find(context_id); it != events_.end() && fire(it->second)) return;
  for (auto& [id, e] : events_) fire(e);
}

std::optional<SimKfd::EventCounters> SimKfd::event_counters(uint32_t event_id) const {
  std::lock_guard lock(mu_);
  auto it = events_.find(event_id);
  if (it == events_.end()) return std::nullopt;
  return it->second.counters;
}

void SimKfd::fire_exception_events(uint32_t type, uint32_t gpu_id, uint64_t va, MemoryFailure failure) {
  for (auto& [id, e] : events_) {
    if (e.type != type) continue;
    e.data = kfd_event_data{};
    if (type == KFD_IOC_EVENT_MEMORY) {
      e.data.memory_exception_data.gpu_id = gpu_id;
      e.data.memory_exception_data.va = va;
      e.data.memory_exception_data.failure.NotPresent = failure == MemoryFailure::not_present;
      e.data.memory_exception_data.failure.ReadOnly = failure == MemoryFailure::read_only;
      e.data.memory_exception_data.failure.NoExecute = failure == MemoryFailure::no_execute;
    } else {
      e.data.hw_exception_data.gpu_id = gpu_id;
      e.data.hw_exception_data.reset_type = KFD_HW_EXCEPTION_PER_ENGINE_RESET;
      e.data.hw_exception_data.reset_cause = KFD_HW_EXCEPTION_GPU_HANG;
    }
    signal_event_locked(e);
  }
}

void SimKfd::inject_fault(uint32_t queue_id, uint64_t address, bool memory_fault, const std::string& reason,
                          MemoryFailure failure) {
  std::lock_guard lock(mu_);
  auto it = queues_.find(queue_id);
  if (it == queues_.end()) return;
  Queue& q = *it->second;
  if (!q.faulted) {
    q.faulted = true;
    q.fault_reason = reason;
  }
  fire_exception_events(memory_fault ? KFD_IOC_EVENT_MEMORY : KFD_IOC_EVENT_HW_EXCEPTION, q.desc.gpu_id, address,
                        failure);
}

}  // namespace hcq::sim
