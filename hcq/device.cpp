// Device: the timeline protocol, the sticky error, and the runtime pieces every backend shares.
#include "hcq/device.hpp"

#include <algorithm>
#include <typeinfo>
#include <unordered_map>

#include "hcq/allocator.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/bundle.hpp"
#include "hcq/error.hpp"
#include "side_pool.hpp"

namespace hcq {
namespace {

// Some GPUs compare signal values in 32 bits: restart the timeline well before it could wrap.
constexpr uint64_t kTimelineSwapAt = uint64_t{1} << 31;

// The devices whose runtime is up, by serial number. A pending join names the device that drives its copy, which may
// be shut down first (it waited for its copies then): the join is over once its driver is no longer here. Serial
// numbers, not addresses, so that a new device at a freed address is not taken for the old one.
std::mutex g_live_mu;
std::unordered_map<uint64_t, const Device*>& live_devices() {
  static auto* live = new std::unordered_map<uint64_t, const Device*>;  // never destroyed: devices outlive statics
  return *live;
}
uint64_t next_serial() {
  static std::atomic<uint64_t> serial{0};
  return serial.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

Device::Device(std::string name)
    : name_(std::move(name)), serial_(next_serial()), recent_(std::make_unique<capture::Recent>()) {}

// The subclass has stopped its hardware and, through shutdown_runtime(), given its memory back. What is left here
// (signals, the allocator object, an empty side pool) goes without calling into the backend.
Device::~Device() {
  std::lock_guard lock(g_live_mu);
  live_devices().erase(serial_);
}

std::optional<Device::Wait> Device::PendingJoin::wait() const {
  std::lock_guard lock(g_live_mu);
  auto it = live_devices().find(driver_serial);
  // A copy from before its driver's timeline restarted finished before the restart.
  if (it == live_devices().end() || it->second->epoch() != copied.epoch_) return std::nullopt;
  return Wait{&it->second->timeline_signal(), copied.value_};
}

void Device::init_runtime(std::unique_ptr<Allocator> allocator) {
  timeline_ = OwnedSignal(0, name_ + " timeline");
  shadow_ = OwnedSignal(0, name_ + " timeline shadow");
  timeline_value_.store(1, std::memory_order_relaxed);
  allocator_ = std::move(allocator);
  side_ = std::make_unique<SidePool>(*this);
  std::lock_guard lock(g_live_mu);
  live_devices()[serial_] = this;
}

void Device::shutdown_runtime() noexcept {
  if (!side_) return;
  try {
    synchronize();
  } catch (...) {
    // A faulted or hung device still has to be torn down; what it did not finish is lost either way.
  }
  {
    std::lock_guard lock(g_live_mu);
    live_devices().erase(serial_);
  }
  try {
    if (allocator_) allocator_->free_cache();
  } catch (...) {
  }
  try {
    side_->release_chunks();
  } catch (...) {
  }
  side_.reset();
}

Device::TimelineSlot Device::reserve_timeline() {
  if (!side_) throw Error(cat(name_, ": submission before init_runtime"));
  submit_mu_.lock();  // released by the slot: commit() or its destructor
  try {
    flush_joins_locked();
  } catch (...) {
    submit_mu_.unlock();
    throw;
  }
  return TimelineSlot(*this, timeline_value_.load(std::memory_order_relaxed));
}

Device::TimelineSlot Device::reserve_peer_copy(MemRange reads) {
  if (!side_) throw Error(cat(name_, ": submission before init_runtime"));
  submit_mu_.lock();  // released by the slot: commit() or its destructor
  TimelineSlot slot(*this, timeline_value_.load(std::memory_order_relaxed));
  slot.peer_reads_ = reads;
  pending_waits_locked(reads, slot.joins_);
  return slot;
}

void Device::flush_joins_locked() {
  if (pending_joins_.empty()) return;
  std::unique_ptr<HWQueue> join = new_queue(QueueKind::compute);
  const uint64_t v = timeline_value_.load(std::memory_order_relaxed);
  join->wait(timeline_signal(), v - 1);
  for (const PendingJoin& j : pending_joins_) {
    if (std::optional<Wait> w = j.wait()) join->wait(*w->signal, w->value);
  }
  join->signal(timeline_signal(), v).submit();
  pending_joins_.clear();
  timeline_value_.store(v + 1, std::memory_order_release);
  last_untracked_ = v;
  peer_copies_.clear();
}

void Device::forget_peer_copies_locked() {
  last_untracked_ = 0;
  peer_copies_.clear();
}

std::vector<Device::Wait> Device::waits_touching(MemRange r) {
  MutexLock lock(submit_mu_);
  std::vector<Wait> waits;
  uint64_t own = last_untracked_;
  for (const PeerCopy& p : peer_copies_)
    if (p.reads.overlaps(r)) own = std::max(own, p.value);
  if (own != 0) waits.push_back({&timeline_signal(), own});
  pending_waits_locked(r, waits);
  return waits;
}

void Device::pending_waits_locked(MemRange r, std::vector<Wait>& out) const {
  for (const PendingJoin& j : pending_joins_) {
    if (!j.range.overlaps(r)) continue;
    if (std::optional<Wait> w = j.wait()) out.push_back(*w);
  }
}

void Device::wait_for_copies_into(MemRange r) {
  std::vector<Wait> waits;
  {
    MutexLock lock(submit_mu_);
    if (pending_joins_.empty()) return;  // the common case: nothing to collect, nothing allocated
    pending_waits_locked(r, waits);
  }
  for (const Wait& w : waits) wait_signal(*w.signal, w.value);
}

void Device::defer_join(const Completion& copied, MemRange r) {
  if (copied.empty()) return;
  MutexLock lock(submit_mu_);
  pending_joins_.push_back({copied, copied.device_->serial_, r});
  if (pending_joins_.size() > kMaxPeerEntries) flush_joins_locked();
}

Device::TimelineSlot::~TimelineSlot() {
  if (dev_ != nullptr) dev_->submit_mu_.unlock();
}

const Signal& Device::TimelineSlot::signal() const { return dev_->timeline_signal(); }

Completion Device::TimelineSlot::commit() {
  Device& dev = *dev_;
  dev.submit_mu_.assert_held();
  dev.timeline_value_.store(value_ + 1, std::memory_order_release);
  if (!peer_reads_) {
    dev.last_untracked_ = value_;
    dev.peer_copies_.clear();
  } else if (dev.peer_copies_.size() < kMaxPeerEntries) {
    dev.peer_copies_.push_back({value_, *peer_reads_});
  } else {
    dev.forget_peer_copies_locked();
    dev.last_untracked_ = value_;  // everything up to here counts as touching anything
  }
  const Completion done(dev, value_, dev.epoch());
  dev_ = nullptr;
  dev.submit_mu_.unlock();
  return done;
}

Completion Device::last_submission() const {
  // The value and its epoch as one pair: a timeline restart between the two reads shows as a changed epoch.
  for (;;) {
    const uint64_t epoch_before = epoch();
    const uint64_t value = timeline_value() - 1;
    if (epoch() == epoch_before) return Completion(const_cast<Device&>(*this), value, epoch_before);
  }
}

bool Completion::done() const {
  if (device_ == nullptr || epoch_ != device_->epoch()) return true;
  return device_->timeline_signal().value() >= value_;
}

void Completion::wait() const {
  if (device_ == nullptr) return;
  if (epoch_ == device_->epoch()) device_->wait_signal(device_->timeline_signal(), value_);
  if (std::exception_ptr f = device_->poll_fault()) device_->record_error(f);
  MutexLock lock(device_->err_mu_);
  if (device_->error_) std::rethrow_exception(device_->error_);
}

void Device::synchronize() {
  if (!side_) throw Error(cat(name_, ": synchronize before init_runtime"));
  if (!has_error()) {
    MutexLock lock(submit_mu_);
    flush_joins_locked();
  }
  wait_signal(timeline_, timeline_value() - 1);
  if (std::exception_ptr f = poll_fault()) record_error(f);
  {
    MutexLock lock(err_mu_);
    if (error_) std::rethrow_exception(error_);
  }
  side_->reclaim_all();
  if (timeline_value() > kTimelineSwapAt) {
    MutexLock lock(submit_mu_);
    // Idle, unless another thread submitted since the wait above: then the swap waits for a later synchronize.
    if (timeline_->value() + 1 != timeline_value()) return;
    // Nothing can still wait on the old signal, so switch to the shadow and start over.
    std::swap(timeline_, shadow_);
    timeline_->set_value(0);
    timeline_value_.store(1, std::memory_order_release);
    forget_peer_copies_locked();
    timeline_epoch_.fetch_add(1, std::memory_order_acq_rel);
    for (const auto& fn : on_reset_) fn();
  }
}

void Device::set_timeline_value(uint64_t next) {
  if (next == 0) throw InvalidArgument(cat(name_, ": timeline value must be >= 1 (it is the next value to signal)"));
  if (!side_) throw Error(cat(name_, ": set_timeline_value before init_runtime"));
  MutexLock lock(submit_mu_);
  // Let what was submitted finish first: side blocks and staging stamps refer to the old numbering.
  wait_signal(timeline_, timeline_value() - 1);
  side_->reclaim_all();
  timeline_->set_value(next - 1);
  timeline_value_.store(next, std::memory_order_release);
  forget_peer_copies_locked();
  timeline_epoch_.fetch_add(1, std::memory_order_acq_rel);
  for (const auto& fn : on_reset_) fn();
}

void Device::on_timeline_reset(std::function<void()> fn) { on_reset_.push_back(std::move(fn)); }

void Device::record_error(std::exception_ptr e) {
  // The first fault gets a hang bundle, named in its message (written before taking the lock: describing the
  // device may look at the sticky error). Only a plain DeviceFault is rewritten, so no caller loses a subtype.
  if (e && !has_error()) {
    try {
      std::rethrow_exception(e);
    } catch (const DeviceFault& f) {
      if (typeid(f) == typeid(DeviceFault)) {
        const bundle::Result r = bundle::write(*this, "fault", f.what(), {});
        if (!r.suffix().empty()) e = std::make_exception_ptr(DeviceFault(cat(f.what(), r.suffix())));
      }
    } catch (...) {
    }
  }
  MutexLock lock(err_mu_);
  if (!error_) error_ = std::move(e);  // the first fault is the cause; later ones are usually its echoes
}

std::vector<capture::RingDump> Device::pending_rings() const { return {}; }

std::vector<capture::Submission> Device::recent_submissions() const {
  std::vector<capture::Submission> out = recent_->snapshot();
  for (capture::Submission& s : out) {
    s.device = name_;
    s.arch = capture_arch();
  }
  return out;
}

const std::string& Device::capture_arch() const {
  std::call_once(arch_once_, [this] {
    try {
      arch_ = info().arch;
    } catch (...) {
      arch_ = "unknown";  // a capture must not fail a submission
    }
  });
  return arch_;
}

bool Device::has_error() const {
  MutexLock lock(err_mu_);
  return error_ != nullptr;
}

void Device::map_memory(const Allocation&) {
  // Default: host-visible memory in this same process needs no mapping.
}

SideBlock Device::alloc_side(uint64_t size, uint64_t align) {
  if (!side_) throw Error(cat(name_, ": alloc_side before init_runtime"));
  return side_->alloc(size, align);
}

void Device::free_side(const SideBlock& b) {
  if (!side_) return;  // after shutdown_runtime every side block has already gone back to the device
  side_->free(b);
}

void Device::release_after_timeline(OwnedSignal s) {
  if (side_) side_->release_later(std::move(s));
  // else: after shutdown_runtime the device is idle and stopped; s is released right here.
}

void Device::wait_signal(const Signal& s, uint64_t value) const { wait_signal_for(s, value, std::nullopt); }

void Device::wait_signal(const Signal& s, uint64_t value, std::chrono::milliseconds timeout) const {
  wait_signal_for(s, value, timeout);
}

void Device::wait_signal_for(const Signal& s, uint64_t value, std::optional<std::chrono::milliseconds> timeout) const {
  // Reached already (a graph's previous replay, long done): no wait to set up. Signal::wait would return here too,
  // but only after the two callbacks below were built (one of them on the heap).
  if (s.value() >= value) return;
  // A fault makes the wait fail at once rather than after the whole timeout. The sticky error is logically
  // mutable state: a const wait that finds a fault records it.
  auto* self = const_cast<Device*>(this);
  auto check = [this, self] {
    if (std::exception_ptr f = poll_fault()) self->record_error(f);
    MutexLock lock(err_mu_);
    if (error_) std::rethrow_exception(error_);
  };
  // A device that wakes its waiters (sleep_on_signal) gets them blocked there rather than backing off.
  auto sleep = [this, &s, value](std::chrono::microseconds limit) { return sleep_on_signal(s, value, limit); };
  try {
    s.wait(value, timeout, check, sleep);
  } catch (const TimeoutError& e) {
    check();  // a fault found only now explains the timeout better than the timeout does
    std::string state = describe_state();
    std::string msg = cat(e.what(), " on ", name_, state.empty() ? "" : "; ", state);
    bundle::SignalState sigs[2] = {{s.label(), s.addr(), s.value(), value}, {}};
    size_t n = 1;
    if (timeline_.get().valid() && !(timeline_.get() == s)) {
      sigs[1] = {timeline_->label(), timeline_->addr(), timeline_->value(), timeline_value() - 1};
      n = 2;
    }
    throw TimeoutError(msg + bundle::write(*this, "timeout", msg, std::span(sigs, n)).suffix());
  }
}

}  // namespace hcq
