// The NVIDIA backend's HWQueues over RM channels: a compute queue (host + compute class methods, kernels launched
// by QMD) and a copy queue (host + copy class methods), each encoding through drivers/nv's PushbufferEncoder and
// QmdBuilder (so per-architecture facts come from the class and QMD tables) and submitting into one NvRing: the
// GPFIFO channel of that engine, shared by every HWQueue of that kind on the device.
//
// Ring protocol: GPPut (in USERD) is the index of the next GPFIFO entry we write; the GPU stores GPGet there as it
// consumes entries. A pushbuffer segment is copied into the channel's pushbuffer memory (a byte ring of its own) and
// named by one GPFIFO entry. Neither ring is ever overwritten where the GPU has not fetched yet: before writing,
// a submission publishes what it already wrote and waits for GPGet to move (the standard timeout, then a
// TimeoutError naming the channel, GPGet and GPPut). One GPFIFO slot always stays empty, so GPGet == GPPut means
// "nothing pending". A segment never straddles the pushbuffer end: the gap is skipped and freed with the entry
// that follows it. Submissions from several threads are serialized per ring.
//
// bind(): the words are copied once into side memory (host-visible, GPU mapped); each submit is then one GPFIFO
// entry pointing at them, plus the completion tail in the pushbuffer.
//
// Signals right after an exec ride on that QMD's release semaphore (no methods), and an exec right after an exec is
// chained through the previous QMD's dependent-QMD pointer, as tinygrad does: the second grid starts when the first
// has completed, with no pushbuffer methods between them.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hcq/device.hpp"
#include "hcq/hw_queue.hpp"
#include "nv/encode.hpp"
#include "nv/rm/nv_channel.hpp"

namespace hcq::nv {

class NvProgram;

// One GPFIFO channel's submission state: its ring of entries, its pushbuffer memory and the doorbell.
class NvRing {
 public:
  // `pushbuffer_bytes`: host memory mapped on the GPU for unbound submissions (a multiple of 4).
  NvRing(NvGpu& gpu, const NvChannelView& channel, uint64_t pushbuffer_bytes, std::string device_name);
  NvRing(const NvRing&) = delete;
  NvRing& operator=(const NvRing&) = delete;

  const NvChannelView& channel() const { return ch_; }
  const NvArchInfo& arch() const { return arch_; }
  // The QMD builder of this channel's architecture, shared by its queues (a queue per eager launch builds none).
  const QmdBuilder& qmd_builder() const { return qmd_; }
  // The pushbuffer encoder's plan for this architecture, looked up once for every queue's encoder.
  const EncoderPlan& encoder_plan() const { return plan_; }
  uint64_t pushbuffer_bytes() const { return pb_bytes_; }
  uint32_t entries() const { return ch_.entries; }

  // A segment already in device memory (a bound queue's words).
  struct Segment {
    uint64_t va = 0;
    uint32_t dwords = 0;
  };
  // Hands one submission to the GPU: the entry for `bound` (if given), then `words` followed by `tail` copied into
  // the pushbuffer as one segment (if any); then GPPut and the doorbell. Waits for room in both rings. Returns the
  // GPFIFO position (a running count of entries) just past this submission.
  uint64_t submit(std::span<const uint32_t> words, std::span<const uint32_t> tail, const Segment* bound = nullptr);
  // True once GPGet has passed `end` (a value submit() returned); false on timeout.
  bool wait_consumed(uint64_t end, std::chrono::milliseconds timeout) const;
  // Entries the GPU has consumed so far (a running count, like submit()'s result).
  uint64_t consumed() const;
  // "compute channel 0xcaf00004 (class 0xcbc0): GPGet 12 GPPut 12 of 1024 entries, idle" (or "busy", then the
  // entry at GPGet decoded and its first methods when its segment is in this ring's pushbuffer), and the last
  // completion signal a tracked queue asked for, with its value and the value awaited.
  std::string describe() const;
  // For hang bundles: appends the GPFIFO entries from GPGet to GPPut ("nv-gpfifo", pointers as entry indices), then
  // one "nv-push" dump per entry with its segment's words when the segment lies in this ring's pushbuffer (a bound
  // queue's segment is in device memory: only its address and length). No lock, as describe().
  void pending(std::vector<capture::RingDump>& out) const;

  // ---- faults
  // True once RM wrote the channel's error notifier: the channel is stopped and GPGet will not move again.
  bool faulted() const;
  // What RM wrote there (meaningful when faulted()).
  abi::ErrorNotification error_notification() const;
  // Runs while a submitter waits for room, and may throw to end the wait (the device's fault check). Set before the
  // ring is shared.
  void set_fault_check(std::function<void()> check) { check_ = std::move(check); }
  // The completion signal a queue just asked this ring to write, for reports. Thread-safe.
  void note_completion(uint64_t signal_addr, uint64_t value);

 private:
  uint32_t read_gp_get() const;
  uint64_t consumed_locked() const;
  void publish();
  // Blocks until `ready()` holds, publishing first; `what` names the resource for the timeout message.
  template <typename Ready>
  void wait_for(Ready ready, const char* what, uint64_t need);
  void push_entry(uint64_t entry, uint64_t pb_start);
  uint64_t reserve_pushbuffer(uint64_t bytes, uint64_t& entry_pb_start);
  const char* engine_name() const { return ch_.engine == NvEngine::compute ? "compute" : "copy"; }
  // One GPFIFO entry: its raw bits, segment address and length, and the methods of the segment when it lies in
  // this ring's pushbuffer.
  std::string describe_entry(uint64_t entry) const;

  NvGpu& gpu_;
  NvChannelView ch_;
  const NvArchInfo& arch_;
  const EncoderPlan& plan_;
  QmdBuilder qmd_;
  std::string device_name_;
  std::unique_ptr<NvMemory> pushbuffer_;
  uint64_t pb_bytes_;
  std::byte* pb_host_;
  uint64_t pb_va_;
  mutable std::mutex mu_;
  uint64_t gp_put_ = 0;             // entries written (running count)
  uint64_t published_ = 0;          // entries handed to the GPU (GPPut written and doorbell rung)
  uint64_t pb_put_ = 0;             // pushbuffer bytes written (running count)
  std::vector<uint64_t> pb_start_;  // per GPFIFO slot: the pushbuffer position in use from that entry on
  std::function<void()> check_;
  std::atomic<uint64_t> last_signal_{0}, last_value_{0};  // note_completion
};

// What the NV queue kinds share: the ring, side memory, the encoder and its patch sink.
class NvQueue : public HWQueue {
 public:
  // Waits (up to the standard timeout) until the channel has consumed this queue's last submission, then gives its
  // side memory back; a queue that never finishes leaks its side memory rather than freeing it under the GPU.
  ~NvQueue() override;

 protected:
  NvQueue(Device& dev, QueueKind kind, NvRing& ring);
  // Host-class commands, the same on every channel.
  void encode_wait(Sym signal_addr, Sym value) override;
  void encode_timestamp(Sym signal_addr) override;
  void encode_write(Sym addr, Sym value, Width width) override;
  void encode_poll_bit(Sym addr, uint32_t mask, bool set) override;
  std::byte* bind_words(std::span<const uint32_t> words) override;
  void submit_words(uint64_t completion_addr, uint64_t seq) override;

  // The encoder reports a symbol before it appends its word; the patches are recorded once the method is built.
  void flush_patches() {
    if (!sink_.entries.empty()) [[unlikely]]
      record_patches();
  }
  void record_patches();
  const NvArchInfo& arch() const { return ring_.arch(); }

  NvRing& ring_;
  RecordingSink sink_;
  PushbufferEncoder enc_;
  SideBlock bound_{};
  std::vector<uint32_t> tail_;
  uint64_t last_end_ = 0;  // GPFIFO position past this queue's last submission; 0: never submitted
};

class NvComputeQueue final : public NvQueue {
 public:
  NvComputeQueue(Device& dev, NvRing& ring);

 protected:
  void encode_signal(Sym signal_addr, Sym value) override;
  void encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) override;
  void encode_copy(Sym dst, Sym src, uint64_t size) override;
  void encode_memory_barrier() override;

 private:
  // Records QMD symbols (word indices into a QMD in side memory) as absolute patches.
  class QmdSink final : public PatchSink {
   public:
    QmdSink(PatchList& patches, uint32_t* qmd) : patches_(patches), qmd_(qmd) {}
    void on_symbol(size_t word, const Sym& value, PatchList::Kind kind, uint8_t shift, uint8_t lo_bit,
                   uint8_t nbits) override;

   private:
    PatchList& patches_;
    uint32_t* qmd_;
  };
  // The QMD of the last exec, while nothing but QMD-riding signals came after it (else null).
  std::span<uint32_t> last_qmd() {
    return last_qmd_ != nullptr && words_.size() == words_after_exec_
               ? std::span<uint32_t>(last_qmd_, qmd_.layout().size_words)
               : std::span<uint32_t>();
  }
  // `size` bytes (rounded up to the QMD alignment) of side memory at the arena's next free offset, 256-byte aligned.
  SideBlock carve_side(uint64_t size);
  // The first arena holds one launch (most queues are an eager launch's); later ones hold several.
  static constexpr uint64_t kFirstArenaBytes = 1024, kArenaBytes = 8192;
  const QmdBuilder& qmd_;
  SideBlock arena_{};
  uint64_t arena_used_ = 0;
  uint32_t* last_qmd_ = nullptr;
  size_t words_after_exec_ = 0;
};

class NvCopyQueue final : public NvQueue {
 public:
  NvCopyQueue(Device& dev, NvRing& ring) : NvQueue(dev, QueueKind::copy, ring) {}

 protected:
  void encode_signal(Sym signal_addr, Sym value) override;
  void encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) override;
  void encode_copy(Sym dst, Sym src, uint64_t size) override;
  void encode_memory_barrier() override;
};

// The methods that make a fresh channel usable, submitted once when it is created: SET_OBJECT of its engine class
// and, on a compute channel, the shader local/shared memory windows kernels address (kShared/LocalWindow).
std::vector<uint32_t> channel_init_words(const NvArchInfo& arch, NvEngine engine);
// Generic addresses of the shared and local memory windows; the driver prefix of constant bank 0 repeats them
// (words 6..9) so compiled code can form generic pointers. tinygrad's values.
inline constexpr uint64_t kSharedWindow = 0x729400000000ull;
inline constexpr uint64_t kLocalWindow = 0x729300000000ull;

}  // namespace hcq::nv
