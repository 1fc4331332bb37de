#include "cpu_thread_pool.hpp"

#include <algorithm>
#include <chrono>

namespace hcq::cpu {
namespace {

// How long a helper keeps looking for the next job before it sleeps: long enough to catch back-to-back launches,
// short enough not to steal a core from the host for long.
constexpr auto kHelperSpin = std::chrono::microseconds(20);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

CpuThreadPool::CpuThreadPool(unsigned helpers) {
  threads_.reserve(helpers);
  for (unsigned i = 0; i < helpers; ++i) threads_.emplace_back([this] { helper_main(); });
}

CpuThreadPool::~CpuThreadPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void CpuThreadPool::work_on(Job& job) {
  for (;;) {
    const uint64_t begin = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.n) return;
    job.fn(job.ctx, begin, std::min(job.n, begin + job.chunk));
  }
}

void CpuThreadPool::parallel_for(uint64_t n, RangeFn fn, void* ctx) {
  if (n == 0) return;
  if (threads_.empty() || n == 1) {
    fn(ctx, 0, n);
    return;
  }
  {
    std::lock_guard lock(mu_);
    job_.fn = fn;
    job_.ctx = ctx;
    job_.n = n;
    // Several chunks per thread balance uneven workgroups; not so many that the counter becomes the bottleneck.
    job_.chunk = std::max<uint64_t>(1, n / (uint64_t{helpers() + 1} * 8));
    job_.next.store(0, std::memory_order_relaxed);
    job_open_ = true;
    // Under the lock: a helper checks the generation under it before sleeping, so the bump cannot be missed.
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();

  work_on(job_);

  // Close the job so late helpers skip it, then wait for those inside to finish their chunks.
  std::unique_lock lock(mu_);
  job_open_ = false;
  finished_.wait(lock, [this] { return busy_ == 0; });
}

void CpuThreadPool::helper_main() {
  uint64_t seen = generation_.load(std::memory_order_acquire);
  for (;;) {
    const auto spin_until = std::chrono::steady_clock::now() + kHelperSpin;
    while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until)
      cpu_relax();

    std::unique_lock lock(mu_);
    wake_.wait(lock, [&] { return stop_ || generation_.load(std::memory_order_acquire) != seen; });
    if (stop_) return;
    seen = generation_.load(std::memory_order_acquire);
    if (!job_open_) continue;  // that job finished before this helper woke
    ++busy_;
    lock.unlock();

    work_on(job_);

    lock.lock();
    if (--busy_ == 0) finished_.notify_one();
  }
}

}  // namespace hcq::cpu
