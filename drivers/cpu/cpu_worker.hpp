// The consumer of one CPU hardware queue: a thread that runs the commands of its ring, like the command processor
// of a GPU. It checks every address and program handle against the device's mappings; anything invalid (an unmapped
// address, an unknown opcode, a malformed length) faults the queue: the fault is recorded on the device (which
// synchronize() and wait_signal() re-raise) and the queue runs nothing more. Later submissions are consumed and
// dropped so that producers never block on a dead queue.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "cpu_mappings.hpp"
#include "cpu_ring.hpp"
#include "cpu_signal_wake.hpp"

namespace hcq {
class Device;
}

namespace hcq::cpu {

class CpuThreadPool;

class CpuWorker {
 public:
  // `queue` names the queue in messages ("compute", "copy"). Everything referenced must outlive the worker.
  // `pool` (may be null) spreads the workgroups of EXEC over helper threads.
  // `wake` is told of every signal the worker writes (host threads may sleep on it).
  CpuWorker(Device& device, std::string queue, CpuRing& ring, const CpuMappings& mappings, const CpuSignalWake& wake,
            CpuThreadPool* pool);
  ~CpuWorker();  // stops and joins the thread (a command blocked in WAIT or POLL_BIT is abandoned)
  CpuWorker(const CpuWorker&) = delete;
  CpuWorker& operator=(const CpuWorker&) = delete;

  bool faulted() const { return faulted_.load(std::memory_order_acquire); }
  // "compute queue: read pointer R, write pointer W" plus the fault, if any.
  std::string describe() const;

 private:
  // Where a command sits, for fault messages.
  struct Where {
    uint64_t ring_pos = 0;      // dword index in the ring (monotonic count)
    uint64_t indirect_va = 0;   // non-zero inside an INDIRECT buffer
    uint64_t indirect_pos = 0;  // dword index inside it
  };

  void run();
  // Runs the command at `cmd` (header already checked). Returns false when the queue must stop consuming: it
  // faulted or the worker is stopping.
  bool execute(const uint32_t* cmd, const Where& at);
  bool run_indirect(uint64_t va, uint32_t ndwords, const Where& at);
  bool exec_kernel(const uint32_t* p, const Where& at, uint32_t header);
  // Polls the 8- or 4-byte word at addr until done(value) holds: spins, then naps from first_nap doubling
  // (nap_for(d) sleeps for d at most).
  template <class T, class Done, class Nap>
  bool poll(uint64_t addr, const Where& at, uint32_t header, Done done, Nap nap_for,
            std::chrono::microseconds first_nap);
  void fault(const Where& at, uint32_t header, const std::string& what);

  Device& device_;
  std::string queue_;
  CpuRing& ring_;
  const CpuMappings& mappings_;
  const CpuSignalWake& wake_;
  CpuThreadPool* pool_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> faulted_{false};
  mutable std::mutex fault_mu_;
  std::string fault_message_;
  std::thread thread_;
};

// CLOCK_MONOTONIC in nanoseconds: what SIGNAL and TIMESTAMP write.
uint64_t monotonic_ns();

}  // namespace hcq::cpu
