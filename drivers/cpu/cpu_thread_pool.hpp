// Helper threads that join the worker of the compute queue in a parallel-for over workgroups. The caller works
// too, so a pool of n helpers runs kernels on n + 1 cores.
//
// Waking a sleeping thread costs about 100 us on a small VM (the idle vCPU has to be scheduled again): as long as one
// worker's half of a training step's matmul. So helpers stay awake, spinning, for a while after each job (the next
// multi-workgroup kernel of a step follows within tens of microseconds), and the caller spins (then yields) for the
// helpers still inside a job instead of sleeping on them. When the queue runs out of commands the helpers linger a
// little longer, for the next batch a training loop submits once it has read the loss, then sleep.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace hcq::cpu {

class CpuThreadPool {
 public:
  // Work on items [begin, end) of a job; `ctx` is the caller's.
  using RangeFn = void (*)(void* ctx, uint64_t begin, uint64_t end);

  explicit CpuThreadPool(unsigned helpers);
  ~CpuThreadPool();
  CpuThreadPool(const CpuThreadPool&) = delete;
  CpuThreadPool& operator=(const CpuThreadPool&) = delete;

  // Runs fn over [0, n) in chunks claimed from an atomic counter by the caller and the helpers; returns when every
  // item is done. One job at a time (the compute queue's worker is the only caller). Allocation-free.
  void parallel_for(uint64_t n, RangeFn fn, void* ctx);

  // The queue's worker has run out of commands: helpers sleep after a short linger instead of the full spin.
  void queue_idle();

  unsigned helpers() const { return static_cast<unsigned>(threads_.size()); }

 private:
  struct Job {
    RangeFn fn = nullptr;
    void* ctx = nullptr;
    uint64_t n = 0;
    uint64_t chunk = 1;
    std::atomic<uint64_t> next{0};
  };
  static void work_on(Job& job);
  void helper_main();
  // Whether a helper that has seen generation `seen` should keep spinning rather than sleep.
  bool keep_spinning(uint64_t seen) const;
  // Helpers spin until steady-clock time t (ns) at the latest.
  void spin_helpers_until(int64_t t) { awake_until_.store(t, std::memory_order_relaxed); }
  void wake_sleepers();

  Job job_;
  std::atomic<uint64_t> generation_{0};  // bumped per job and at stop; helpers wait for it to change
  std::atomic<uint64_t> open_{0};        // the generation of the job helpers may join; 0: none
  std::atomic<unsigned> busy_{0};        // helpers inside a job: the caller returns once it is 0 again
  std::atomic<int64_t> awake_until_{0};  // steady-clock ns: helpers that find no job spin until then, then sleep
  std::atomic<bool> queue_idle_{false};  // since the last job: spinning helpers then yield, never pause
  std::atomic<bool> stop_{false};
  std::atomic<unsigned> sleepers_{0};
  std::mutex mu_;  // only for sleeping helpers
  std::condition_variable wake_;
  std::vector<std::thread> threads_;
};

}  // namespace hcq::cpu
