// A cubin kernel's launch limits, as an architecture's facts give them.
#include "nv/cubin/cubin.hpp"
#include "nv/facts/arch.hpp"

namespace hcq::nv {

LaunchLimits launch_limits(const NvArchInfo& arch) {
  LaunchLimits l;
  l.max_threads_per_block = arch.max_threads_per_block;
  l.max_registers_per_thread = arch.max_registers_per_thread;
  l.registers_per_block = arch.registers_per_sm;  // 64 Ki on every architecture here: one block may take them all
  l.max_shared_bytes_per_block = arch.max_shared_per_block;
  return l;
}

}  // namespace hcq::nv
