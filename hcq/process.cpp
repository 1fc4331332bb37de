// The process-wide state: the unified VA reservation and the signal pool, created on first use.
#include "hcq/backend/process.hpp"

#include <memory>

#include "hcq/backend/os.hpp"
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
