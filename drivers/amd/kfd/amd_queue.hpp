// The AMD backend's HWQueues over KFD: a PM4 compute queue and an SDMA copy queue, each encoding through the
// drivers/amd encoders (so per-generation facts come from the target tables) and submitting into one hardware ring
// (AmdRing) shared by every HWQueue of that kind on the device.
//
// Ring protocol: the write pointer is a monotonically increasing 64-bit count in the queue's units (dwords for PM4,
// bytes for SDMA, 64-byte packets for AQL); the GPU stores its read pointer the same way. An AQL packet is
// published by its first dword (the header), stored last with release order; free slots hold INVALID headers. A submission never overwrites what the GPU has
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
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "amd/encode.hpp"
#include "amd/kfd/amd_scratch.hpp"
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
  bool consumed(uint64_t end_words) const { return read_words() >= end_words; }
  // "PM4 compute queue 3: rptr 64 wptr 64 (dwords, ring of 262144 bytes)"; when the GPU has not read everything,
  // also the packet at the read pointer, decoded ("; at rptr: RELEASE_MEM event_type=...").
  std::string describe() const;
  // For hang bundles: the ring's words from the GPU's read pointer to the write pointer (pointers in the queue's
  // units: dwords, bytes for SDMA, packets for AQL), without the lock, as describe() reads them.
  capture::RingDump pending() const;
  // Whether the GPU has read everything handed to it.
  bool drained() const;
  // Called while waiting for the GPU (for room, for consumption); throws to end the wait, e.g. the device's
  // sticky DeviceFault. wait_room rethrows it; wait_consumed returns false.
  void set_fault_check(std::function<void()> check) { check_ = std::move(check); }
  // The queue's scratch buffers (compute queues; amd_scratch.hpp).
  AmdScratch& scratch() { return *scratch_; }

 private:
  uint64_t read_words() const;  // GPU read pointer, in words
  void publish(uint64_t pos_words);
  void put(std::span<const uint32_t> group, uint64_t& pos);
  void wait_room(uint64_t pos, uint64_t need_words);
  void fill(uint32_t n_words, uint64_t& pos);
  const char* kind_name() const;
  const char* units_name() const;
  // Ring positions are kept in dwords; the queue's pointers count bytes (SDMA), dwords (PM4) or packets (AQL).
  uint64_t to_units(uint64_t words) const;
  uint64_t to_words(uint64_t units) const;
  bool aql() const { return queue_->type() == KfdQueue::Type::compute_aql; }

  KfdGpu& gpu_;
  const Target& target_;
  std::string device_name_;
  std::unique_ptr<AmdScratch> scratch_;  // before queue_: freed only after the queue is destroyed
  std::unique_ptr<KfdQueue> queue_;
  uint32_t ring_words_;
  uint32_t* ring_;
  mutable std::mutex mu_;
  uint64_t wptr_words_ = 0;       // written so far
  uint64_t published_words_ = 0;  // handed to the GPU
  uint64_t read_seen_words_ = 0;  // the GPU read pointer as last loaded (it only grows)
  std::vector<uint32_t> filler_;
  std::function<void()> check_;
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
  // Raw words (HWQueue::raw) are one group of their own.
  void encode_raw(std::span<const uint32_t> words) override {
    start_group();
    HWQueue::encode_raw(words);
  }
  std::byte* bind_to_side(std::span<const uint32_t> words);
  // Submits `words` (words_ or the bound copy) with the completion tail built by `tail_words`.
  void submit_groups(std::span<const uint32_t> words, std::span<const uint32_t> tail);

  // The side memory of one launch: [AQL-layout dispatch packet, when `with_packet`][kernarg segment], with the
  // arguments and the launch block recorded as patches; a kernel with a private segment gets the ring's scratch
  // (grown as needed). Throws InvalidArgument (before recording any patch) for a kernel whose scratch exceeds the
  // target's limit or dims the packet cannot take.
  struct Launch {
    const AmdProgram* program = nullptr;
    SideBlock side;
    std::byte* packet = nullptr;              // the packet's host address (null without one)
    const std::byte* launch_block = nullptr;  // host address of the launch block: global[3], local[3] as u32
    uint64_t packet_va = 0, kargs_va = 0;
    AmdScratch::Use scratch;  // the ring's scratch buffer for it (base 0 when the kernel needs none)
  };
  // `grid_at_submit`: the packet's grid sizes are left for the caller to fill at submit from the (patched) launch
  // block, so any mix of symbolic dims is accepted (the AQL queue does this).
  Launch build_launch(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local,
                      bool with_packet, bool grid_at_submit = false);

  // The encoders report a symbol before they append its word; the patches are recorded once the packet is built.
  void flush_patches();
  RecordingSink sink_;
  AmdRing& ring_;
  std::vector<uint32_t> starts_;
  std::vector<uint32_t> tail_;
  SideBlock bound_{};
  uint64_t last_end_ = 0;  // ring position (words) past this queue's last submission; 0: never submitted

 private:
  // Writes the AQL-layout dispatch packet at `at`; throws InvalidArgument when a symbolic grid size
  // (groups * local) cannot be patched.
  void write_dispatch_packet(const AmdProgram& program, std::byte* at, uint64_t kargs_va, const Dims& global,
                             const Dims& local, bool grid_at_submit);
};

// Also the base of the AQL queue (amd_aql_queue.hpp), which encodes everything but exec the same way.
class AmdPm4Queue : public AmdQueue {
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
