// A fiber: a function running on a stack of its own, switched to and from explicitly on one OS thread, for the
// workgroup-threads runner (workgroup_threads.hpp) to run every thread of a workgroup in its own context.
//
// x86-64: a hand-written switch that saves the callee-saved registers, MXCSR and the x87 control word on the old
// stack and loads them from the new one (about 5 ns a switch; ucontext's swapcontext costs a sigprocmask system call
// each time, near 1 us). Elsewhere: ucontext. The sanitizers are told about every switch (ASan:
// __sanitizer_start/finish_switch_fiber, TSan: one TSan fiber per stack), or they would report the other stacks'
// frames as overflows or races.
//
// Lifetime: a Stack is reused for fiber after fiber; start() begins a fresh fiber on it, and a fiber that never ends
// (abandoned at a fault) is simply started over (abandoned(): its sanitizer state is renewed).
#pragma once

#include <cstddef>
#include <cstdint>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace hcq::cpu {

// Where a suspended context resumes.
struct FiberContext {
#if defined(__x86_64__)
  void* sp = nullptr;
#else
  ucontext_t uc;
#endif
  // The sanitizers' view of the context: the stack it runs on (null: the OS thread's own) and TSan's fiber.
  const void* stack_lo = nullptr;
  size_t stack_bytes = 0;
  void* tsan_fiber = nullptr;
  void* asan_fake_stack = nullptr;
};

class FiberStack {
 public:
  // `bytes` usable, a PROT_NONE guard page below. `color` staggers where the first frame starts (by 192 bytes a
  // color, modulo a page): stacks a page multiple apart would otherwise put every fiber's hot frames in the same L1
  // cache sets. Throws hcq::DeviceFault when the memory cannot be had.
  FiberStack(size_t bytes, unsigned color);
  ~FiberStack();
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;

  // Makes `ctx` a fresh context that, switched to, calls entry() on this stack. entry must never return (it
  // switches away for the last time instead).
  void start(FiberContext& ctx, void (*entry)());
  // The fiber that ran here was left mid-way (a fault): clear what the sanitizers remember of its frames.
  void abandoned(FiberContext& ctx);

 private:
  unsigned char* map_ = nullptr;  // guard page, then the stack
  size_t map_bytes_ = 0;
  size_t bytes_ = 0;
  size_t stagger_ = 0;
  void* tsan_fiber_ = nullptr;
};

// The context of the calling OS thread's own stack, to switch back to (call once per thread, before the first
// switch; TSan needs its fiber handle).
void capture_thread_context(FiberContext& ctx);

// Saves the current context into `from` and resumes `to`. `last`: the current fiber ends here and is never resumed
// (ASan frees its fake stack).
void switch_fiber(FiberContext& from, FiberContext& to, bool last = false);
// Called first thing in a fiber's entry function and after every switch_fiber returns (the sanitizers' half of the
// switch that happens on the new stack). switch_fiber calls it itself for the resumed side; entry() must call it.
void fiber_entered(FiberContext& self);

// For a signal handler about to leave a fiber with siglongjmp to a jump buffer on the thread's own stack `to`: tells
// the sanitizers the fiber ends and `to` runs next. Async-signal-safe. landed_by_jump() completes it, on `to`.
void leave_fiber_by_jump(const FiberContext& to) noexcept;
void landed_by_jump() noexcept;

}  // namespace hcq::cpu
