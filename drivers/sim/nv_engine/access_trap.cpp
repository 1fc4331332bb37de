// The windows, the process-wide table the SIGSEGV handler searches, and the handler. Everything the handler touches
// is a lock-free atomic or plain data published before the window's base; it calls only mprotect and, for a fault
// that is not ours, the previous handler.
#include "sim/nv_engine/access_trap.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cstring>
#include <mutex>

namespace hcq::sim::nv_engine {
namespace {

constexpr uintptr_t kPage = 4096;

struct Slot {
  std::atomic<bool> in_use{false};
  std::atomic<uintptr_t> base{0};  // 0: no window; published last
  uintptr_t origin = 0;            // the host address standing for `va`
  uint64_t va = 0;
  AccessTrap::State* state = nullptr;
};

// Every live window of every trap: channels launch concurrently, each on its own thread.
constexpr size_t kSlots = 256;
Slot g_slots[kSlots];
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

MmuAccess access_of(const void* context) {
#if defined(__x86_64__)
  const auto* uc = static_cast<const ucontext_t*>(context);
  constexpr greg_t kWriteBit = 2;  // page-fault error code bit 1: the access was a write
  if ((uc->uc_mcontext.gregs[REG_ERR] & kWriteBit) == 0) return MmuAccess::read;
  const auto* pc = reinterpret_cast<const uint8_t*>(uc->uc_mcontext.gregs[REG_RIP]);
  return locked_instruction(pc) ? MmuAccess::atomic : MmuAccess::write;
#else
  (void)context;
  return MmuAccess::read;
#endif
}

void chain(int sig, siginfo_t* info, void* context) {
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, context);
  } else if (g_previous.sa_handler == SIG_DFL || g_previous.sa_handler == SIG_IGN) {
    // The fault is not ours: with the default action back, the faulting instruction runs again and ends the process
    // as it would have without us.
    sigaction(SIGSEGV, &g_previous, nullptr);
  } else {
    g_previous.sa_handler(sig);
  }
}

void on_segv(int sig, siginfo_t* info, void* context) {
  const auto at = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const uintptr_t base = s.base.load(std::memory_order_acquire);
    if (base == 0 || at < base || at - base >= AccessTrap::kWindowBytes) continue;
    AccessTrap::State& st = *s.state;
    if (!st.claimed.exchange(true, std::memory_order_acq_rel)) {
      st.va = s.va + (at - s.origin);  // unsigned: wraps right for an access before the VA
      st.access = access_of(context);
      st.recorded.store(true, std::memory_order_release);
    }
    if (mprotect(reinterpret_cast<void*>(at & ~(kPage - 1)), kPage, PROT_READ | PROT_WRITE) == 0) return;
    break;  // the page cannot be made accessible: let the fault take its ordinary course
  }
  chain(sig, info, context);
}

void install_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction act{};
    act.sa_sigaction = on_segv;
    act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    sigaction(SIGSEGV, &act, &g_previous);
  });
}

}  // namespace

AccessTrap::~AccessTrap() {
  for (size_t i = 0; i < count_; ++i) {
    Slot& s = g_slots[windows_[i].slot];
    s.base.store(0, std::memory_order_release);
    munmap(windows_[i].base, kWindowBytes);
    s.in_use.store(false, std::memory_order_release);
  }
}

std::byte* AccessTrap::stand_in(uint64_t va) {
  if (count_ == kMaxWindows) return nullptr;
  int slot = -1;
  for (size_t i = 0; i < kSlots && slot < 0; ++i)
    if (!g_slots[i].in_use.exchange(true, std::memory_order_acq_rel)) slot = static_cast<int>(i);
  if (slot < 0) return nullptr;
  void* p = mmap(nullptr, kWindowBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    g_slots[slot].in_use.store(false, std::memory_order_release);
    return nullptr;
  }
  install_handler();
  auto* base = static_cast<std::byte*>(p);
  std::byte* origin = base + kLeadBytes + (va & (kPage - 1));
  Slot& s = g_slots[slot];
  s.origin = reinterpret_cast<uintptr_t>(origin);
  s.va = va;
  s.state = &state_;
  s.base.store(reinterpret_cast<uintptr_t>(base), std::memory_order_release);
  windows_[count_++] = Window{base, slot};
  return origin;
}

std::optional<AccessTrap::Access> AccessTrap::first_fault() const {
  if (!state_.recorded.load(std::memory_order_acquire)) return std::nullopt;
  return Access{state_.va, state_.access};
}

}  // namespace hcq::sim::nv_engine
