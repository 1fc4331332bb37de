// The process-wide state: the unified VA reservation and the signal pool, created on first use.
#include "hcq/backend/process.hpp"

#include <memory>

#include "hcq/backend/os.hpp"
#include "hcq/backend/sanitizer.hpp"
#include "hcq/backend/signal_pool.hpp"
#include "hcq/knobs.hpp"
#include "hcq/memory.hpp"

namespace hcq {
namespace {

struct ProcessState {
  VaSpace va{real_os(), knobs::va_size_bytes()};
  SignalPool signals{va, real_os()};
  Process view{va, signals};
};

}  // namespace

Process& process() {
  // Never destroyed, on purpose: devices closed by other exit-time destructors still release their signals and
  // memory into it, in an order no static can promise. The kernel takes the reservation back at exit.
  alignas(ProcessState) static std::byte storage[sizeof(ProcessState)];
  static ProcessState* state = std::construct_at(reinterpret_cast<ProcessState*>(storage));
  return state->view;
}

}  // namespace hcq

#if HCQ_ADDRESS_SANITIZER
// An ASan build puts the unified VA in ASan's shadow gap, below 2^40, where the NVIDIA backend can address it; the
// runtime lets a program use the gap only with protect_shadow_gap=0 (hcq/va_layout.hpp). This is the default of every
// program that links the process state; ASAN_OPTIONS still overrides it. Weak, so that a program with its own
// defaults keeps them (it then sets protect_shadow_gap=0 itself, or the reservation lands above 16 TiB and NVIDIA
// launches fail their 40-bit address checks). The runtime reads it before any constructor runs, so it must be a plain
// function returning a constant.
extern "C" __attribute__((weak, visibility("default"))) const char* __asan_default_options() {
  return "protect_shadow_gap=0";
}
#endif
