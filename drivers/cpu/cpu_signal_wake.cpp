#include "cpu_signal_wake.hpp"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <climits>
#include <ctime>

#include "hcq/backend/cpu_relax.hpp"

namespace hcq::cpu {
namespace {

// The futex is the low half of the 64-bit value: every write of a signal (a timeline advancing by one) changes it.
static_assert(std::endian::native == std::endian::little, "the futex word is the value's first four bytes");
uint32_t* low_word(uint64_t* value) { return reinterpret_cast<uint32_t*>(value); }

}  // namespace

// Ordering (the two sides of a Dekker handshake): the worker stores the value, then reads the sleeper count with a
// read-modify-write; a sleeper counts itself with one, then reads the value. The two read-modify-writes are ordered
// in the count's modification order: if the worker's comes first (it reads no sleeper), it synchronises with the
// sleeper's, so the sleeper reads the new value and does not block; if the sleeper's comes first, the worker sees
// it and wakes it (or the futex, finding the word changed, does not block). A read-modify-write rather than a fence:
// ThreadSanitizer follows it.
const CpuSignalWake& CpuSignalWake::shared() {
  static const auto* wake = new CpuSignalWake;  // never destroyed: workers may still run while statics go
  return *wake;
}

void CpuSignalWake::wake(uint64_t* value) const noexcept {
  if (sleepers_.fetch_add(0, std::memory_order_seq_cst) == 0) return;
  ::syscall(SYS_futex, low_word(value), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

void CpuSignalWake::sleep(uint64_t* value, uint64_t target, std::chrono::microseconds limit,
                          std::chrono::microseconds spin) const noexcept {
  if (spin.count() > 0) {
    const auto until = std::chrono::steady_clock::now() + std::min(spin, limit);
    do {
      for (int i = 0; i < 64; ++i) {
        if (std::atomic_ref<uint64_t>(*value).load(std::memory_order_acquire) >= target) return;
        cpu_relax();
      }
    } while (std::chrono::steady_clock::now() < until);
    limit -= std::min(spin, limit);
  }
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  const uint64_t now = std::atomic_ref<uint64_t>(*value).load(std::memory_order_seq_cst);
  if (now < target && limit.count() > 0) {
    const timespec ts{static_cast<time_t>(limit.count() / 1000000), static_cast<long>(limit.count() % 1000000) * 1000};
    ::syscall(SYS_futex, low_word(value), FUTEX_WAIT_PRIVATE, static_cast<uint32_t>(now), &ts, nullptr, 0);
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace hcq::cpu
