// Internals shared by the three packet engines: checked memory access through the QueueHost, the compare functions
// of WAIT_REG_MEM/POLL_REGMEM, fault reporting, and the Processor interface the runner drives.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "amd/fields.hpp"
#include "hcq/error.hpp"
#include "sim/amd_engine/engine.hpp"
#include "sim/common/guest_memory.hpp"

namespace hcq::sim::amd_engine {

using amd::Field;
using amd::Layout;

// What one call to Processor::run() ended with (waiting: on WAIT_REG_MEM, POLL_REGMEM, a barrier, an AQL slot).
using sim::Step;

// Where a packet sits, for fault records.
struct Where {
  uint64_t ring_pos = 0;
  bool in_ib = false;
  uint64_t ib_va = 0, ib_dword = 0;
};

// Memory and host services for one queue. Every access is bounds-checked by the host's translate() (GuestMemory:
// ptr, load, store, read_words, copy); a failed one records the address so the caller can fault with it.
class QueueContext : public GuestMemory<QueueHost> {
 public:
  QueueContext(const SimQueueDesc& desc, QueueHost& host, const EngineOptions& options)
      : GuestMemory(host), desc_(desc), options_(options) {}

  const SimQueueDesc& desc() const { return desc_; }
  const EngineOptions& options() const { return options_; }
  // Runs a dispatch through the attached kernel runner. Returns "" when the kernel ran, else why it did not (no
  // runner attached, or the runner's error): the caller faults its queue with that reason.
  // Why a dispatch did not run (empty: it ran); `address`/`memory` set when it was a page fault (MemoryFault).
  struct DispatchError {
    std::string reason;
    uint64_t address = 0;
    bool memory = false;
    MemoryFailure failure = MemoryFailure::not_present;
    bool failed() const { return !reason.empty(); }
  };
  DispatchError run_dispatch(const DispatchInfo& d);

  // Data the GPU writes (fences, WRITE_DATA): the host or another queue may be polling these very words, as it
  // polls a signal, so each aligned dword is stored atomically (release), never torn or racing a reader.
  bool write_words(uint64_t va, const uint32_t* in, size_t n) {
    std::byte* p = ptr(va, n * 4);
    if (!p) return false;
    if (reinterpret_cast<uintptr_t>(p) % alignof(uint32_t) == 0) {
      auto* words = reinterpret_cast<uint32_t*>(p);
      for (size_t i = 0; i < n; ++i) std::atomic_ref<uint32_t>(words[i]).store(in[i], std::memory_order_release);
    } else {
      std::memcpy(p, in, n * 4);
      std::atomic_thread_fence(std::memory_order_release);
    }
    return true;
  }
  // The read pointer the runner publishes (queue units).
  void publish_rptr(uint64_t r) { store<uint64_t>(desc_.rptr_va, r); }
  std::optional<uint64_t> read_wptr() {
    uint64_t w = 0;
    if (!load<uint64_t>(desc_.wptr_va, w)) return std::nullopt;
    return w;
  }

  // Reports a fault to the host and keeps the record. Returns Step::faulted for `return ctx.fault(...)`.
  Step fault(const Where& at, std::span<const uint32_t> packet, uint64_t address, bool memory, std::string reason);
  const FaultRecord& last_fault() const { return fault_; }

 private:
  const SimQueueDesc& desc_;
  const EngineOptions& options_;
  FaultRecord fault_;
  // The last dispatch's page fault, which the engine reports next through fault(): what the MMU found there.
  std::optional<std::pair<uint64_t, MemoryFailure>> dispatch_failure_;
};

// The value of field f in a packet (64-bit fields span two dwords). The caller has checked the packet's length.
inline uint64_t get(const Field& f, std::span<const uint32_t> pkt) {
  if (f.is64()) return uint64_t{pkt[f.dword]} | (uint64_t{pkt[f.dword + 1]} << 32);
  return f.get(pkt[f.dword]);
}
// A field by name from a fact layout; the names are drivers/amd's, a missing one is a programming error here.
const Field& field(const Layout& l, std::string_view name);

// WAIT_REG_MEM / POLL_REGMEM compare: (value & mask) <function> reference. nullopt for an undefined function.
std::optional<bool> compare(uint32_t function, uint32_t value, uint32_t mask, uint32_t reference);
std::string_view function_symbol(uint32_t function);

using hcq::hex;

// One queue's packet engine. run() is called by one thread at a time (the runner's).
class Processor {
 public:
  virtual ~Processor() = default;
  // Executes up to `budget` packets.
  virtual Step run(size_t budget) = 0;
  // What the queue waits for, when run() returned waiting.
  virtual std::string waiting_on() const = 0;
  // "PM4", "SDMA", "AQL".
  virtual const char* engine() const = 0;
};

std::unique_ptr<Processor> make_pm4_processor(QueueContext& ctx);
std::unique_ptr<Processor> make_sdma_processor(QueueContext& ctx);
std::unique_ptr<Processor> make_aql_processor(QueueContext& ctx);

}  // namespace hcq::sim::amd_engine
