// The spin-wait hint for a polling loop: it lets a sibling hyperthread run and saves power while a thread polls a
// value another thread (a worker, a device) is about to write.
#pragma once

namespace hcq {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace hcq
