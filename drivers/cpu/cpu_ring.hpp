// The ring of one CPU hardware queue: a power-of-two array of command dwords in device memory, a write pointer the
// producers advance, a read pointer the consumer (cpu_worker) advances, and a doorbell. Pointers are monotonically
// increasing dword counts; a slot is pointer & (capacity - 1).
//
// Rules, as on a GPU ring:
//   - the producer never overwrites words the consumer has not consumed (it waits for the read pointer);
//   - a command never straddles the ring end: the producer fills the tail with a SKIP and wraps;
//   - submit = copy the words, release-store the write pointer, and ring the doorbell only if the consumer sleeps
//     (an atomic flag: no system call on the fast path).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>

namespace hcq::cpu {

class CpuRing {
 public:
  // `words` (device memory owned by the caller, outliving the ring) must hold a power-of-two number of dwords.
  CpuRing(std::span<uint32_t> words, std::string name);
  CpuRing(const CpuRing&) = delete;
  CpuRing& operator=(const CpuRing&) = delete;

  // ---- producer side (any thread; producers are serialized by a mutex)
  // Appends the commands of `body`, then those of `tail`, as one submission. Each span holds whole commands.
  // Waits while the ring is full; throws TimeoutError naming the queue and both pointers when the consumer makes
  // no progress for knobs::wait_timeout(). Commands are published as they are written, so a submission larger
  // than the ring still goes through. Returns the write pointer just past the submission.
  uint64_t submit(std::span<const uint32_t> body, std::span<const uint32_t> tail = {});
  // Waits until the consumer has run everything before `pos`. False when it made no progress for
  // knobs::wait_timeout_or_default() (a hung queue). Never throws: CpuQueue's destructor calls it.
  bool wait_consumed(uint64_t pos) const;

  // ---- consumer side (the one worker thread)
  uint64_t write_pointer() const { return wptr_.load(std::memory_order_acquire); }
  uint64_t read_pointer() const { return rptr_.load(std::memory_order_acquire); }
  // Releases the words before `r` to the producers.
  void set_read_pointer(uint64_t r) { rptr_.store(r, std::memory_order_release); }
  const uint32_t* slot(uint64_t pos) const { return words_.data() + (pos & mask_); }
  // Dwords from `pos` to the end of the ring.
  uint64_t room_to_end(uint64_t pos) const { return capacity() - (pos & mask_); }
  uint64_t capacity() const { return mask_ + 1; }
  // Blocks until the write pointer differs from `r` or `stop` is set: spins for `spin`, then sleeps on the
  // doorbell.
  void wait_for_work(uint64_t r, const std::atomic<bool>& stop, std::chrono::nanoseconds spin);
  // Wakes a sleeping consumer (used to deliver `stop`).
  void ring_doorbell();

  const std::string& name() const { return name_; }

 private:
  void put(std::span<const uint32_t> words, uint64_t& w);
  void wait_for_space(uint64_t w, uint64_t n);
  void publish(uint64_t w);

  std::span<uint32_t> words_;
  uint64_t mask_;
  std::string name_;
  std::mutex producer_mu_;
  alignas(64) std::atomic<uint64_t> wptr_{0};
  alignas(64) std::atomic<uint64_t> rptr_{0};
  alignas(64) std::atomic<uint32_t> consumer_sleeping_{0};
  std::atomic<uint32_t> doorbell_{0};  // the futex word the consumer sleeps on
};

}  // namespace hcq::cpu
