// Signals: 16 bytes of host-visible memory (u64 value at +0, u64 timestamp at +8) that queues wait on and write.
// They come from one process-wide pool whose pages sit in the unified VA space and are mapped into every device.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace hcq {

class SignalPool;

// A handle to one pooled signal. Copies refer to the same slot. Using a handle after its slot was released
// (waiting on a freed signal, encoding it into a queue) throws InvalidArgument: slots carry a generation.
class Signal {
 public:
  Signal() = default;
  // Takes a fresh slot from the process pool, value set to `initial`, timestamp 0.
  static Signal create(uint64_t initial = 0, std::string label = {});

  uint64_t value() const;            // acquire load of +0
  void set_value(uint64_t v) const;  // release store of +0, as the host
  uint64_t timestamp() const;        // raw device ticks at +8 (see Device::ticks_to_us)
  uint64_t addr() const;             // the same address on the host and on every device
  uint64_t* host_ptr() const;

  // Blocks until value() >= target: polls, then sleeps with backoff. The timeout (default HCQ_WAIT_TIMEOUT_MS)
  // restarts whenever the value moves. On timeout throws TimeoutError naming the label, address, expected and
  // current value.
  void wait(uint64_t target, std::optional<std::chrono::milliseconds> timeout = {}) const;
  // As above; `check` runs between sleeps (about every millisecond once sleeping) and may throw to abort the wait,
  // e.g. when the device that should write the signal has faulted.
  void wait(uint64_t target, std::optional<std::chrono::milliseconds> timeout,
            const std::function<void()>& check) const;
  // As above, for a writer that can wake the waiter (a device interrupt): after the spin, the wait blocks in
  // `sleep(limit)` instead of yielding and backing off. `sleep` returns once the value may have moved or `limit`
  // passed (spurious returns are fine: the value, the timeout and `check` are looked at again), or returns false
  // at once when it cannot block on this signal, and the wait then yields and backs off as above.
  void wait(uint64_t target, std::optional<std::chrono::milliseconds> timeout, const std::function<void()>& check,
            const std::function<bool(std::chrono::microseconds limit)>& sleep) const;

  // Who uses this signal, for messages: e.g. "CPU:0 timeline".
  const std::string& label() const;
  void set_label(std::string label) const;

  bool valid() const;  // false for a default handle or a released slot
  explicit operator bool() const { return valid(); }
  // Returns the slot to the pool. The handle (and every copy) becomes invalid.
  void release();

  bool operator==(const Signal& o) const = default;

 private:
  friend class SignalPool;
  Signal(SignalPool* pool, uint32_t slot, uint32_t gen) : pool_(pool), slot_(slot), gen_(gen) {}
  uint64_t* checked_ptr() const;  // throws InvalidArgument if released

  SignalPool* pool_ = nullptr;
  uint32_t slot_ = 0;
  uint32_t gen_ = 0;
};

// Unique owner of a signal: releases it when destroyed.
class OwnedSignal {
 public:
  OwnedSignal() = default;
  explicit OwnedSignal(uint64_t initial, std::string label = {}) : sig_(Signal::create(initial, std::move(label))) {}
  OwnedSignal(OwnedSignal&& o) noexcept : sig_(o.sig_) { o.sig_ = Signal(); }
  OwnedSignal& operator=(OwnedSignal&& o) noexcept;
  OwnedSignal(const OwnedSignal&) = delete;
  OwnedSignal& operator=(const OwnedSignal&) = delete;
  ~OwnedSignal();

  const Signal& get() const { return sig_; }
  const Signal* operator->() const { return &sig_; }
  operator const Signal&() const { return sig_; }  // NOLINT: pass where a Signal is taken

 private:
  Signal sig_;
};

}  // namespace hcq
