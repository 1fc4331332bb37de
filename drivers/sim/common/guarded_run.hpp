// Runs a kernel's host twin so that its first access to memory its GPU does not let it touch ends the kernel with a
// GPU page fault (address and access), as the GPU's MMU would, instead of a SIGSEGV that kills the process or a
// store that lands in whatever host memory is there.
//
// The twin works on addresses of the GPU's mirror (gpu_view.hpp), where only what the GPU maps is accessible, and on
// stand-ins: reserved, inaccessible windows that stand for GPU addresses outside the mirror that the GPU does not map
// (a kernel argument at 0xdead0000), so that the twin's access there is seen with its kind. A SIGSEGV inside either,
// on the thread running the twin, is the kernel's fault: the handler (installed once per process, chaining every
// other SIGSEGV to the handler that was there before) records the address and the access — x86-64: the page-fault
// error code's write bit, and a LOCK prefix or XCHG at the faulting instruction for an atomic — and leaves the twin
// with siglongjmp. The twin is C code built by the CPU compiler: it holds no lock and owns nothing a jump could leak.
//
// Cost: a sigsetjmp per run (a few hundred nanoseconds with the signal mask saved); nothing per access.
//
// Limits: a non-atomic read-modify-write instruction (x86 `add [m], r`) reports a write where a GPU would fault on
// its load first; hosts other than x86-64 report every access as a read. A stand-in covers 1 MiB before its address
// and 16 GiB after it; beyond that an access is an ordinary SIGSEGV.
#pragma once

#include <setjmp.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace hcq::sim {

class GpuView;

enum class GuestAccess : uint8_t { read, write, atomic };
const char* to_string(GuestAccess a);

struct GuestFault {
  uint64_t va = 0;
  GuestAccess access = GuestAccess::read;
};

class GuardedRun {
 public:
  static constexpr uint64_t kLeadBytes = uint64_t{1} << 20;   // a stand-in's reach before its VA: negative indices
  static constexpr uint64_t kSpanBytes = uint64_t{16} << 30;  // and after it: a 32-bit index of 4-byte elements
  static constexpr uint64_t kWindowBytes = kLeadBytes + kSpanBytes;
  static constexpr size_t kMaxStandIns = 16;

  // `view`: the GPU's mirror (null: stand-ins only).
  explicit GuardedRun(GpuView* view) : view_(view) {}
  ~GuardedRun();  // releases the stand-ins: no pointer stand_in() gave may be used after it
  GuardedRun(const GuardedRun&) = delete;
  GuardedRun& operator=(const GuardedRun&) = delete;

  // A host pointer standing for GPU VA `va`, which the GPU does not map, or nullptr when no window could be made.
  std::byte* stand_in(uint64_t va);

  // Runs fn(ctx) on the calling thread. Returns the first access to the mirror or a stand-in that faulted, which
  // ended the run there; nullopt when fn returned. Not reentrant on one thread.
  std::optional<GuestFault> run(void (*fn)(void*), void* ctx);

  // For the signal handler: the GPU VA a host address stands for, if it lies in this run's mirror or stand-ins.
  std::optional<uint64_t> guest_address(uintptr_t host) const;
  void record(GuestFault f) { fault_ = f; }
  GpuView* view() const { return view_; }
  sigjmp_buf& jump() { return jump_; }

 private:
  struct Window {
    std::byte* base = nullptr;  // kWindowBytes reserved
    uint64_t va = 0;            // the VA its origin (base + kLeadBytes + page offset) stands for
    uintptr_t origin = 0;
  };
  GpuView* view_;
  std::array<Window, kMaxStandIns> windows_{};
  size_t count_ = 0;
  GuestFault fault_{};
  sigjmp_buf jump_;
};

}  // namespace hcq::sim
