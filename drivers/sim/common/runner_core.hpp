// The scheduling core both simulated GPUs' runners share: one runner per queue (AMD) or channel (NVIDIA), stepped
// either on a simulator thread of its own (threaded mode) or on one thread that serves every runner of a group,
// round-robin in creation order (deterministic mode). A runner that waits (WAIT_REG_MEM, a semaphore acquire, ...)
// re-polls after a sleep that doubles from poll_min to poll_max and is cut short by a doorbell; an idle runner
// polls its doorbell for a moment (kIdlePoll), then sleeps until a doorbell. No lock is held while the engine runs,
// and teardown stops the thread promptly.
//
// A doorbell is what it is on hardware, a store (here an atomic count) the command processor notices, plus a
// wake-up only when the simulator thread is asleep: the thread raises `parked` before its last look at the count,
// the ringer reads `parked` after its increment (both sequentially consistent), so one of them always sees the
// other and a doorbell is never lost. A submission that finds the thread awake (running, or polling after going
// idle) costs the submitting host thread no lock and no system call.
//
// The engines plug in through SteppedEngine (what one step runs, what it waits on, keeping a fault record); the
// core keeps the doorbell count, the runner's state and the threads.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace hcq::sim {

// What one step of an engine ended with.
enum class Step : uint8_t {
  progress,  // ran its budget; more may be ready
  idle,      // nothing (more) to execute: the read pointer (GPGet) reached the write pointer (GPPut)
  waiting,   // blocked on a condition in memory; stepping again re-checks it
  faulted,   // stopped; the fault was reported
};

enum class Scheduling : uint8_t { threaded, deterministic };

enum class RunnerState : uint8_t {
  idle,     // nothing to execute
  running,  // work to execute
  waiting,  // blocked on memory (a wait packet, a semaphore acquire, an unpublished AQL slot)
  faulted,  // stopped for good; the runner's fault() says why
};
const char* to_string(RunnerState s);

// The engine behind one runner. step() and waiting_on() run on the simulator thread, one call at a time.
class SteppedEngine {
 public:
  // Runs one budget of work (packets, methods) and says what it ended with.
  virtual Step step() = 0;
  // What the engine waits for, after step() returned waiting.
  virtual std::string waiting_on() const = 0;
  // After step() returned faulted, with the runner's lock held: copy the fault record the runner reports.
  virtual void keep_fault() = 0;
  // For describe(), with the runner's lock held, once faulted: the fault in one line.
  virtual std::string fault_text() const = 0;

 protected:
  ~SteppedEngine() = default;
};

class StepRunner;

// What the runners of one group share: the poll timing and, in the deterministic mode, the one simulator thread
// (started with the first runner, stopped by the destructor).
class RunnerGroup {
 public:
  RunnerGroup(Scheduling scheduling, std::chrono::microseconds poll_min, std::chrono::microseconds poll_max)
      : scheduling_(scheduling), poll_min_(poll_min), poll_max_(poll_max) {}
  ~RunnerGroup();
  RunnerGroup(const RunnerGroup&) = delete;
  RunnerGroup& operator=(const RunnerGroup&) = delete;

  Scheduling scheduling() const { return scheduling_; }

 private:
  friend class StepRunner;
  void add(StepRunner* r);
  void remove(StepRunner* r);
  void kick();
  void loop();

  const Scheduling scheduling_;
  const std::chrono::microseconds poll_min_, poll_max_;
  std::mutex mu_;  // runners_, stop_; held while a round runs, so remove() waits for the round
  std::condition_variable cv_;
  std::list<StepRunner*> runners_;
  std::atomic<uint64_t> doorbells_{0};  // rung without mu_: a kick never waits for a round
  std::atomic<bool> parked_{false};     // the thread sleeps (or is about to): a kick must wake it
  bool stop_ = false;
  std::thread thread_;  // deterministic mode
};

// One runner's state machine and thread. Make it the last member of the engine's runner, after everything its
// SteppedEngine touches: it starts stepping when constructed and stops (joins its thread, or leaves the group's
// round) when destroyed, before those members go. The group must outlive it.
class StepRunner {
 public:
  StepRunner(SteppedEngine& engine, RunnerGroup& group);
  ~StepRunner();
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // A wake-up: the runner looks at its ring again. Never blocks on the engine's work.
  void doorbell();
  RunnerState state() const;
  // Waits until the runner has looked at the ring since the last doorbell and is idle, waiting or faulted. False on
  // timeout.
  bool wait_settled(std::chrono::milliseconds timeout) const;
  // "idle", "waiting on <what>", "faulted: <fault text>", for describe().
  std::string state_text() const;
  // The runner's lock, for reading what keep_fault() copied.
  std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mu_); }

 private:
  friend class RunnerGroup;
  // One step of the engine on the calling (simulator) thread.
  Step step();
  // Whether a doorbell came after the last step began.
  bool rung_since_step() const;
  void loop();

  SteppedEngine& engine_;
  RunnerGroup& group_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  mutable std::condition_variable settled_cv_;
  // Rung without mu_ (see the top of this file). A new runner looks at its ring once: the write pointer may
  // already be set.
  std::atomic<uint64_t> doorbells_{1};
  std::atomic<bool> parked_{false};  // the thread sleeps (or is about to): a doorbell must wake it
  uint64_t ran_after_ = 0;
  bool stop_ = false;
  RunnerState state_ = RunnerState::idle;
  std::string waiting_;
  std::thread thread_;  // threaded mode
};

}  // namespace hcq::sim
