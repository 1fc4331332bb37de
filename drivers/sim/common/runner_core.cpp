// The runners' state machine, their own threads (threaded mode) and the group's round-robin thread
// (deterministic mode).
#include "sim/common/runner_core.hpp"

#include <algorithm>
#include <atomic>

namespace hcq::sim {

const char* to_string(RunnerState s) {
  switch (s) {
    case RunnerState::idle: return "idle";
    case RunnerState::running: return "running";
    case RunnerState::waiting: return "waiting";
    case RunnerState::faulted: return "faulted";
  }
  return "?";
}

namespace {
// How long an idle simulator thread keeps looking at its doorbell count before it sleeps. A command processor
// polls all the time; this polls long enough to catch the next submission of a host that submits in a loop
// (launch, wait, launch; a graph replayed over and over), so that it costs the host a store rather than a futex
// wake, and briefly enough that idle simulated GPUs leave the machine's cores to others. Between looks the thread
// yields, so on a busy machine the poll gives way to anything runnable.
constexpr std::chrono::microseconds kIdlePoll{50};

// Looks at `doorbells` until it differs from `seen` (true) or kIdlePoll has passed (false).
bool poll_doorbells(const std::atomic<uint64_t>& doorbells, uint64_t seen) {
  const auto until = std::chrono::steady_clock::now() + kIdlePoll;
  for (;;) {
    if (doorbells.load() != seen) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::yield();
  }
}

// Sleeps after a step that made no progress: a waiting runner re-polls after `sleep`, which doubles up to `max`; an
// idle (or faulted) one sleeps until `woken` (a doorbell or a stop). Either way `woken` cuts the sleep short.
// `parked` is raised before `woken` first looks at the doorbell count (see the top of runner_core.hpp).
template <class Woken>
void park(std::condition_variable& cv, std::unique_lock<std::mutex>& lk, std::atomic<bool>& parked, bool waiting,
          Woken woken, std::chrono::microseconds& sleep, std::chrono::microseconds min, std::chrono::microseconds max) {
  parked.store(true);
  if (waiting) {
    cv.wait_for(lk, sleep, woken);
    sleep = std::min(sleep * 2, max);
  } else {
    cv.wait(lk, woken);
    sleep = min;
  }
  parked.store(false);
}

// A doorbell's wake-up of a thread that may be asleep on `cv` (the ringer has already counted its doorbell). Taking
// the lock orders it after the sleeper's last look at the count, so the notify cannot fall before the sleep.
void wake(std::mutex& mu, std::condition_variable& cv, const std::atomic<bool>& parked) {
  if (!parked.load()) return;  // awake: it looks at the count again before it sleeps
  {
    std::lock_guard<std::mutex> lk(mu);
  }
  cv.notify_all();
}
}  // namespace

RunnerGroup::~RunnerGroup() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RunnerGroup::add(StepRunner* r) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    runners_.push_back(r);
    doorbells_.fetch_add(1);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_all();
}

void RunnerGroup::remove(StepRunner* r) {
  std::lock_guard<std::mutex> lk(mu_);
  runners_.remove(r);
}

void RunnerGroup::kick() {
  doorbells_.fetch_add(1);
  wake(mu_, cv_, parked_);
}

void RunnerGroup::loop() {
  std::chrono::microseconds sleep = poll_min_;
  std::unique_lock<std::mutex> lk(mu_);
  while (!stop_) {
    const uint64_t seen = doorbells_.load();
    bool progress = false, waiting = false;
    // In creation order, each runner runs until it idles, waits or faults (budget permitting).
    for (StepRunner* r : runners_) {
      const Step s = r->step();
      progress |= s == Step::progress || (s != Step::faulted && r->rung_since_step());
      waiting |= s == Step::waiting;
    }
    if (progress) {
      sleep = poll_min_;
      continue;
    }
    if (!waiting) {
      // All idle: poll without the lock, so runners come and go meanwhile.
      lk.unlock();
      const bool rung = poll_doorbells(doorbells_, seen);
      lk.lock();
      if (rung) continue;
    }
    park(cv_, lk, parked_, waiting, [&] { return stop_ || doorbells_.load() != seen; }, sleep, poll_min_, poll_max_);
  }
}

StepRunner::StepRunner(SteppedEngine& engine, RunnerGroup& group) : engine_(engine), group_(group) {
  if (group_.scheduling() == Scheduling::threaded) thread_ = std::thread([this] { loop(); });
  else group_.add(this);
}

StepRunner::~StepRunner() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  } else {
    group_.remove(this);
  }
}

void StepRunner::doorbell() {
  doorbells_.fetch_add(1);
  if (thread_.joinable()) wake(mu_, cv_, parked_);
  else group_.kick();
}

RunnerState StepRunner::state() const {
  std::lock_guard<std::mutex> lk(mu_);
  return state_;
}

bool StepRunner::wait_settled(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lk(mu_);
  return settled_cv_.wait_for(lk, timeout, [&] {
    return state_ == RunnerState::faulted ||
           (ran_after_ == doorbells_.load() && (state_ == RunnerState::idle || state_ == RunnerState::waiting));
  });
}

std::string StepRunner::state_text() const {
  std::lock_guard<std::mutex> lk(mu_);
  std::string s = to_string(state_);
  if (state_ == RunnerState::waiting) s += " on " + waiting_;
  if (state_ == RunnerState::faulted) s += ": " + engine_.fault_text();
  return s;
}

Step StepRunner::step() {
  uint64_t seen;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (state_ == RunnerState::faulted) return Step::faulted;
    seen = doorbells_.load();
  }
  const Step s = engine_.step();
  std::string waiting = s == Step::waiting ? engine_.waiting_on() : std::string();
  {
    std::lock_guard<std::mutex> lk(mu_);
    ran_after_ = seen;
    switch (s) {
      case Step::progress: state_ = RunnerState::running; break;
      case Step::idle: state_ = RunnerState::idle; break;
      case Step::waiting:
        state_ = RunnerState::waiting;
        waiting_ = std::move(waiting);
        break;
      case Step::faulted:
        state_ = RunnerState::faulted;
        engine_.keep_fault();
        break;
    }
  }
  settled_cv_.notify_all();
  return s;
}

bool StepRunner::rung_since_step() const {
  std::lock_guard<std::mutex> lk(mu_);
  return doorbells_.load() != ran_after_;
}

void StepRunner::loop() {
  std::chrono::microseconds sleep = group_.poll_min_;
  for (;;) {
    uint64_t seen;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (stop_) return;
      seen = doorbells_.load();
    }
    const Step s = step();
    if (s == Step::progress) {
      sleep = group_.poll_min_;
      continue;
    }
    if (s == Step::idle && poll_doorbells(doorbells_, seen)) continue;
    std::unique_lock<std::mutex> lk(mu_);
    park(
        cv_, lk, parked_, s == Step::waiting, [&] { return stop_ || doorbells_.load() != seen; }, sleep,
        group_.poll_min_, group_.poll_max_);
  }
}

}  // namespace hcq::sim
