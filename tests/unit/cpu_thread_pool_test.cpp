// The CPU device's helper threads (drivers/cpu/cpu_thread_pool.hpp): every item of a job runs once, the helpers
// take part whether they were spinning or asleep, and parallel_for returns only after the last chunk is done.
#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "../../drivers/cpu/cpu_thread_pool.hpp"

namespace hcq::cpu {
namespace {

using namespace std::chrono_literals;

struct CountJob {
  std::vector<std::atomic<uint32_t>> runs;
  explicit CountJob(uint64_t n) : runs(n) {}
  static void run(void* ctx, uint64_t begin, uint64_t end) {
    auto* job = static_cast<CountJob*>(ctx);
    for (uint64_t i = begin; i < end; ++i) job->runs[i].fetch_add(1, std::memory_order_relaxed);
  }
};

// Items that each wait (up to 10 s) until `threads` different threads are inside the job: the job can only finish
// quickly if that many threads took part.
struct MeetJob {
  explicit MeetJob(unsigned n) : threads(n) {}
  unsigned threads;
  std::atomic<unsigned> inside{0};
  std::atomic<bool> met{false};
  std::mutex mu;
  std::set<std::thread::id> ids;
  static void run(void* ctx, uint64_t, uint64_t) {
    auto* job = static_cast<MeetJob*>(ctx);
    {
      std::lock_guard lock(job->mu);
      if (!job->ids.insert(std::this_thread::get_id()).second) return;  // this thread was counted already
    }
    if (job->inside.fetch_add(1) + 1 == job->threads) job->met = true;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (!job->met && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }
};

TEST(CpuThreadPool, EveryItemOfEveryJobRunsOnce) {
  CpuThreadPool pool(3);
  // Sizes below, at and above the chunking (n / 32 items per claim with 4 threads), one job after another as a
  // queue's worker runs them, the queue going idle between some of them, and a pause now and then long enough for
  // the helpers to fall asleep.
  const std::array<uint64_t, 7> sizes{1, 2, 3, 31, 32, 33, 1000};
  for (int round = 0; round < 300; ++round) {
    if (round % 3 == 0) pool.queue_idle();
    if (round % 50 == 0) std::this_thread::sleep_for(2ms);
    const uint64_t n = sizes[static_cast<size_t>(round) % sizes.size()];
    CountJob job(n);
    pool.parallel_for(n, CountJob::run, &job);
    for (uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(job.runs[i].load(), 1u) << "round " << round << ", item " << i << " of " << n;
  }
}

TEST(CpuThreadPool, HelpersJoinAJob) {
  CpuThreadPool pool(1);
  MeetJob job(2);
  const auto start = std::chrono::steady_clock::now();
  pool.parallel_for(2, MeetJob::run, &job);
  EXPECT_TRUE(job.met) << "the helper never joined";
  EXPECT_EQ(job.ids.size(), 2u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  // ... and the next one, while they spin after the first.
  MeetJob next(2);
  pool.parallel_for(2, MeetJob::run, &next);
  EXPECT_TRUE(next.met);
}

TEST(CpuThreadPool, SleepingHelpersAreWokenByAJob) {
  CpuThreadPool pool(2);
  // Idle long past the helpers' spin: they sleep. A job published now must still reach them, twice over.
  pool.queue_idle();
  for (int round = 0; round < 2; ++round) {
    std::this_thread::sleep_for(20ms);
    MeetJob job(3);
    pool.parallel_for(3, MeetJob::run, &job);
    EXPECT_TRUE(job.met) << "a sleeping helper was not woken by the job, round " << round;
    EXPECT_EQ(job.ids.size(), 3u);
    pool.queue_idle();
  }
}

TEST(CpuThreadPool, ParallelForReturnsAfterTheHelpersChunks) {
  CpuThreadPool pool(1);
  // Item 1 is slow; whoever runs it, its write must be visible when parallel_for returns.
  struct SlowJob {
    std::array<uint64_t, 2> out{0, 0};
    static void run(void* ctx, uint64_t begin, uint64_t end) {
      auto* job = static_cast<SlowJob*>(ctx);
      for (uint64_t i = begin; i < end; ++i) {
        if (i == 1) std::this_thread::sleep_for(5ms);
        job->out[i] = 100 + i;
      }
    }
  };
  for (int round = 0; round < 20; ++round) {
    SlowJob job;
    pool.parallel_for(2, SlowJob::run, &job);
    ASSERT_EQ(job.out[0], 100u);
    ASSERT_EQ(job.out[1], 101u);
  }
}

TEST(CpuThreadPool, DestroyedWhileHelpersSpinOrSleep) {
  for (bool asleep : {false, true}) {
    CpuThreadPool pool(2);
    CountJob job(8);
    pool.parallel_for(8, CountJob::run, &job);
    for (uint64_t i = 0; i < 8; ++i) EXPECT_EQ(job.runs[i].load(), 1u);
    if (asleep) {
      pool.queue_idle();
      std::this_thread::sleep_for(5ms);
    }
  }  // the destructor wakes and joins the helpers: a hang here fails the test by its timeout
}

}  // namespace
}  // namespace hcq::cpu
