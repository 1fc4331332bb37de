// The handler, its per-thread run and the stand-in windows. The handler touches only this thread's GuardedRun
// (plain data written before the run started) and, for a fault that is not a twin's, the previous handler.
#include "sim/common/guarded_run.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cerrno>
#include <mutex>

#include "cpu/workgroup_threads.hpp"
#include "sim/common/gpu_view.hpp"

namespace hcq::sim {
namespace {

constexpr uintptr_t kPage = 4096;

// The run on this thread, while its twin runs.
thread_local GuardedRun* t_active = nullptr;
struct sigaction g_previous;

#if defined(__x86_64__)
// Whether the instruction at `pc` is a locked read-modify-write: a LOCK prefix among its legacy prefixes, or XCHG
// with a memory operand (locked without one; it faulted on memory, so its operand is memory).
bool locked_instruction(const uint8_t* pc) {
  for (int i = 0; i < 15; ++i, ++pc) {
    switch (*pc) {
      case 0xf0: return true;
      case 0x26:
      case 0x2e:
      case 0x36:
      case 0x3e:
      case 0x64:
      case 0x65:
      case 0x66:
      case 0x67:
      case 0xf2:
      case 0xf3: continue;
      default: break;
    }
    break;
  }
  if (*pc >= 0x40 && *pc <= 0x4f) ++pc;  // REX
  return *pc == 0x86 || *pc == 0x87;
}
#endif

GuestAccess access_of(const void* context) {
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  constexpr greg_t kWriteBit = 2;  // page-fault error code bit 1: the access was a write
  if ((uc->uc_mcontext.gregs[REG_ERR] & kWriteBit) == 0) return GuestAccess::read;
  const auto* pc = reinterpret_cast<const uint8_t*>(uc->uc_mcontext.gregs[REG_RIP]);
  return locked_instruction(pc) ? GuestAccess::atomic : GuestAccess::write;
#else
  (void)context;
  return GuestAccess::read;
#endif
}

void chain(int sig, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler == SIG_DFL || g_previous.sa_handler == SIG_IGN) {
    // Not a twin's fault: with the default action back, the faulting instruction runs again and ends the process as
    // it would have without us.
    sigaction(SIGSEGV, &g_previous, nullptr);
  } else {
    g_previous.sa_handler(sig);
  }
}

void on_segv(int sig, siginfo_t* info, void* context) {
  if (GuardedRun* run = t_active) {
    const auto at = reinterpret_cast<uintptr_t>(info->si_addr);
    if (const std::optional<uint64_t> va = run->guest_address(at)) {
      const GuestAccess access = access_of(context);
      // A write to a clean page the GPU may write: its cache takes the line and the write retries into it. (errno is
      // the interrupted code's: the fill's system calls must not change it.)
      const int saved_errno = errno;
      const bool filled = access != GuestAccess::read && run->view() && run->view()->cache_fill(at);
      errno = saved_errno;
      if (filled) return;
      run->record(GuestFault{*va, access});
      t_active = nullptr;
      // A thread kernel's thread faults on a fiber's stack; the jump lands on this thread's own.
      cpu::workgroup_threads_before_jump();
      siglongjmp(run->jump(), 1);
    }
  }
  chain(sig, info, context);
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction act{};
    act.sa_sigaction = on_segv;
    // SA_NODEFER: the jump out of the handler leaves SIGSEGV unblocked on this thread (the run restores the mask
    // anyway, with sigsetjmp's saved one).
    act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    sigaction(SIGSEGV, &act, &g_previous);
  });
}

}  // namespace

const char* to_string(GuestAccess a) {
  switch (a) {
    case GuestAccess::read: return "read";
    case GuestAccess::write: return "write";
    case GuestAccess::atomic: return "atomic";
  }
  return "?";
}

GuardedRun::~GuardedRun() {
  for (size_t i = 0; i < count_; ++i) ::munmap(windows_[i].base, kWindowBytes);
}

std::byte* GuardedRun::stand_in(uint64_t va) {
  if (count_ == kMaxStandIns) return nullptr;
  void* p = ::mmap(nullptr, kWindowBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* base = static_cast<std::byte*>(p);
  std::byte* origin = base + kLeadBytes + (va & (kPage - 1));
  windows_[count_++] = Window{base, va, reinterpret_cast<uintptr_t>(origin)};
  return origin;
}

std::optional<uint64_t> GuardedRun::guest_address(uintptr_t host) const {
  if (view_ && view_->in_mirror(reinterpret_cast<const void*>(host)))
    return view_->va_of(reinterpret_cast<const void*>(host));
  for (size_t i = 0; i < count_; ++i) {
    const auto base = reinterpret_cast<uintptr_t>(windows_[i].base);
    if (host >= base && host - base < kWindowBytes) return windows_[i].va + (host - windows_[i].origin);
  }
  return std::nullopt;
}

std::optional<GuestFault> GuardedRun::run(void (*fn)(void*), void* ctx) {
  install_handler();
  if (sigsetjmp(jump_, 1) == 0) {
    t_active = this;
    fn(ctx);
    t_active = nullptr;
    return std::nullopt;
  }
  t_active = nullptr;
  cpu::workgroup_threads_after_jump();
  return fault_;
}

}  // namespace hcq::sim
