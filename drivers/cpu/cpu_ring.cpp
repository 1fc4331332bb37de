#include "cpu_ring.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "cpu_commands.hpp"
#include "hcq/backend/cpu_relax.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"

namespace hcq::cpu {
namespace {

// The longest prefix of `words` made of whole commands and at most `limit` dwords long.
size_t whole_commands_prefix(std::span<const uint32_t> words, uint64_t limit, const std::string& ring) {
  size_t i = 0;
  while (i < words.size()) {
    const uint32_t len = header_length(words[i]);
    if (len == 0 || len > words.size() - i)
      throw InvalidArgument(cat(ring, ": submitted words are not whole commands (header ", hex(words[i]), " at dword ",
                                i, " of ", words.size(), ")"));
    if (i + len > limit) break;
    i += len;
  }
  return i;
}

}  // namespace

CpuRing::CpuRing(std::span<uint32_t> words, std::string name)
    : words_(words), mask_(words.size() - 1), name_(std::move(name)) {
  if (words.size() < 16 || (words.size() & (words.size() - 1)) != 0)
    throw InvalidArgument(cat(name_, ": ring of ", words.size(), " dwords is not a power of two >= 16"));
}

uint64_t CpuRing::submit(std::span<const uint32_t> body, std::span<const uint32_t> tail) {
  std::lock_guard lock(producer_mu_);
  uint64_t w = wptr_.load(std::memory_order_relaxed);  // only producers write it, under the mutex
  put(body, w);
  put(tail, w);
  publish(w);
  return w;
}

bool CpuRing::wait_consumed(uint64_t pos) const {
  uint64_t r = read_pointer();
  if (r >= pos) return true;
  // Never throws: its caller is CpuQueue's destructor. A bad HCQ_WAIT_TIMEOUT_MS is reported by the waits instead.
  const auto timeout = knobs::wait_timeout_or_default();
  auto now = std::chrono::steady_clock::now();
  auto deadline = now + timeout;
  // Spin first, yielding every few polls, for about as long as a short kernel runs: a sleep, even of 1 us, costs
  // ~50 us of timer slack, which an eager launch of a real kernel (its queue's destructor waits here) would pay.
  const auto spin_until = now + std::chrono::microseconds(50);
  auto nap = std::chrono::microseconds(1);
  unsigned polls = 0;
  while (r < pos) {
    if (now < spin_until) {
      cpu_relax();
      if ((++polls & 63) == 0) {
        now = std::chrono::steady_clock::now();
        std::this_thread::yield();
      }
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
      now = std::chrono::steady_clock::now();
    }
    const uint64_t now_r = read_pointer();
    if (now_r != r) {
      r = now_r;
      deadline = now + timeout;
    } else if (now > deadline) {
      return false;
    }
  }
  return true;
}

void CpuRing::put(std::span<const uint32_t> words, uint64_t& w) {
  while (!words.empty()) {
    const uint64_t to_end = room_to_end(w);
    const uint64_t limit = std::min(to_end, capacity() - (w - read_pointer()));
    // The fast path: everything fits. Otherwise cut at a command boundary.
    const size_t n = words.size() <= limit ? words.size() : whole_commands_prefix(words, limit, name_);
    if (n > 0) {
      std::copy_n(words.data(), n, words_.data() + (w & mask_));
      w += n;
      words = words.subspan(n);
      continue;
    }
    const uint32_t first = header_length(words[0]);  // validated by whole_commands_prefix
    if (first > to_end) {
      // The next command does not fit before the end: the rest of the ring is filler.
      wait_for_space(w, to_end);
      words_[w & mask_] = make_header(Opcode::skip, 1);
      w += to_end;
    } else {
      wait_for_space(w, first);
    }
  }
}

void CpuRing::wait_for_space(uint64_t w, uint64_t n) {
  uint64_t r = read_pointer();
  if (w + n - r <= capacity()) return;
  publish(w);  // the consumer can only make room by running what is already written
  const auto timeout = knobs::wait_timeout();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  auto nap = std::chrono::microseconds(1);
  while (w + n - r > capacity()) {
    std::this_thread::sleep_for(nap);
    nap = std::min(nap * 2, std::chrono::microseconds(1000));
    const uint64_t now_r = read_pointer();
    if (now_r != r) {
      r = now_r;
      deadline = std::chrono::steady_clock::now() + timeout;  // progress restarts the timer
    } else if (std::chrono::steady_clock::now() > deadline) {
      throw TimeoutError(cat(name_, ": ring full for ", timeout.count(), " ms (read pointer ", r, ", write pointer ", w,
                             ", capacity ", capacity(), " dwords, need ", n, ")"));
    }
  }
}

void CpuRing::publish(uint64_t w) {
  // seq_cst store + load against the consumer's seq_cst store of the flag + load of the pointer: one of the two
  // sides sees the other, so a consumer going to sleep never misses this submission.
  wptr_.store(w, std::memory_order_seq_cst);
  if (consumer_sleeping_.load(std::memory_order_seq_cst) != 0) ring_doorbell();
}

void CpuRing::ring_doorbell() {
  doorbell_.fetch_add(1, std::memory_order_seq_cst);
  doorbell_.notify_one();
}

void CpuRing::wait_for_work(uint64_t r, const std::atomic<bool>& stop, std::chrono::nanoseconds spin) {
  const auto spin_until = std::chrono::steady_clock::now() + spin;
  unsigned polls = 0;
  while (wptr_.load(std::memory_order_acquire) == r && !stop.load(std::memory_order_relaxed)) {
    cpu_relax();
    // Reading the clock costs more than a poll: look at it every few polls only. Yield there too: when the
    // producer shares this core (more busy threads than cores), a pure spin would keep it from submitting until
    // the spin ends; a yield with nothing else to run returns at once.
    if ((++polls & 63) == 0) {
      if (std::chrono::steady_clock::now() >= spin_until) break;
      std::this_thread::yield();
    }
  }
  while (wptr_.load(std::memory_order_acquire) == r && !stop.load(std::memory_order_relaxed)) {
    const uint32_t bell = doorbell_.load(std::memory_order_seq_cst);
    consumer_sleeping_.store(1, std::memory_order_seq_cst);
    if (wptr_.load(std::memory_order_seq_cst) == r && !stop.load(std::memory_order_seq_cst))
      doorbell_.wait(bell, std::memory_order_seq_cst);
    consumer_sleeping_.store(0, std::memory_order_relaxed);
  }
}

}  // namespace hcq::cpu
