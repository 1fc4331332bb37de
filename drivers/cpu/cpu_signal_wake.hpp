// What an interrupt is to a GPU, for the CPU device: a host thread waiting for one of the device's signals sleeps in
// the kernel (a futex on the signal's value) and the queue worker that writes the signal wakes it. Without it a wait
// yields and then sleeps with backoff (Signal::wait), which on a machine with as many busy threads as cores takes a
// core from the workers for the first 200 us and answers up to a backoff step late after that.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace hcq::cpu {

class CpuSignalWake {
 public:
  // The one every CPU device uses: a worker waiting for another CPU device's signal (a peer copy's join, a graph
  // spanning devices) is woken by the worker that writes it, instead of seeing it a nap late (up to 500 us).
  static const CpuSignalWake& shared();

  // A worker, right after storing a signal's value: wakes the threads sleeping on that signal, if any thread
  // sleeps (otherwise it costs one atomic read-modify-write, no system call).
  void wake(uint64_t* value) const noexcept;
  // A host thread: blocks until the value at `value` may have reached `target` (a worker wrote it), `limit` passed,
  // or a spurious wake-up; returns at once when it is there already. The caller looks at the value again. It first
  // polls for up to `spin` (within `limit`): a wake-up from the kernel's sleep costs tens of microseconds, more on a
  // virtual machine whose idle vCPU must be woken, which a waiter on a core no worker needs can spare the caller.
  void sleep(uint64_t* value, uint64_t target, std::chrono::microseconds limit,
             std::chrono::microseconds spin = {}) const noexcept;
  // Threads in sleep() now (tests).
  uint32_t sleepers() const { return sleepers_.load(std::memory_order_acquire); }

 private:
  mutable std::atomic<uint32_t> sleepers_{0};
};

}  // namespace hcq::cpu
