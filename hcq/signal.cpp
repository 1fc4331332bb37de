// Signal handles and the host-side wait: poll briefly (a GPU usually answers within microseconds), yield a little,
// then sleep with backoff so that a long wait does not burn a core; or, where the device wakes waiters with an
// interrupt, poll briefly and then block until it does.
#include "hcq/signal.hpp"

#include <atomic>
#include <thread>

#include "hcq/backend/cpu_relax.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/backend/signal_pool.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

namespace hcq {
namespace {

using Clock = std::chrono::steady_clock;
// Short on purpose: when the writer (a queue worker) shares our core, every microsecond spun here delays it.
constexpr auto kSpinTime = std::chrono::microseconds(3);
// Without a device that wakes us, the wait yields for this long, then sleeps a sixteenth of the time it has waited
// (at most kMaxSleep): the end of a wait is noticed within about 6 % of its length plus the timer's slack (~50 us),
// so a 2 ms kernel is seen done ~0.2 ms late, not up to 1 ms. While a sixteenth is below the slack, a sleep would
// overshoot by more than that: yield instead, as CUDA's host threads spin or yield while they have cores to spare.
constexpr auto kYieldTime = std::chrono::microseconds(1000);
constexpr int kSleepShare = 16;
constexpr auto kMaxSleep = std::chrono::microseconds(1000);
// The longest one blocking sleep lasts (with a waking writer); after it the value, the timeout and the check are
// looked at again, so a wake-up that never comes costs at most this much.
constexpr auto kBlockSlice = std::chrono::milliseconds(10);

inline uint64_t load_acquire(uint64_t* p) { return std::atomic_ref<uint64_t>(*p).load(std::memory_order_acquire); }

}  // namespace

// Handles are passed and copied on hot paths: keep them a pointer and two words.
static_assert(sizeof(Signal) == 16);

Signal Signal::create(uint64_t initial, std::string label) {
  return process().signals.acquire(initial, std::move(label));
}

// Inline within this file: addr() runs twice in every eager launch's encoding (its wait and its signal).
inline uint64_t* Signal::checked_ptr() const {
  if (pool_ == nullptr) [[unlikely]]
    throw InvalidArgument("use of an empty signal handle (default-constructed or released)");
  return pool_->ptr(slot_, gen_);
}

uint64_t Signal::value() const { return load_acquire(checked_ptr()); }

void Signal::set_value(uint64_t v) const {
  std::atomic_ref<uint64_t>(*checked_ptr()).store(v, std::memory_order_release);
}

uint64_t Signal::timestamp() const { return load_acquire(checked_ptr() + 1); }

uint64_t Signal::addr() const { return reinterpret_cast<uint64_t>(checked_ptr()); }

uint64_t* Signal::host_ptr() const { return checked_ptr(); }

void Signal::wait(uint64_t target, std::optional<std::chrono::milliseconds> timeout) const {
  wait(target, timeout, {});
}

void Signal::wait(uint64_t target, std::optional<std::chrono::milliseconds> timeout,
                  const std::function<void()>& check) const {
  wait(target, timeout, check, {});
}

void Signal::wait(uint64_t target, std::optional<std::chrono::milliseconds> timeout, const std::function<void()>& check,
                  const std::function<bool(std::chrono::microseconds)>& sleep) const {
  uint64_t* p = checked_ptr();
  uint64_t seen = load_acquire(p);
  if (seen >= target) return;

  // Not value_or: it would read (and validate) the knob even when the caller gave a timeout.
  const auto limit = timeout ? *timeout : knobs::wait_timeout();
  auto moved_at = Clock::now();

  // Phase 1: spin. Reading the clock costs more than a pause, so look at it only every 64 polls.
  const auto spin_until = moved_at + std::min<Clock::duration>(kSpinTime, limit);
  do {
    for (int i = 0; i < 64; ++i) {
      cpu_relax();
      if (load_acquire(p) >= target) return;
    }
  } while (Clock::now() < spin_until);

  // With a writer that wakes us (a device interrupt), block there from now on: the core goes to whoever needs it,
  // and the wake-up comes when the value is written rather than after a backoff step.
  // Each blocking sleep ends by the deadline (rounded up: a zero limit would make it a poll).
  auto slice = [&](Clock::duration left) {
    return std::chrono::ceil<std::chrono::microseconds>(std::min<Clock::duration>(kBlockSlice, left));
  };
  bool blocking = static_cast<bool>(sleep);
  if (blocking) {
    if (check) check();
    blocking = sleep(slice(limit));
  }

  // Phase 2: yield. On a machine with fewer cores than busy threads, the thread that will write the signal may be
  // waiting for ours; a short sleep would cost the timer slack (~50 us) where a yield hands the core over at once.
  const auto yield_until = moved_at + std::min<Clock::duration>(kYieldTime, limit);
  while (!blocking && Clock::now() < yield_until) {
    std::this_thread::yield();
    if (load_acquire(p) >= target) return;
  }

  // Phase 3: sleep a share of the time waited; the timeout counts from the last time the value moved.
  const auto started = moved_at;
  for (;;) {
    uint64_t now_value = load_acquire(p);
    if (now_value >= target) return;
    const auto now = Clock::now();
    if (now_value != seen) {
      seen = now_value;
      moved_at = now;
    } else if (now - moved_at >= limit) {
      throw TimeoutError(cat("timeout after ", limit.count(), " ms waiting for signal \"", label(), "\" at ",
                             hex(reinterpret_cast<uint64_t>(p)), " to reach >= ", target, " (current ", now_value,
                             ")"));
    }
    if (check) check();
    pool_->ptr(slot_, gen_);  // throws if someone released the signal while we waited
    if (blocking) {
      sleep(slice(limit - (now - moved_at)));
      continue;
    }
    std::this_thread::sleep_for(std::min<Clock::duration>((now - started) / kSleepShare, kMaxSleep));
  }
}

const std::string& Signal::label() const {
  static const std::string empty;
  return pool_ == nullptr ? empty : pool_->label(slot_);
}

void Signal::set_label(std::string label) const {
  if (pool_ == nullptr) throw InvalidArgument("set_label on an empty signal handle");
  pool_->set_label(slot_, std::move(label));
}

bool Signal::valid() const { return pool_ != nullptr && pool_->is_live(slot_, gen_); }

void Signal::release() {
  if (pool_ == nullptr) throw InvalidArgument("release of an empty signal handle");
  pool_->release(slot_, gen_);
  *this = Signal();
}

namespace {

// Owners release on destruction and reassignment; a slot already released through a copy of the handle has
// nothing left to give back, and a destructor must not throw.
void release_if_live(Signal& s) noexcept {
  if (!s.valid()) return;
  try {
    s.release();
  } catch (const Error&) {
  }
}

}  // namespace

OwnedSignal& OwnedSignal::operator=(OwnedSignal&& o) noexcept {
  if (this != &o) {
    release_if_live(sig_);
    sig_ = o.sig_;
    o.sig_ = Signal();
  }
  return *this;
}

OwnedSignal::~OwnedSignal() { release_if_live(sig_); }

}  // namespace hcq
