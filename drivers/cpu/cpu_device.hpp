// The CPU device: the HCQ interface implemented for real on the host. Each device has one compute and one copy
// hardware queue, each a ring in device memory consumed by its own worker thread (cpu_worker); kernels are C
// compiled by clang (cpu_compiler) and loaded from an in-memory ELF image (elf_loader). Memory is anonymous host
// memory mapped at addresses of the process-wide unified VA space, so a buffer has the same address everywhere.
// Several instances (CPU:0, CPU:1, ...) are independent devices, which is what cross-device tests use.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "cpu_compiler.hpp"
#include "cpu_mappings.hpp"
#include "cpu_signal_wake.hpp"
#include "hcq/backend/signal_pool.hpp"
#include "hcq/device.hpp"

namespace hcq::cpu {

class CpuRing;
class CpuThreadPool;
class CpuWorker;

class CpuDevice final : public Device, private SignalPool::PageMapper {
 public:
  // Dwords per hardware queue ring (256 KiB).
  static constexpr uint64_t kRingDwords = 64 * 1024;

  // `name` is what the registry calls it ("CPU:0"). Starts the queue workers and kernel helper threads.
  explicit CpuDevice(std::string name);
  // Synchronizes (errors swallowed), returns runtime memory, stops the workers.
  ~CpuDevice() override;

  DeviceInfo info() const override;
  std::unique_ptr<HWQueue> new_queue(QueueKind kind) override;

  // Throws InvalidArgument for size 0, OutOfMemory past the host's memory or when the VA space is full.
  Allocation alloc_memory(uint64_t size, const BufferSpec& spec) override;
  void free_memory(const Allocation& a) override;
  // Lets this device's queues touch `a` (another device's buffer). Idempotent.
  void map_memory(const Allocation& a) override;

  Compiler& compiler() override { return compiler_; }
  std::unique_ptr<Program> load_program(const std::string& name, std::span<const uint8_t> binary) override;

  double ticks_to_us(uint64_t ticks) const override { return static_cast<double>(ticks) / 1000.0; }
  std::string describe_state() const override;
  // A wait for the timeline sleeps until the worker that writes it wakes it (cpu_signal_wake.hpp).
  bool sleep_on_signal(const Signal& s, uint64_t target, std::chrono::microseconds limit) const override;
  std::vector<capture::RingDump> pending_rings() const override;

  CpuMappings& mappings() { return *mappings_; }
  const CpuSignalWake& signal_wake() const { return signal_wake_; }

 private:
  void map_signal_page(void* addr, size_t size) override;
  void unmap_signal_page(void* addr, size_t size) override;
  void stop_hardware() noexcept;
  static size_t queue_index(QueueKind k) { return k == QueueKind::compute ? 0 : 1; }

  Os& os_;
  uint64_t memory_bytes_;
  // Shared so that a peer's free can reach this map through a weak_ptr without caring whether we still exist.
  std::shared_ptr<CpuMappings> mappings_;
  bool mapper_registered_ = false;

  std::mutex mem_mu_;  // alloc/free accounting
  std::mutex peers_mu_;
  // Our allocations mapped into other CPU devices: on free they are unmapped there too.
  std::map<uint64_t, std::vector<std::weak_ptr<CpuMappings>>> peers_;
  // Allocations of non-CPU devices mapped here (their owner cannot tell us about the free).
  std::set<std::pair<uint64_t, uint64_t>> foreign_;

  std::array<Allocation, 2> ring_memory_{};
  std::array<std::unique_ptr<CpuRing>, 2> rings_;
  const CpuSignalWake& signal_wake_ = CpuSignalWake::shared();  // before the workers, which use it
  bool spare_core_ = false;  // fewer kernel threads (HCQ_CPU_THREADS) than cores: a waiter may poll
  std::unique_ptr<CpuThreadPool> pool_;
  std::array<std::unique_ptr<CpuWorker>, 2> workers_;
  CpuCompiler compiler_;
  // Found at open (CPUID, HCQ_CPU_FEATURES, the AMX permission); a bad mask fails the open.
  CpuIsa isa_;
  std::atomic<uint64_t> next_program_handle_{1};
};

}  // namespace hcq::cpu
