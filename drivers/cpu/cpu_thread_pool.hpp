// Helper threads that join the worker of the compute queue in a parallel-for over workgroups. The caller works
// too, so a pool of n helpers runs kernels on n + 1 cores. Helpers spin briefly after a job (the next launch often
// follows at once), then sleep until the next one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
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

  Job job_;
  std::mutex mu_;
  std::condition_variable wake_;         // helpers: a job was published, or stop
  std::condition_variable finished_;     // caller: the last helper left the job
  std::atomic<uint64_t> generation_{0};  // bumped per job; helpers spin on it before sleeping
  bool job_open_ = false;                // mu_: helpers may still join the current job
  unsigned busy_ = 0;                    // mu_: helpers inside the current job
  bool stop_ = false;                    // mu_
  std::vector<std::thread> threads_;
};

}  // namespace hcq::cpu
