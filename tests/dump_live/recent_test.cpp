// capture::Recent, the always-on memory of a device's last submissions: what it keeps, and that a snapshot taken
// while other threads submit sees only whole records.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "hcq/backend/capture.hpp"

namespace hcq {
namespace {

void add_numbered(capture::Recent& r, uint64_t tag, size_t nwords) {
  std::vector<uint32_t> words(nwords, static_cast<uint32_t>(tag));
  r.add("pm4", "compute", 7, tag * 10, words, {});
}

TEST(CaptureRecent, KeepsTheLastSubmissionsInOrderWithTheirWords) {
  auto r = std::make_unique<capture::Recent>();
  EXPECT_TRUE(r->snapshot().empty());
  const uint32_t body[] = {1, 2, 3};
  const uint32_t tail[] = {4, 5};
  EXPECT_EQ(r->add("sdma", "copy", 3, 99, body, tail), 1u);
  std::vector<capture::Submission> s = r->snapshot();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].n, 1u);
  EXPECT_EQ(s[0].format, "sdma");
  EXPECT_EQ(s[0].queue, "copy");
  EXPECT_EQ(s[0].qid, 3u);
  EXPECT_EQ(s[0].ring_end, 99u);
  EXPECT_EQ(s[0].words, (std::vector<uint32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(s[0].dropped, 0u);

  for (uint64_t i = 2; i <= 100; ++i) add_numbered(*r, i, 4);
  s = r->snapshot();
  ASSERT_EQ(s.size(), capture::kRecent);
  for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(s[i].n, 100 - capture::kRecent + 1 + i);

  // Past the slot's budget: the first kSlotWords are kept, the rest counted.
  std::vector<uint32_t> big(capture::kSlotWords + 10, 0xabcd);
  r->add("pm4", "compute", 1, 0, big, tail);
  s = r->snapshot();
  EXPECT_EQ(s.back().words.size(), capture::kSlotWords);
  EXPECT_EQ(s.back().dropped, 12u);
}

TEST(CaptureRecent, ConcurrentSnapshotsSeeOnlyWholeRecords) {
  auto r = std::make_unique<capture::Recent>();
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> next{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 3; ++t)
    writers.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        // The number add() will hand out is not known in advance; the words carry a tag checked below instead.
        const uint64_t tag = next.fetch_add(1) + 1;
        std::vector<uint32_t> words(1 + tag % capture::kSlotWords, static_cast<uint32_t>(tag));
        r->add("pm4", "compute", static_cast<uint32_t>(tag), tag, words, {});
      }
    });
  // Until enough records were checked (writers on a busy machine may start late); the deadline only ends a run
  // whose writers never got to run, and then the test fails on `seen`.
  size_t seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; (i < 2000 || seen < 5000) && std::chrono::steady_clock::now() < deadline; ++i) {
    for (const capture::Submission& s : r->snapshot()) {
      ++seen;
      // qid, ring_end and every word were written from the same tag: a torn record mixes two.
      ASSERT_EQ(s.ring_end, s.qid);
      ASSERT_EQ(s.words.size(), 1 + s.ring_end % capture::kSlotWords);
      for (uint32_t w : s.words) ASSERT_EQ(w, static_cast<uint32_t>(s.ring_end));
    }
  }
  stop = true;
  for (auto& w : writers) w.join();
  EXPECT_GE(seen, 5000u);
  // Oldest first, each number once, none beyond what was handed out.
  const std::vector<capture::Submission> last = r->snapshot();
  ASSERT_FALSE(last.empty());
  for (size_t i = 1; i < last.size(); ++i) EXPECT_LT(last[i - 1].n, last[i].n);
  EXPECT_LE(last.back().n, next.load());
}

}  // namespace
}  // namespace hcq
