// Runners: one per KFD queue, driving its packet engine on a simulator thread (threaded mode) or on the group's one
// shared thread (deterministic mode). A waiting queue re-polls after a sleep that doubles up to poll_max and is cut
// short by a doorbell; an idle queue sleeps until a doorbell.
#include <algorithm>
#include <condition_variable>
#include <list>
#include <mutex>
#include <thread>

#include "sim/amd_engine/engine.hpp"
#include "sim/amd_engine/processor.hpp"

namespace hcq::sim::amd_engine {

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
// Packets one queue runs before the runner looks at stop requests (and, deterministic, at the next queue).
constexpr size_t kBudget = 64;
class Runner;
}  // namespace

// The group's shared state: options, and in deterministic mode the one simulator thread and its runners.
struct EngineGroup::Shared {
  explicit Shared(EngineOptions o) : options(std::move(o)) {}
  ~Shared();
  void add(Runner* r);
  void remove(Runner* r);
  void kick();
  void loop();

  EngineOptions options;
  std::mutex mu;  // runners, doorbells, stop; held while a round runs, so remove() waits for the round
  std::condition_variable cv;
  std::list<Runner*> runners;
  uint64_t doorbells = 0;
  bool stop = false;
  std::thread thread;  // deterministic mode: started with the first runner
};

namespace {

class Runner final : public EngineRunner {
 public:
  Runner(const SimQueueDesc& desc, QueueHost& host, std::shared_ptr<EngineGroup::Shared> shared)
      : desc_(desc), ctx_(desc_, host, shared->options), shared_(std::move(shared)) {
    switch (desc_.type) {
      case SimQueueType::compute_pm4: proc_ = make_pm4_processor(ctx_); break;
      case SimQueueType::sdma: proc_ = make_sdma_processor(ctx_); break;
      case SimQueueType::compute_aql: proc_ = make_aql_processor(ctx_); break;
    }
    if (shared_->options.scheduling == Scheduling::threaded)
      thread_ = std::thread([this] { loop(); });
    else
      shared_->add(this);
  }

  ~Runner() override {
    if (thread_.joinable()) {
      {
        std::lock_guard<std::mutex> lk(mu_);
        stop_ = true;
      }
      cv_.notify_all();
      thread_.join();
    } else {
      shared_->remove(this);
    }
  }

  void doorbell(uint64_t) override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      ++doorbells_;
    }
    if (thread_.joinable())
      cv_.notify_all();
    else
      shared_->kick();
  }

  std::string describe() const override {
    uint64_t r = 0, w = 0;
    const bool have_r = const_cast<QueueContext&>(ctx_).load<uint64_t>(desc_.rptr_va, r);
    const bool have_w = const_cast<QueueContext&>(ctx_).load<uint64_t>(desc_.wptr_va, w);
    std::lock_guard<std::mutex> lk(mu_);
    std::string s = std::string(proc_->engine()) + " queue " + std::to_string(desc_.queue_id) + ": read pointer " +
                    (have_r ? std::to_string(r) : "unmapped") + ", write pointer " +
                    (have_w ? std::to_string(w) : "unmapped") + ", " + to_string(state_);
    if (state_ == RunnerState::waiting) s += " on " + waiting_;
    if (state_ == RunnerState::faulted) s += ": " + fault_.message();
    return s;
  }

  RunnerState state() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return state_;
  }
  FaultRecord fault() const override {
    std::lock_guard<std::mutex> lk(mu_);
    return fault_;
  }
  bool wait_settled(std::chrono::milliseconds timeout) const override {
    std::unique_lock<std::mutex> lk(mu_);
    return settled_cv_.wait_for(lk, timeout, [&] {
      return state_ == RunnerState::faulted ||
             (ran_after_ == doorbells_ && (state_ == RunnerState::idle || state_ == RunnerState::waiting));
    });
  }

  // One step of the engine on the calling (simulator) thread. Returns what it ended with.
  Step step() {
    uint64_t seen;
    {
      std::lock_guard<std::mutex> lk(mu_);
      if (state_ == RunnerState::faulted) return Step::faulted;
      seen = doorbells_;
    }
    const Step s = proc_->run(kBudget);
    std::string waiting = s == Step::waiting ? proc_->waiting_on() : std::string();
    {
      std::lock_guard<std::mutex> lk(mu_);
      ran_after_ = seen;
      switch (s) {
        case Step::progress: state_ = RunnerState::running; break;
        case Step::idle: state_ = RunnerState::idle; break;
        case Step::waiting: state_ = RunnerState::waiting; waiting_ = std::move(waiting); break;
        case Step::faulted: state_ = RunnerState::faulted; fault_ = ctx_.last_fault(); break;
      }
    }
    settled_cv_.notify_all();
    return s;
  }
  // Whether a doorbell came after the last step began.
  bool rung_since_step() const {
    std::lock_guard<std::mutex> lk(mu_);
    return doorbells_ != ran_after_;
  }

 private:
  void loop() {
    const EngineOptions& o = shared_->options;
    std::chrono::microseconds sleep = o.poll_min;
    for (;;) {
      uint64_t seen;
      {
        std::lock_guard<std::mutex> lk(mu_);
        if (stop_) return;
        seen = doorbells_;
      }
      const Step s = step();
      if (s == Step::progress) {
        sleep = o.poll_min;
        continue;
      }
      std::unique_lock<std::mutex> lk(mu_);
      auto woken = [&] { return stop_ || doorbells_ != seen; };
      if (s == Step::waiting) {
        cv_.wait_for(lk, sleep, woken);
        sleep = std::min(sleep * 2, o.poll_max);
      } else {  // idle or faulted: only a doorbell (or stop) matters
        cv_.wait(lk, woken);
        sleep = o.poll_min;
      }
    }
  }

  const SimQueueDesc desc_;
  QueueContext ctx_;
  std::shared_ptr<EngineGroup::Shared> shared_;
  std::unique_ptr<Processor> proc_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  mutable std::condition_variable settled_cv_;
  uint64_t doorbells_ = 1;  // a new queue looks at its ring once (the pointers may already be set)
  uint64_t ran_after_ = 0;
  bool stop_ = false;
  RunnerState state_ = RunnerState::idle;
  std::string waiting_;
  FaultRecord fault_;
  std::thread thread_;
};

}  // namespace

EngineGroup::Shared::~Shared() {
  {
    std::lock_guard<std::mutex> lk(mu);
    stop = true;
  }
  cv.notify_all();
  if (thread.joinable()) thread.join();
}

void EngineGroup::Shared::add(Runner* r) {
  {
    std::lock_guard<std::mutex> lk(mu);
    runners.push_back(r);
    ++doorbells;
    if (!thread.joinable()) thread = std::thread([this] { loop(); });
  }
  cv.notify_all();
}

void EngineGroup::Shared::remove(Runner* r) {
  std::lock_guard<std::mutex> lk(mu);
  runners.remove(r);
}

void EngineGroup::Shared::kick() {
  {
    std::lock_guard<std::mutex> lk(mu);
    ++doorbells;
  }
  cv.notify_all();
}

void EngineGroup::Shared::loop() {
  std::chrono::microseconds sleep = options.poll_min;
  std::unique_lock<std::mutex> lk(mu);
  while (!stop) {
    const uint64_t seen = doorbells;
    bool progress = false, waiting = false;
    // In creation order, each queue runs until it idles, waits or faults (budget permitting).
    for (Runner* r : runners) {
      const Step s = r->step();
      progress |= s == Step::progress || (s != Step::faulted && r->rung_since_step());
      waiting |= s == Step::waiting;
    }
    if (progress) {
      sleep = options.poll_min;
      continue;
    }
    auto woken = [&] { return stop || doorbells != seen; };
    if (waiting) {
      cv.wait_for(lk, sleep, woken);
      sleep = std::min(sleep * 2, options.poll_max);
    } else {
      cv.wait(lk, woken);
      sleep = options.poll_min;
    }
  }
}

EngineGroup::EngineGroup(EngineOptions options) : shared_(std::make_shared<Shared>(std::move(options))) {}
EngineGroup::~EngineGroup() = default;

const EngineOptions& EngineGroup::options() const { return shared_->options; }

std::unique_ptr<EngineRunner> EngineGroup::create(const SimQueueDesc& desc, QueueHost& host) {
  if (!desc.target) throw std::invalid_argument("SimQueueDesc without a target");
  return std::make_unique<Runner>(desc, host, shared_);
}

QueueRunnerFactory make_queue_runner_factory(EngineOptions options) {
  auto group = std::make_shared<EngineGroup>(std::move(options));
  return [group](const SimQueueDesc& desc, QueueHost& host) -> std::unique_ptr<QueueRunner> {
    return group->create(desc, host);
  };
}

}  // namespace hcq::sim::amd_engine
