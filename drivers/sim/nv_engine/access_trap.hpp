// Stand-ins for GPU memory a kernel's host twin is handed but the GPU does not map, so that the twin's first access
// there is seen with its address and kind (read, write, atomic), as the SM's MMU would report it, instead of the
// launch being refused before it runs (which can only say "not mapped", not how the kernel touched it).
//
// How: each unmapped VA the twin asks for gets a window of reserved, inaccessible host address space; the twin's
// pointer lands in it at the VA's page offset. A SIGSEGV in a window is the kernel's access: the handler (installed
// once per process, chaining every other SIGSEGV to the handler that was there before) records the first one per
// trap, decodes read / write / atomic from the CPU's fault (x86-64: the page-fault error code's write bit and a LOCK
// prefix or XCHG at the faulting instruction), then makes that page readable and writable (zeros) and lets the
// access retry. The twin runs on to its end, as the other threads of a faulting kernel do on hardware until the
// channel is torn down; its accesses to unmapped memory read zeros and write nowhere that matters.
//
// Cost: nothing while every buffer is mapped (no window is made). A window reserves kWindowBytes of address space
// (no memory until a page is touched) and is released with the trap.
//
// Limits, until every twin access is translated through the GPU's page tables (issue 14's first item): a window
// covers 1 MiB before the VA and 16 GiB after it (a 32-bit index of 4-byte elements); an access beyond it is an
// ordinary SIGSEGV. Within a window every page faults, even one the GPU maps that the twin reached through the
// unmapped base. A non-atomic read-modify-write instruction (x86 `add [m], r`) reports a write where a GPU would
// fault on its load first. Hosts other than x86-64 report every access as a read.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "sim/nv/channel_runner.hpp"

namespace hcq::sim::nv_engine {

class AccessTrap {
 public:
  static constexpr uint64_t kLeadBytes = uint64_t{1} << 20;   // before the VA: negative indices
  static constexpr uint64_t kSpanBytes = uint64_t{16} << 30;  // from the VA on
  static constexpr uint64_t kWindowBytes = kLeadBytes + kSpanBytes;
  // Windows one trap may hold: more unmapped buffers than this in one launch are refused (stand_in returns null).
  static constexpr size_t kMaxWindows = 16;

  struct Access {
    uint64_t va = 0;
    MmuAccess access = MmuAccess::read;
  };

  AccessTrap() = default;
  AccessTrap(const AccessTrap&) = delete;
  AccessTrap& operator=(const AccessTrap&) = delete;
  ~AccessTrap();  // releases the windows: no pointer stand_in gave may be used after it

  // A host pointer standing for GPU VA `va` and what follows it, which the GPU does not map, or nullptr when no
  // window could be made (out of windows or address space).
  std::byte* stand_in(uint64_t va);

  // The first access made through any of this trap's windows, if one was made.
  std::optional<Access> first_fault() const;

  // For the signal handler: the state of one trap, reached from its windows.
  struct State {
    std::atomic<bool> claimed{false};  // the first fault is being or has been recorded
    std::atomic<bool> recorded{false};
    uint64_t va = 0;
    MmuAccess access = MmuAccess::read;
  };

 private:
  struct Window {
    std::byte* base = nullptr;  // kWindowBytes reserved
    int slot = -1;              // its entry in the process-wide table the handler searches
  };
  State state_;
  std::array<Window, kMaxWindows> windows_{};
  size_t count_ = 0;
};

}  // namespace hcq::sim::nv_engine
