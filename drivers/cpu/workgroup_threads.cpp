#include "workgroup_threads.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "fiber_context.hpp"
#include "hcq/error.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HCQ_WG_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HCQ_WG_SANITIZED 1
#endif

namespace hcq::cpu {
namespace {

constexpr uint32_t kMaxThreads = 1024;
#if defined(HCQ_WG_SANITIZED)
constexpr size_t kStackBytes = size_t{512} << 10;  // instrumented frames are several times larger
#else
constexpr size_t kStackBytes = size_t{64} << 10;
#endif
constexpr size_t kPage = 4096;

enum class ThreadState : uint8_t { ready, waiting, done, failed };

struct Runner;

}  // namespace
}  // namespace hcq::cpu

// The kernel ABI names it (opaque there): one thread of the workgroup being run.
struct hcq_thread_ {
  hcq_dispatch d;  // the thread's own copy: local_id set
  hcq::cpu::FiberContext ctx;
  hcq::cpu::FiberStack* stack = nullptr;
  size_t shared_next = 0;  // where its next HCQ_SHARED array starts in the arena
  hcq::cpu::ThreadState state = hcq::cpu::ThreadState::ready;
};

namespace hcq::cpu {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One per OS thread that runs thread kernels (the CPU device's workers and pool helpers, the simulators' threads).
struct Runner {
  FiberContext main;  // the OS thread's own stack
  std::vector<std::unique_ptr<FiberStack>> stacks;
  std::vector<FiberStack*> free_stacks;
  std::vector<hcq_thread_> threads;
  std::vector<uint32_t> order;
  unsigned char* shared = nullptr;  // kWorkgroupSharedBytes, a PROT_NONE page after it
  size_t shared_used = 0;           // bytes handed out since the last poisoning
  hcq_thread_* current = nullptr;   // the thread running now (null: on the OS thread's stack)
  void (*body)(const hcq_dispatch*, hcq_thread_*) = nullptr;
  bool active = false;  // a workgroup is under way (still true at entry: the last one was left by a jump)
  bool jumped = false;  // a signal handler left a fiber with siglongjmp; after_jump() finishes the switch
  std::string error;

  Runner() {
    capture_thread_context(main);
    void* p = ::mmap(nullptr, kWorkgroupSharedBytes + kPage, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw DeviceFault("cannot map the workgroup shared-memory arena");
    shared = static_cast<unsigned char*>(p);
    ::mprotect(shared + kWorkgroupSharedBytes, kPage, PROT_NONE);
    std::memset(shared, 0xff, kWorkgroupSharedBytes);
    threads.reserve(kMaxThreads);
    order.reserve(kMaxThreads);
  }
  ~Runner() { ::munmap(shared, kWorkgroupSharedBytes + kPage); }
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  FiberStack* take_stack() {
    if (free_stacks.empty()) {
      stacks.push_back(std::make_unique<FiberStack>(kStackBytes, static_cast<unsigned>(stacks.size())));
      return stacks.back().get();
    }
    FiberStack* s = free_stacks.back();
    free_stacks.pop_back();
    return s;
  }
  void give_stack(hcq_thread_& t, bool abandoned) {
    if (abandoned) t.stack->abandoned(t.ctx);
    free_stacks.push_back(t.stack);
    t.stack = nullptr;
  }
  // Ends the workgroup: the fibers still holding stacks never resume.
  void finish() {
    for (hcq_thread_& t : threads)
      if (t.stack) give_stack(t, true);
    current = nullptr;
    active = false;
  }

  // From a fiber: records why the workgroup fails and leaves it for good.
  [[noreturn]] void fail(hcq_thread_& t, std::string why) {
    if (error.empty()) error = std::move(why);
    t.state = ThreadState::failed;
    switch_fiber(t.ctx, main);
    __builtin_trap();  // never resumed
  }

  void run(const hcq_dispatch* d, void (*fn)(const hcq_dispatch*, hcq_thread_*));
};

thread_local Runner* t_runner = nullptr;

Runner& runner() {
  if (!t_runner) {
    static thread_local std::unique_ptr<Runner> owned;
    owned = std::make_unique<Runner>();
    t_runner = owned.get();
  }
  return *t_runner;
}

std::string thread_text(const hcq_thread_& t) {
  return cat("thread (", t.d.local_id[0], ",", t.d.local_id[1], ",", t.d.local_id[2], ")");
}

void thread_entry() {
  Runner& r = *t_runner;
  hcq_thread_& t = *r.current;
  fiber_entered(t.ctx);
  r.body(&t.d, &t);
  t.state = ThreadState::done;
  switch_fiber(t.ctx, r.main, /*last=*/true);
  __builtin_trap();  // a finished fiber is never resumed
}

void Runner::run(const hcq_dispatch* d, void (*fn)(const hcq_dispatch*, hcq_thread_*)) {
  if (active) finish();  // the last workgroup was left by a fault's jump: its fibers are gone
  const uint64_t n = uint64_t{d->local_size[0]} * d->local_size[1] * d->local_size[2];
  error.clear();
  if (n == 0 || n > kMaxThreads) {
    error = cat("a workgroup of ", n, " threads (1..", kMaxThreads, ")");
    return;
  }
  active = true;
  body = fn;
  std::memset(shared, 0xff, shared_used);
  shared_used = 0;
  threads.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    hcq_thread_& t = threads[i];
    t.d = *d;
    t.d.local_id[0] = i % d->local_size[0];
    t.d.local_id[1] = (i / d->local_size[0]) % d->local_size[1];
    t.d.local_id[2] = i / (d->local_size[0] * d->local_size[1]);
    t.stack = nullptr;
    t.shared_next = 0;
    t.state = ThreadState::ready;
  }
  const uint64_t group =
      (uint64_t{d->group_id[2]} * d->num_groups[1] + d->group_id[1]) * d->num_groups[0] + d->group_id[0];
  uint64_t rng = d->thread_seed_ ^ (group * 0xd1b54a32d192ed03ull);
  for (uint32_t barrier = 0;; ++barrier) {
    order.resize(n);
    for (uint32_t i = 0; i < n; ++i) order[i] = i;
    for (uint32_t i = static_cast<uint32_t>(n) - 1; i > 0; --i) std::swap(order[i], order[splitmix64(rng) % (i + 1)]);
    for (uint32_t i : order) {
      hcq_thread_& t = threads[i];
      if (!t.stack) {
        t.stack = take_stack();
        t.stack->start(t.ctx, thread_entry);
      }
      current = &t;
      switch_fiber(main, t.ctx);
      current = nullptr;
      if (t.state == ThreadState::done) give_stack(t, false);
      if (!error.empty()) return finish();
    }
    const hcq_thread_* ended = nullptr;
    uint32_t waiting = 0;
    for (const hcq_thread_& t : threads) {
      if (t.state == ThreadState::waiting) ++waiting;
      else if (!ended) ended = &t;
    }
    if (waiting == 0) break;
    if (ended) {
      error = cat(thread_text(*ended), " of group (", d->group_id[0], ",", d->group_id[1], ",", d->group_id[2],
                  ") ended while ", waiting, " of the workgroup's ", n, " threads wait at barrier ", barrier + 1,
                  ": every thread must reach every HCQ_BARRIER (on a GPU this hangs or is undefined)");
      return finish();
    }
    for (hcq_thread_& t : threads) t.state = ThreadState::ready;
  }
  finish();
}

void run_threads(const hcq_dispatch* d, void (*fn)(const hcq_dispatch*, hcq_thread_*)) { runner().run(d, fn); }

void barrier(hcq_thread_* t) {
  t->state = ThreadState::waiting;
  switch_fiber(t->ctx, t_runner->main);
}

void* shared_array(hcq_thread_* t, size_t bytes, size_t align) {
  Runner& r = *t_runner;
  if (align == 0 || (align & (align - 1))) align = 16;
  const size_t at = (t->shared_next + align - 1) & ~(align - 1);
  if (bytes > kWorkgroupSharedBytes || at > kWorkgroupSharedBytes - bytes)
    r.fail(*t, cat("the kernel's HCQ_SHARED arrays need ", at + bytes, " bytes; a workgroup has ",
                   kWorkgroupSharedBytes, " bytes of shared memory"));
  t->shared_next = at + bytes;
  r.shared_used = std::max(r.shared_used, t->shared_next);
  return r.shared + at;
}

}  // namespace

void attach_workgroup_threads(hcq_dispatch& d, uint64_t seed) {
  d.thread_seed_ = seed;
  d.run_threads_ = run_threads;
  d.barrier_ = barrier;
  d.shared_ = shared_array;
}

std::string take_workgroup_error() {
  if (!t_runner || t_runner->error.empty()) return {};
  return std::exchange(t_runner->error, std::string());
}

void workgroup_threads_before_jump() noexcept {
  Runner* r = t_runner;
  if (!r || !r->current) return;
  leave_fiber_by_jump(r->main);
  r->current = nullptr;
  r->jumped = true;
}

void workgroup_threads_after_jump() noexcept {
  Runner* r = t_runner;
  if (!r || !r->jumped) return;
  r->jumped = false;
  landed_by_jump();
}

}  // namespace hcq::cpu
