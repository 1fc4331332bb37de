#include "cpu_thread_pool.hpp"

#include <algorithm>
#include <chrono>

#include "hcq/backend/cpu_relax.hpp"

namespace hcq::cpu {
namespace {

// How long helpers keep spinning after a job, for the next one (a training step's multi-workgroup kernels come
// tens of microseconds apart), and at most after the queue runs out of commands, for the next batch (submitted once
// the host has read a result and copied the next input in). OpenMP runtimes spin for milliseconds; past their first
// 50 us of spinning the helpers yield between looks (spin_until), so a thread with work keeps its core.
constexpr int64_t kJobSpinNs = 1'000'000;
constexpr int64_t kIdleSpinNs = 200'000;
// A spinning thread pauses between looks for this long, then yields between them, so that a thread of the same
// process that has work (another device's worker, a descheduled helper, the host) gets the core when there are more
// threads than cores.
constexpr int64_t kPauseNs = 50'000;

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins until done() holds: pauses for kPauseNs while may_pause() holds, then yields.
template <class Done, class MayPause>
void spin_until(Done done, MayPause may_pause) {
  const int64_t pause_until = steady_ns() + kPauseNs;
  bool pausing = true;
  while (!done()) {
    if (pausing && steady_ns() < pause_until && may_pause()) {
      cpu_relax();
    } else {
      pausing = false;
      std::this_thread::yield();
    }
  }
}

}  // namespace

CpuThreadPool::CpuThreadPool(unsigned helpers) {
  threads_.reserve(helpers);
  for (unsigned i = 0; i < helpers; ++i) threads_.emplace_back([this] { helper_main(); });
}

CpuThreadPool::~CpuThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  wake_sleepers();
  for (std::thread& t : threads_) t.join();
}

void CpuThreadPool::work_on(Job& job) {
  for (;;) {
    const uint64_t begin = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.n) return;
    job.fn(job.ctx, begin, std::min(job.n, begin + job.chunk));
  }
}

void CpuThreadPool::wake_sleepers() {
  // The caller's store (a generation, stop_) comes first: a helper that counted itself a sleeper after
  // this load sees that store in its predicate. One that counted itself before holds mu_ until it waits.
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
  {
    std::lock_guard lock(mu_);
  }
  wake_.notify_all();
}

void CpuThreadPool::queue_idle() {
  // Only the queue's worker writes the deadline (here and in parallel_for), so a plain read-modify-write will do.
  spin_helpers_until(std::min(awake_until_.load(std::memory_order_relaxed), steady_ns() + kIdleSpinNs));
  queue_idle_.store(true, std::memory_order_relaxed);
}

void CpuThreadPool::parallel_for(uint64_t n, RangeFn fn, void* ctx) {
  if (n == 0) return;
  if (threads_.empty() || n == 1) {
    fn(ctx, 0, n);
    return;
  }
  job_.fn = fn;
  job_.ctx = ctx;
  job_.n = n;
  // Several chunks per thread balance uneven workgroups; not so many that the counter becomes the bottleneck.
  job_.chunk = std::max<uint64_t>(1, n / (uint64_t{helpers() + 1} * 8));
  job_.next.store(0, std::memory_order_relaxed);
  queue_idle_.store(false, std::memory_order_relaxed);
  // A helper that finishes its chunk before the caller does looks at the deadline at once: it must be this job's.
  spin_helpers_until(steady_ns() + kJobSpinNs);
  const uint64_t g = generation_.load(std::memory_order_relaxed) + 1;
  open_.store(g, std::memory_order_seq_cst);  // after the job's fields: a helper that sees g sees them
  generation_.store(g, std::memory_order_seq_cst);
  wake_sleepers();

  work_on(job_);

  // Close the job, then wait for the helpers inside it to finish their chunks. A helper counts itself in busy_
  // before it checks open_, and the caller closes open_ before it reads busy_ (both sequentially consistent): either
  // the helper sees the job closed, or the caller sees the helper and waits for it.
  open_.store(0, std::memory_order_seq_cst);
  spin_until([this] { return busy_.load(std::memory_order_seq_cst) == 0; }, [] { return true; });
  spin_helpers_until(steady_ns() + kJobSpinNs);
}

bool CpuThreadPool::keep_spinning(uint64_t seen) const {
  if (generation_.load(std::memory_order_acquire) != seen || stop_.load(std::memory_order_relaxed)) return false;
  return steady_ns() < awake_until_.load(std::memory_order_relaxed);
}

void CpuThreadPool::helper_main() {
  uint64_t seen = 0;  // the generation at construction: a job published before this thread ran is still new to it
  for (;;) {
    // Once the queue is idle, the host thread that waited for it is about to run (and wants a core): yield at once.
    spin_until([&] { return !keep_spinning(seen); }, [this] { return !queue_idle_.load(std::memory_order_relaxed); });
    if (generation_.load(std::memory_order_seq_cst) == seen) {
      std::unique_lock lock(mu_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      // stop_ too: a helper may have taken the stop's generation for a job's (it found no job open and came back).
      wake_.wait(lock, [&] {
        return stop_.load(std::memory_order_seq_cst) || generation_.load(std::memory_order_seq_cst) != seen;
      });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    const uint64_t g = generation_.load(std::memory_order_acquire);
    seen = g;
    busy_.fetch_add(1, std::memory_order_seq_cst);
    if (open_.load(std::memory_order_seq_cst) == g) work_on(job_);
    busy_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace hcq::cpu
