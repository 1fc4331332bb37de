// The AMD backend's HWQueues over KFD: a PM4 compute queue and an SDMA copy queue, each encoding through the
// drivers/amd encoders (so per-generation facts come from the target tables) and submitting into one hardware ring
// (AmdRing) shared by every HWQueue of that kind on the device.
//
// Ring protocol: the write pointer is a monotonically increasing 64-bit count in the queue's units (dwords for PM4,
// bytes for SDMA); the GPU stores its read pointer the same way. A submission never overwrites what the GPU has
// not read: before writing it waits for the read pointer (publishing what it already wrote, so the GPU can make
// progress). Packets never straddle the ring end: the gap is filled with a NOP. Submissions from several threads
// are serialized per ring.
//
// bind(): PM4 copies the words into side memory (host-mapped device memory) and submits an INDIRECT_BUFFER to it.
// The simulated SDMA engine has no INDIRECT packet, so a bound SDMA queue keeps its words in side memory (patched
// there) and copies them into the ring at each submit.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "amd/encode.hpp"
#include "amd/kfd/kfd.hpp"
#include "amd/target.hpp"
#include "hcq/device.hpp"
#include "hcq/hw_queue.hpp"

namespace hcq::amd {

class AmdDevice;
class AmdProgram;

// One KFD user queue (ring, read/write pointers, doorbell), shared by the HWQueues of one kind on a device.
class AmdRing {
 public:
  AmdRing(KfdGpu& gpu, const Target& target, KfdQueue::Type type, uint32_t ring_bytes, std::string device_name);
  AmdRing(const AmdRing&) = delete;
  AmdRing& operator=(const AmdRing&) = delete;

  const Target& target() const { return target_; }
  KfdQueue::Type type() const { return queue_->type(); }
  uint32_t ring_words() const { return ring_words_; }

  // Copies `words` into the ring, packet group by packet group: `starts` are the word offsets where each group that
  // must not be split starts (sorted, first 0; empty means one group), then `tail` as one more group; publishes the
  // write pointer and rings the doorbell. Waits for room (knobs::wait_timeout(), then TimeoutError naming the queue,
  // rptr and wptr). Returns the write position (in words) just past `tail`.
  uint64_t submit(std::span<const uint32_t> words, std::span<const uint32_t> starts, std::span<const uint32_t> tail);
  // True once the GPU's read pointer has passed `end_words` (a value submit() returned); false on timeout.
  bool wait_consumed(uint64_t end_words, std::chrono::milliseconds timeout) const;
  // "pm4 queue 3: rptr 0x40 wptr 0x40 (dwords)".
  std::string describe() const;

 private:
  uint64_t read_words() const;   // GPU read pointer, in words
  void publish(uint64_t pos_words);
  void put(std::span<const uint32_t> group, uint64_t& pos);
  void wait_room(uint64_t pos, uint64_t need_words);
  void fill(uint32_t n_words, uint64_t& pos);
  const char* kind_name() const;
  uint32_t units_per_word() const { return queue_->type() == KfdQueue::Type::sdma ? 4 : 1; }

  KfdGpu& gpu_;
  const Target& target_;
  std::string device_name_;
  std::unique_ptr<KfdQueue> queue_;
  uint32_t ring_words_;
  uint32_t* ring_;
  mutable std::mutex mu_;
  uint64_t wptr_words_ = 0;      // written so far
  uint64_t published_words_ = 0;  // handed to the GPU
  std::vector<uint32_t> filler_;
};

// What both AMD queue kinds share: the ring, side memory, command boundaries, and the patch sink for the encoders.
class AmdQueue : public HWQueue {
 public:
  // Waits (up to the standard timeout) until the ring has read this queue's last submission, then gives its side
  // memory back; a queue that never finishes leaks its side memory rather than freeing it under the GPU.
  ~AmdQueue() override;

 protected:
  AmdQueue(Device& dev, QueueKind kind, AmdRing& ring);
  const Target& target() const { return ring_.target(); }
  // Marks where the next packet group starts (a group is never split across ring wrap or waits).
  void start_group() { starts_.push_back(static_cast<uint32_t>(words_.size())); }
  std::byte* bind_to_side(std::span<const uint32_t> words);
  // Submits `words` (words_ or the bound copy) with the completion tail built by `tail_words`.
  void submit_groups(std::span<const uint32_t> words, std::span<const uint32_t> tail);

  // The encoders report a symbol before they append its word; the patches are recorded once the packet is built.
  void flush_patches();
  RecordingSink sink_;
  AmdRing& ring_;
  std::vector<SideBlock> side_;
  std::vector<uint32_t> starts_;
  std::vector<uint32_t> tail_;
  SideBlock bound_{};
  uint64_t last_end_ = 0;  // ring position (words) past this queue's last submission; 0: never submitted
};

class AmdPm4Queue final : public AmdQueue {
 public:
  AmdPm4Queue(Device& dev, AmdRing& ring) : AmdQueue(dev, QueueKind::compute, ring) {}

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
  Pm4Encoder enc() { return Pm4Encoder(target(), words_, &sink_); }
  // Writes the AQL-layout dispatch packet at `at` for a kernel that asks for the dispatch pointer; throws
  // InvalidArgument when a symbolic grid size (groups * local) cannot be patched.
  void write_dispatch_packet(const AmdProgram& program, std::byte* at, uint64_t kargs_va, const Dims& global,
                             const Dims& local);
};

class AmdSdmaQueue final : public AmdQueue {
 public:
  AmdSdmaQueue(Device& dev, AmdRing& ring) : AmdQueue(dev, QueueKind::copy, ring) {}

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
  SdmaEncoder enc() { return SdmaEncoder(target(), words_, &sink_); }
};

}  // namespace hcq::amd
