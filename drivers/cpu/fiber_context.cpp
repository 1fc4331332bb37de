#include "fiber_context.hpp"

#include <pthread.h>
#include <sys/mman.h>

#include <cstring>

#include "hcq/error.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HCQ_FIBER_ASAN 1
#endif
#if __has_feature(thread_sanitizer)
#define HCQ_FIBER_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(HCQ_FIBER_ASAN)
#define HCQ_FIBER_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__) && !defined(HCQ_FIBER_TSAN)
#define HCQ_FIBER_TSAN 1
#endif
#if defined(HCQ_FIBER_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if defined(HCQ_FIBER_TSAN)
#include <sanitizer/tsan_interface.h>
#endif

#if defined(__x86_64__)
// hcq_fiber_switch_(void** save_sp, void* new_sp): pushes the callee-saved registers (SysV: rbp, rbx, r12-r15) and
// the floating-point control state (MXCSR, x87 control word: a kernel that changes rounding keeps it per thread),
// stores the stack pointer, loads the other one and pops the same frame from it. A new fiber's stack holds such a
// frame whose return address is its entry function.
asm(R"(
  .pushsection .text
  .globl hcq_fiber_switch_
  .hidden hcq_fiber_switch_
  .type hcq_fiber_switch_, @function
  .p2align 4
hcq_fiber_switch_:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size hcq_fiber_switch_, .-hcq_fiber_switch_
  .popsection
)");
extern "C" void hcq_fiber_switch_(void** save_sp, void* new_sp);
#endif

namespace hcq::cpu {
namespace {
constexpr size_t kPage = 4096;
}

FiberStack::FiberStack(size_t bytes, unsigned color)
    : bytes_((bytes + kPage - 1) & ~(kPage - 1)), stagger_((color * size_t{192}) % kPage) {
  map_bytes_ = bytes_ + kPage;
  void* p = ::mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw DeviceFault(cat("cannot map a ", bytes_, "-byte stack for a workgroup thread"));
  map_ = static_cast<unsigned char*>(p);
  ::mprotect(map_, kPage, PROT_NONE);  // a stack overflow faults instead of running into the next stack
#if defined(HCQ_FIBER_TSAN)
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

FiberStack::~FiberStack() {
#if defined(HCQ_FIBER_TSAN)
  if (tsan_fiber_) __tsan_destroy_fiber(tsan_fiber_);
#endif
  ::munmap(map_, map_bytes_);
}

void FiberStack::start(FiberContext& ctx, void (*entry)()) {
  unsigned char* lo = map_ + kPage;
  ctx.stack_lo = lo;
  ctx.stack_bytes = bytes_;
  ctx.tsan_fiber = tsan_fiber_;
  ctx.asan_fake_stack = nullptr;
#if defined(__x86_64__)
  auto* top = reinterpret_cast<uint64_t*>(lo + bytes_ - stagger_);  // 16-byte aligned: so are bytes_ and stagger_
  top[-1] = 0;                                                      // no caller: backtraces stop here
  top[-2] = reinterpret_cast<uint64_t>(entry);                      // popped by ret; entry then sees rsp % 16 == 8
  for (int i = 3; i <= 8; ++i) top[-i] = 0;                         // rbp, rbx, r12-r15
  uint32_t fp[2] = {0x1f80, 0x037f};                                // MXCSR and x87 control word at their reset values
  std::memcpy(&top[-9], fp, sizeof fp);
  ctx.sp = &top[-9];
#else
  getcontext(&ctx.uc);
  ctx.uc.uc_stack.ss_sp = lo;
  ctx.uc.uc_stack.ss_size = bytes_;
  ctx.uc.uc_link = nullptr;
  makecontext(&ctx.uc, entry, 0);
#endif
}

void FiberStack::abandoned(FiberContext& ctx) {
#if defined(HCQ_FIBER_ASAN)
  // Its frames' redzones stay poisoned: the next fiber here would trip over them.
  __asan_unpoison_memory_region(map_ + kPage, bytes_);
#endif
#if defined(HCQ_FIBER_TSAN)
  // TSan's shadow call stack of the fiber still holds the frames that never returned.
  __tsan_destroy_fiber(tsan_fiber_);
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
  ctx.tsan_fiber = tsan_fiber_;
}

void capture_thread_context(FiberContext& ctx) {
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* lo = nullptr;
    size_t size = 0;
    if (pthread_attr_getstack(&attr, &lo, &size) == 0) {
      ctx.stack_lo = lo;
      ctx.stack_bytes = size;
    }
    pthread_attr_destroy(&attr);
  }
#if defined(HCQ_FIBER_TSAN)
  ctx.tsan_fiber = __tsan_get_current_fiber();
#endif
}

void switch_fiber(FiberContext& from, FiberContext& to, bool last) {
#if defined(HCQ_FIBER_ASAN)
  __sanitizer_start_switch_fiber(last ? nullptr : &from.asan_fake_stack, to.stack_lo, to.stack_bytes);
#else
  (void)last;
#endif
#if defined(HCQ_FIBER_TSAN)
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
#if defined(__x86_64__)
  hcq_fiber_switch_(&from.sp, to.sp);
#else
  swapcontext(&from.uc, &to.uc);
#endif
  fiber_entered(from);
}

void fiber_entered(FiberContext& self) {
#if defined(HCQ_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(self.asan_fake_stack, nullptr, nullptr);
#else
  (void)self;
#endif
}

void leave_fiber_by_jump(const FiberContext& to) noexcept {
#if defined(HCQ_FIBER_ASAN)
  __sanitizer_start_switch_fiber(nullptr, to.stack_lo, to.stack_bytes);
#endif
#if defined(HCQ_FIBER_TSAN)
  // TSan looks the jump buffer up among the current fiber's: it was set on the thread's own.
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
  (void)to;
}

void landed_by_jump() noexcept {
#if defined(HCQ_FIBER_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
}

}  // namespace hcq::cpu
