// The CPU device's HWQueue: encodes the builder's operations into the command format of cpu_commands.hpp and hands
// them to the ring of the matching hardware queue (compute or copy). The base class validates and patches.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hcq/device.hpp"
#include "hcq/hw_queue.hpp"

namespace hcq::cpu {

class CpuRing;

class CpuQueue final : public HWQueue {
 public:
  CpuQueue(Device& dev, QueueKind kind, CpuRing& ring);
  // Waits until the ring has consumed this queue's last submission, then gives its side memory (kernargs, the
  // bound copy) back to the device.
  ~CpuQueue() override;

 protected:
  void encode_wait(Sym signal_addr, Sym value) override;
  void encode_signal(Sym signal_addr, Sym value) override;
  void encode_timestamp(Sym signal_addr) override;
  void encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) override;
  void encode_copy(Sym dst, Sym src, uint64_t size) override;
  void encode_memory_barrier() override;
  void encode_write(Sym addr, Sym value, Width width) override;
  void encode_poll_bit(Sym addr, uint32_t mask, bool set) override;
  std::byte* bind_words(std::span<const uint32_t> words) override;
  void submit_words(uint64_t completion_addr, uint64_t seq) override;

 private:
  CpuRing& ring_;
  uint64_t bound_va_ = 0;
  uint32_t bound_dwords_ = 0;
  uint64_t last_end_ = 0;  // ring position just past this queue's last submission (0: never submitted)
};

// For hang bundles: the words of `ring` from its read to its write pointer (at most capture::kMaxWords), read
// without the producer lock (a hang report must not wait for a blocked submitter).
capture::RingDump pending_ring_words(const CpuRing& ring, const char* queue);

}  // namespace hcq::cpu
