// HWQueue: a builder of command words for one hardware queue of one device. Built once, submitted many times.
// Operands may be symbolic (Sym); submit(vars) rewrites only the patches whose variables changed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hcq/backend/patch.hpp"
#include "hcq/memory.hpp"
#include "hcq/program.hpp"
#include "hcq/signal.hpp"
#include "hcq/sym.hpp"

namespace hcq {

// Fixed-size blocks from a per-thread cache, for objects built per launch (HWQueue's operator new; hcq/heap_cache.cpp).
void* take_block(size_t bytes);
void give_block(void* p, size_t bytes) noexcept;

class Device;
class Program;

enum class QueueKind : uint8_t { compute, copy };
const char* to_string(QueueKind k);

// Arguments of one kernel launch: buffer addresses (8 bytes each in the kernarg segment), then 32-bit values.
struct LaunchArgs {
  std::vector<Sym> bufs;
  std::vector<Sym> vals;
};

enum class Width : uint8_t { b32 = 4, b64 = 8 };

// Ownership: a queue belongs to its creator and refers to its Device, which must outlive it. Side memory it
// allocates (kernargs, QMDs, the bound copy of its words) is returned to the device when the queue is destroyed,
// and reused only once the device's timeline has passed every submission that could still read it.
// Threads: one thread builds and submits a given queue (no lock inside: a launch builds one per call); different
// queues of one device may be built and submitted from different threads at once. On a device's timeline, submit
// through Device::submit, which orders the submissions of all threads.
class HWQueue {
 public:
  virtual ~HWQueue();
  // A queue is built per eager launch: its storage comes from a per-thread block cache (heap_cache.hpp), not a
  // fresh heap allocation each time. The sized delete gets the dynamic type's size (the destructor is virtual).
  static void* operator new(size_t bytes) { return take_block(bytes); }
  static void operator delete(void* p, size_t bytes) noexcept { give_block(p, bytes); }
  HWQueue(const HWQueue&) = delete;
  HWQueue& operator=(const HWQueue&) = delete;

  // Block the queue until the signal's value >= value.
  HWQueue& wait(const Signal& s, Sym value);
  HWQueue& wait(Sym signal_addr, Sym value);
  // End-of-pipe: everything before it has finished and its writes are visible; then writes value at +0 and the
  // device clock at +8.
  HWQueue& signal(const Signal& s, Sym value);
  HWQueue& signal(Sym signal_addr, Sym value);
  // Writes the device clock at the signal's +8, in order with the queue.
  HWQueue& timestamp(const Signal& s);
  // Launch `program` over `global` workgroups of `local` threads. Compute queues only.
  HWQueue& exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local);
  // Copy `size` bytes between device addresses. Copy queues (and compute queues, where the device allows).
  HWQueue& copy(Sym dst, Sym src, uint64_t size);
  // Make host writes to device memory visible to what follows (and flush/invalidate device caches).
  HWQueue& memory_barrier();
  // Store a value at a device address, in order with the queue.
  HWQueue& write(Sym addr, Sym value, Width width = Width::b32);
  // Block until the 32-bit word at addr has every bit of mask set (set=true) or clear (set=false).
  HWQueue& poll_bit(Sym addr, uint32_t mask, bool set);
  // Append command words verbatim, unchecked: for replaying captured or hand-written streams (hcq-dump replay).
  // The device decides what they mean; bad words end in a device fault or a timeout, never in a host crash.
  HWQueue& raw(std::span<const uint32_t> words);

  // Copy the built words into device memory so that submit only patches and points the ring at them.
  HWQueue& bind();
  // Patch what changed and hand the commands to the hardware queue. The first submit finalizes the queue: no more
  // commands may be added. Resubmitting with changed variables while an earlier submission of the same queue may
  // still read its words or side memory waits for that submission first (patching is never racy).
  void submit(std::span<const uint64_t> vars = {});

  Device& device() const { return dev_; }
  QueueKind kind() const { return kind_; }
  bool bound() const { return bound_; }
  size_t num_commands() const { return num_commands_; }
  std::span<const uint32_t> words() const { return words_; }
  const PatchList& patches() const { return patches_; }
  // A number unique among this process's queues, for captures and hang bundles.
  uint32_t id() const { return id_; }

 protected:
  HWQueue(Device& dev, QueueKind kind);

  // Backend encoders. They append to words_ with emit*() and record symbolic operands with patch_word() or, for
  // side memory, patches_.add(value, {PatchList::kAbsolute, ptr, ...}).
  virtual void encode_wait(Sym signal_addr, Sym value) = 0;
  virtual void encode_signal(Sym signal_addr, Sym value) = 0;
  virtual void encode_timestamp(Sym signal_addr) = 0;
  virtual void encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) = 0;
  virtual void encode_copy(Sym dst, Sym src, uint64_t size) = 0;
  virtual void encode_memory_barrier() = 0;
  virtual void encode_write(Sym addr, Sym value, Width width) = 0;
  virtual void encode_poll_bit(Sym addr, uint32_t mask, bool set) = 0;
  // raw(): appends the words; a backend that tracks packet boundaries overrides it to mark one first.
  virtual void encode_raw(std::span<const uint32_t> words) { words_.insert(words_.end(), words.begin(), words.end()); }
  // Copy words_ into device memory and return where they now live (host pointer), or throw.
  virtual std::byte* bind_words(std::span<const uint32_t> words) = 0;
  // Hand the (patched) commands to the hardware: copy words into the ring, or point the ring at the bound copy,
  // then, in the ring itself (never in the bound copy), a 64-bit write of `seq` to `completion_addr`; then ring the
  // doorbell. The write tells the queue when this submission has finished reading its words and side memory.
  virtual void submit_words(uint64_t completion_addr, uint64_t seq) = 0;

  // Emit helpers.
  void emit(uint32_t w) { words_.push_back(w); }
  void emit64(uint64_t v) {
    words_.push_back(static_cast<uint32_t>(v));
    words_.push_back(static_cast<uint32_t>(v >> 32));
  }
  // Emits a word (or two for u64) holding `value`, patched when symbolic.
  void emit_sym32(Sym value, uint8_t shift = 0);
  void emit_sym64(Sym value);
  // Records a patch of `value` into word `index` of this queue (it follows the words when bound).
  void patch_word(size_t index, Sym value, PatchList::Kind kind, uint8_t shift = 0, uint8_t lo_bit = 0,
                  uint8_t nbits = 32);
  // Room for a typical launch's words (a PM4 launch is about 100) without regrowing.
  static constexpr size_t kInitialWords = 128;
  std::vector<uint32_t> words_;
  PatchList patches_;
  uint32_t words_region_;
  // Side memory this queue owns (kernargs, QMDs, the bound copy of its words).
  std::vector<SideBlock> side_;
  // For backend destructors: gives side_ back to the device. A queue that ends on its device's timeline gives it back
  // at once; any other asks `ring_has_read()` (has the ring read this queue's last submission, waiting for it if
  // need be) and, when that says no, keeps it — leaked rather than reused under a command that may still read it.
  template <class RingHasRead>
  void release_side(RingHasRead&& ring_has_read) {
    if (!side_.empty()) give_side_back(ends_with_timeline_signal() || ring_has_read());
  }
  // Whether this queue, submitted once, ends with a signal of its device's timeline (Device::submit's queues: every
  // eager launch and copy). Its side memory is then done with once the timeline passes that value, and
  // Device::free_side keeps a block from reuse until the timeline has passed the value current at the free, so it
  // need not wait for the ring to read the queue (a wait that cost every eager launch a timer sleep: an empty
  // kernel's launch took 78 – 90 us on SIM-AMD).
  bool ends_with_timeline_signal() const {
    return !bound_ && num_commands_ > 0 && timeline_signal_end_ == num_commands_;
  }

 private:
  // Symbolic launch dims are only known at submit; they are checked there, before anything is patched.
  struct LaunchCheck {
    std::string program;  // its name, for messages (the Program itself may go before the queue)
    Dims global, local;
    LaunchLimits limits;
  };
  void check_open_for_build() {
    if (finalized_) [[unlikely]]
      throw_finalized();
  }
  [[noreturn, gnu::noinline]] void throw_finalized() const;
  void give_side_back(bool device_done_reading);
  [[gnu::noinline]] void check_exec(const Program& program, const LaunchArgs& args);
  [[gnu::noinline]] void note_launch_dims(const Program& program, const Dims& global, const Dims& local);
  void finalize();

  Device& dev_;
  QueueKind kind_;
  bool bound_ = false;
  bool finalized_ = false;
  size_t num_commands_ = 0;
  // num_commands_ after the last signal of the device's timeline with a constant value.
  size_t timeline_signal_end_ = 0;
  uint32_t id_;
  bool tracked_ = false;    // bound or patches side memory: resubmits must know when the last one finished
  uint64_t seq_ = 0;        // submissions so far
  OwnedSignal completion_;  // value = number of the last submission the device finished (only when tracked_)
  uint64_t completion_addr_ = 0;
  std::vector<LaunchCheck> launch_checks_;
};

}  // namespace hcq
