// The host runner of HCQ_THREAD_KERNEL (drivers/cpu/workgroup_threads.hpp), driven directly with thread bodies
// written in C++ against the host dispatch: each thread in its own context, barriers, the seeded order, the
// poisoned shared arena, and the rule breaks that end a workgroup with an error. Device-level runs (the CPU device
// and the simulated GPUs, kernels built from C) are in tests/sim_gpus/barrier_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "../../drivers/cpu/workgroup_threads.hpp"

namespace hcq::cpu {
namespace {

// What the bodies write to: a log of (thread, phase) events in the order they ran.
struct Log {
  std::vector<uint32_t> events;
};
Log* g_log = nullptr;

hcq_dispatch make_dispatch(uint32_t lx, uint32_t ly, uint32_t lz, uint64_t seed) {
  hcq_dispatch d{};
  d.num_groups[0] = d.num_groups[1] = d.num_groups[2] = 1;
  d.local_size[0] = lx;
  d.local_size[1] = ly;
  d.local_size[2] = lz;
  attach_workgroup_threads(d, seed);
  return d;
}

uint32_t linear(const hcq_dispatch* d) {
  return (d->local_id[2] * d->local_size[1] + d->local_id[1]) * d->local_size[0] + d->local_id[0];
}

// Logs its id, waits at a barrier, logs again (+1000).
void log_twice(const hcq_dispatch* d, hcq_thread_* t) {
  g_log->events.push_back(linear(d));
  d->barrier_(t);
  g_log->events.push_back(1000 + linear(d));
}

std::vector<uint32_t> run_log(uint64_t seed, void (*body)(const hcq_dispatch*, hcq_thread_*), uint32_t n = 64) {
  Log log;
  g_log = &log;
  const hcq_dispatch d = make_dispatch(n, 1, 1, seed);
  d.run_threads_(&d, body);
  g_log = nullptr;
  EXPECT_EQ(take_workgroup_error(), "");
  return log.events;
}

TEST(WorkgroupThreads, EveryThreadRunsOnceAndNoneCrossesABarrierEarly) {
  const std::vector<uint32_t> ev = run_log(1, log_twice);
  ASSERT_EQ(ev.size(), 128u);
  std::vector<int> seen(64, 0);
  for (size_t i = 0; i < 64; ++i) {
    ASSERT_LT(ev[i], 64u) << "a thread passed the barrier before all arrived";
    ++seen[ev[i]];
  }
  for (size_t i = 64; i < 128; ++i) {
    ASSERT_GE(ev[i], 1000u);
    ++seen[ev[i] - 1000];
  }
  for (int s : seen) EXPECT_EQ(s, 2);
}

// The order is a shuffle, not the local-id order; one seed gives one order, another seed another, before and after
// the barrier alike.
TEST(WorkgroupThreads, SeededOrder) {
  const std::vector<uint32_t> a = run_log(1, log_twice), b = run_log(1, log_twice), c = run_log(2, log_twice);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::vector<uint32_t> in_order(64);
  for (uint32_t i = 0; i < 64; ++i) in_order[i] = i;
  EXPECT_NE(std::vector<uint32_t>(a.begin(), a.begin() + 64), in_order);
  EXPECT_NE(std::vector<uint32_t>(a.begin(), a.begin() + 64), std::vector<uint32_t>(a.begin() + 64, a.end()))
      << "the phase after the barrier runs in the same order as the first";
}

// Local ids over three dimensions, x fastest, each thread its own copy.
void record_ids(const hcq_dispatch* d, hcq_thread_*) {
  g_log->events.push_back(d->local_id[0] | d->local_id[1] << 8 | d->local_id[2] << 16);
}
TEST(WorkgroupThreads, LocalIdsCoverTheWorkgroup) {
  Log log;
  g_log = &log;
  const hcq_dispatch d = make_dispatch(4, 3, 2, 7);
  d.run_threads_(&d, record_ids);
  g_log = nullptr;
  std::vector<uint32_t> ids = log.events, want;
  std::sort(ids.begin(), ids.end());
  for (uint32_t z = 0; z < 2; ++z)
    for (uint32_t y = 0; y < 3; ++y)
      for (uint32_t x = 0; x < 4; ++x) want.push_back(x | y << 8 | z << 16);
  std::sort(want.begin(), want.end());
  EXPECT_EQ(ids, want);
}

// Shared arrays: the same address in every thread, aligned, poisoned (0xff) at the start of each workgroup even
// after the last one wrote them.
std::vector<const void*> g_ptrs;
std::vector<uint8_t> g_first_bytes;
void shared_user(const hcq_dispatch* d, hcq_thread_* t) {
  auto* a = static_cast<uint8_t*>(d->shared_(t, 3, 1));
  auto* b = static_cast<double*>(d->shared_(t, 4 * sizeof(double), alignof(double)));
  g_ptrs.push_back(a);
  g_ptrs.push_back(b);
  if (linear(d) == 0) {
    g_first_bytes.push_back(a[0]);
    std::memset(a, 0, 3);
    std::memset(b, 0, sizeof(double) * 4);
  }
}
TEST(WorkgroupThreads, SharedArraysArePerWorkgroupAlignedAndPoisoned) {
  g_ptrs.clear();
  g_first_bytes.clear();
  for (int run = 0; run < 2; ++run) {
    const hcq_dispatch d = make_dispatch(8, 1, 1, 3);
    // thread 0 may run after others; they only read pointers.
    d.run_threads_(&d, shared_user);
    EXPECT_EQ(take_workgroup_error(), "");
  }
  ASSERT_EQ(g_ptrs.size(), 32u);
  for (size_t i = 2; i < g_ptrs.size(); i += 2) {
    EXPECT_EQ(g_ptrs[i], g_ptrs[0]);
    EXPECT_EQ(g_ptrs[i + 1], g_ptrs[1]);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(g_ptrs[1]) % alignof(double), 0u);
  EXPECT_GE(static_cast<const uint8_t*>(g_ptrs[1]) - static_cast<const uint8_t*>(g_ptrs[0]), 3);
  EXPECT_EQ(g_first_bytes, (std::vector<uint8_t>{0xff, 0xff})) << "the second workgroup saw the first's zeros";
}

void too_much_shared(const hcq_dispatch* d, hcq_thread_* t) {
  d->shared_(t, kWorkgroupSharedBytes - 8, 4);
  d->shared_(t, 16, 4);
  g_log->events.push_back(1);  // never reached
}
TEST(WorkgroupThreads, TooMuchSharedMemoryIsAnError) {
  Log log;
  g_log = &log;
  const hcq_dispatch d = make_dispatch(32, 1, 1, 1);
  d.run_threads_(&d, too_much_shared);
  g_log = nullptr;
  const std::string why = take_workgroup_error();
  EXPECT_NE(why.find("65544 bytes"), std::string::npos) << why;
  EXPECT_TRUE(log.events.empty());
  // The runner is usable afterwards: its stacks went back to the pool.
  EXPECT_EQ(run_log(1, log_twice).size(), 128u);
}

// Thread 5 skips the barrier: it ends while the others wait there.
void skips_barrier(const hcq_dispatch* d, hcq_thread_* t) {
  if (linear(d) == 5) return;
  d->barrier_(t);
}
TEST(WorkgroupThreads, ABarrierOnlySomeThreadsReachIsAnError) {
  const hcq_dispatch d = make_dispatch(16, 1, 1, 1);
  d.run_threads_(&d, skips_barrier);
  const std::string why = take_workgroup_error();
  EXPECT_NE(why.find("thread (5,0,0)"), std::string::npos) << why;
  EXPECT_NE(why.find("15 of the workgroup's 16 threads wait at barrier 1"), std::string::npos) << why;
  EXPECT_EQ(take_workgroup_error(), "") << "the error is taken once";
  EXPECT_EQ(run_log(1, log_twice).size(), 128u);
}

// Deep recursion on a fiber's stack works (the stacks are real, not a shared scratch area) and a thread's locals
// survive barriers while the other threads run on their own stacks.
uint32_t deep(uint32_t n) {
  volatile uint8_t pad[256];
  pad[0] = static_cast<uint8_t>(n);
  return n == 0 ? pad[0] : deep(n - 1) + 1;
}
void locals_survive(const hcq_dispatch* d, hcq_thread_* t) {
  uint32_t mine[16];
  for (uint32_t i = 0; i < 16; ++i) mine[i] = linear(d) * 100 + i;
  d->barrier_(t);
  const uint32_t depth = deep(40);
  d->barrier_(t);
  uint32_t sum = 0;
  for (uint32_t v : mine) sum += v;
  g_log->events.push_back(sum - linear(d) * 1600 + depth);
}
TEST(WorkgroupThreads, LocalsSurviveBarriers) {
  const std::vector<uint32_t> ev = run_log(9, locals_survive, 256);
  ASSERT_EQ(ev.size(), 256u);
  for (uint32_t v : ev) EXPECT_EQ(v, 120u + 40u);  // 0+1+...+15, then the recursion's depth
}

void empty_body(const hcq_dispatch* d, hcq_thread_* t) { d->barrier_(t); }
void no_barrier(const hcq_dispatch*, hcq_thread_*) {}
// Not a pass/fail bound (machines differ): prints what a thread costs, with and without a barrier, as the best of
// 20 batches (the least disturbed by other work on the machine).
TEST(WorkgroupThreads, CostPerThread) {
  using Body = void (*)(const hcq_dispatch*, hcq_thread_*);
  const std::pair<Body, const char*> cases[] = {{no_barrier, "no barrier"}, {empty_body, "one barrier"}};
  for (auto [body, what] : cases) {
    const hcq_dispatch d = make_dispatch(128, 1, 1, 1);
    d.run_threads_(&d, body);  // warm: the stacks exist
    constexpr int kRuns = 200;
    double best = 1e30;
    for (int batch = 0; batch < 20; ++batch) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kRuns; ++i) d.run_threads_(&d, body);
      best = std::min(best, std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count());
    }
    EXPECT_EQ(take_workgroup_error(), "");
    std::printf("[ cost     ] %.1f ns per thread, 128-thread workgroups, %s\n", best / kRuns / 128, what);
  }
}

}  // namespace
}  // namespace hcq::cpu
