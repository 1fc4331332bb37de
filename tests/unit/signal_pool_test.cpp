// SignalPool and Signal: pooled 16-byte slots with generations, page mappers, and the host wait.
#include "hcq/backend/signal_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "hcq/backend/os.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "hcq/memory.hpp"

namespace hcq {
namespace {

using std::chrono::milliseconds;

constexpr size_t kSlotsPerPage = SignalPool::kPageSize / SignalPool::kSlotBytes;

class SignalPoolTest : public ::testing::Test {
 protected:
  VaSpace va{real_os(), 64 << 20};
  SignalPool pool{va, real_os()};
};

std::string message_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(SignalPoolTest, AcquireGivesInitialValueLabelAndZeroTimestamp) {
  Signal s = pool.acquire(42, "test signal");
  EXPECT_TRUE(s.valid());
  EXPECT_EQ(s.value(), 42u);
  EXPECT_EQ(s.timestamp(), 0u);
  EXPECT_EQ(s.label(), "test signal");
  EXPECT_TRUE(va.contains(s.addr()));
  EXPECT_EQ(s.addr() % 16, 0u);
  EXPECT_EQ(reinterpret_cast<uint64_t>(s.host_ptr()), s.addr());
  s.set_value(7);
  EXPECT_EQ(*s.host_ptr(), 7u);
  s.host_ptr()[1] = 1234;  // what a device writes at +8
  EXPECT_EQ(s.timestamp(), 1234u);
  s.set_label("renamed");
  EXPECT_EQ(s.label(), "renamed");
  EXPECT_EQ(pool.live_count(), 1u);
}

TEST_F(SignalPoolTest, ReleasedSlotIsReusedWithNewGeneration) {
  Signal a = pool.acquire(1, "first owner");
  Signal stale = a;  // a copy that outlives the release
  const uint64_t addr = a.addr();
  a.release();
  EXPECT_FALSE(a.valid());
  EXPECT_FALSE(stale.valid());
  EXPECT_EQ(pool.live_count(), 0u);

  Signal b = pool.acquire(5, "second owner");
  EXPECT_EQ(b.addr(), addr) << "the freed slot should be handed out again";
  EXPECT_EQ(b.value(), 5u);
  EXPECT_TRUE(b.valid());
  EXPECT_FALSE(stale.valid());
  EXPECT_FALSE(stale == b);

  // The stale handle must not see (or touch) the new owner's signal.
  std::string msg = message_of([&] { (void)stale.value(); });
  EXPECT_NE(msg.find("used after release"), std::string::npos) << msg;
  EXPECT_THROW(stale.set_value(9), InvalidArgument);
  EXPECT_THROW((void)stale.addr(), InvalidArgument);
  EXPECT_THROW(stale.wait(0, milliseconds(1)), InvalidArgument);
  EXPECT_EQ(b.value(), 5u);
}

TEST_F(SignalPoolTest, ReleaseTwiceIsInvalid) {
  Signal a = pool.acquire(0, "twice");
  Signal copy = a;
  a.release();
  std::string msg = message_of([&] { copy.release(); });
  EXPECT_NE(msg.find("released twice"), std::string::npos) << msg;
  EXPECT_NE(msg.find("twice"), std::string::npos);
  EXPECT_THROW(a.release(), InvalidArgument);  // a is now an empty handle
}

TEST_F(SignalPoolTest, EmptyHandle) {
  Signal s;
  EXPECT_FALSE(s.valid());
  EXPECT_FALSE(static_cast<bool>(s));
  EXPECT_THROW((void)s.value(), InvalidArgument);
  EXPECT_THROW(s.wait(0), InvalidArgument);
  EXPECT_EQ(s.label(), "");
}

TEST_F(SignalPoolTest, ManySignalsAcrossPages) {
  const size_t n = 2 * kSlotsPerPage + 17;
  std::vector<Signal> sigs;
  std::set<uint64_t> addrs;
  for (size_t i = 0; i < n; ++i) {
    sigs.push_back(pool.acquire(i, "many"));
    addrs.insert(sigs.back().addr());
  }
  EXPECT_EQ(addrs.size(), n);
  EXPECT_EQ(pool.live_count(), n);
  for (size_t i = 0; i < n; ++i) sigs[i].set_value(sigs[i].value() * 3);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(sigs[i].value(), 3 * i) << "slot " << i;
  for (size_t i = 0; i < n; i += 2) sigs[i].release();
  EXPECT_EQ(pool.live_count(), n / 2);
  for (size_t i = 1; i < n; i += 2) ASSERT_EQ(sigs[i].value(), 3 * i);
}

struct RecordingMapper : SignalPool::PageMapper {
  std::vector<void*> mapped;
  std::vector<void*> unmapped;
  void map_signal_page(void* addr, size_t size) override {
    EXPECT_EQ(size, SignalPool::kPageSize);
    mapped.push_back(addr);
  }
  void unmap_signal_page(void* addr, size_t) override { unmapped.push_back(addr); }
};

TEST_F(SignalPoolTest, MappersSeeExistingAndFuturePages) {
  std::vector<Signal> sigs;
  sigs.push_back(pool.acquire(0, "first page"));
  RecordingMapper m;
  pool.add_mapper(&m);
  ASSERT_EQ(m.mapped.size(), 1u);  // the page that already existed
  for (size_t i = 0; i < kSlotsPerPage; ++i) sigs.push_back(pool.acquire(0, "more"));
  ASSERT_EQ(m.mapped.size(), 2u);  // told about the new one
  const auto page_of = [](const Signal& s) { return s.addr() & ~uint64_t{SignalPool::kPageSize - 1}; };
  EXPECT_EQ(reinterpret_cast<uint64_t>(m.mapped[0]), page_of(sigs.front()));
  EXPECT_EQ(reinterpret_cast<uint64_t>(m.mapped[1]), page_of(sigs.back()));
  pool.remove_mapper(&m);
  EXPECT_EQ(m.unmapped.size(), 2u);
  for (size_t i = 0; i < kSlotsPerPage; ++i) sigs.push_back(pool.acquire(0, "after removal"));
  EXPECT_EQ(m.mapped.size(), 2u);
}

struct FailingMapper : SignalPool::PageMapper {
  int calls = 0;
  void map_signal_page(void*, size_t) override {
    ++calls;
    throw OutOfMemory("device cannot map more");
  }
  void unmap_signal_page(void*, size_t) override {}
};

TEST_F(SignalPoolTest, FailingMapperFailsTheAcquireCleanly) {
  FailingMapper m;
  pool.add_mapper(&m);  // no pages yet: nothing to map
  EXPECT_THROW(pool.acquire(0, "x"), OutOfMemory);
  EXPECT_EQ(pool.live_count(), 0u);
  EXPECT_EQ(va.bytes_in_use(), 0u);  // the page went back
  pool.remove_mapper(&m);
  EXPECT_EQ(pool.acquire(3, "y").value(), 3u);
}

TEST_F(SignalPoolTest, ConcurrentAcquireReleaseAndRead) {
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 3000; ++i) {
        Signal s = pool.acquire(static_cast<uint64_t>(t * 100000 + i), "threaded");
        if (s.value() != static_cast<uint64_t>(t * 100000 + i)) ++errors;
        s.release();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(pool.live_count(), 0u);
}

// ---- waits (on the process pool, as real code does)

TEST(SignalWaitTest, AlreadySatisfiedReturnsAtOnce) {
  OwnedSignal s(10, "ready");
  s->wait(10, milliseconds(0));
  s->wait(3, milliseconds(0));
}

TEST(SignalWaitTest, SeesAValueSetByAnotherThread) {
  OwnedSignal s(0, "late");
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(5));
    s->set_value(1);
  });
  s->wait(1, milliseconds(10000));
  setter.join();
  EXPECT_EQ(s->value(), 1u);
}

TEST(SignalWaitTest, TimeoutNamesLabelAddressExpectedAndCurrent) {
  OwnedSignal s(3, "stuck signal");
  std::string msg = message_of([&] { s->wait(5, milliseconds(2)); });
  EXPECT_NE(msg.find("timeout"), std::string::npos) << msg;
  EXPECT_NE(msg.find("stuck signal"), std::string::npos) << msg;
  EXPECT_NE(msg.find(hex(s->addr())), std::string::npos) << msg;
  EXPECT_NE(msg.find(">= 5"), std::string::npos) << msg;
  EXPECT_NE(msg.find("current 3"), std::string::npos) << msg;
  EXPECT_THROW(s->wait(5, milliseconds(1)), TimeoutError);
}

TEST(SignalWaitTest, TimeoutRestartsWhileTheValueMoves) {
  // The value moves every 5 ms for ~250 ms, far past the 150 ms timeout: the wait must not give up while it moves.
  OwnedSignal s(0, "moving");
  constexpr uint64_t kSteps = 50;
  std::thread stepper([&] {
    for (uint64_t i = 1; i <= kSteps; ++i) {
      std::this_thread::sleep_for(milliseconds(5));
      s->set_value(i);
    }
  });
  EXPECT_NO_THROW(s->wait(kSteps, milliseconds(150)));
  stepper.join();
}

TEST(SignalWaitTest, CheckCanAbortTheWait) {
  OwnedSignal s(0, "never");
  int calls = 0;
  EXPECT_THROW(s->wait(1, milliseconds(60000),
                       [&] {
                         if (++calls == 3) throw DeviceFault("the device faulted");
                       }),
               DeviceFault);
  EXPECT_EQ(calls, 3);
}

TEST(SignalWaitTest, OwnedSignalReleasesItsSlot) {
  size_t before = process().signals.live_count();
  Signal copy;
  {
    OwnedSignal s(0, "owned");
    copy = s.get();
    EXPECT_EQ(process().signals.live_count(), before + 1);
    OwnedSignal moved = std::move(s);
    EXPECT_FALSE(s.get().valid());
    EXPECT_TRUE(moved->valid());
  }
  EXPECT_EQ(process().signals.live_count(), before);
  EXPECT_FALSE(copy.valid());
}

TEST(SignalWaitTest, CreateUsesTheProcessPool) {
  Signal s = Signal::create(9, "created");
  EXPECT_TRUE(process().va.contains(s.addr()));
  EXPECT_EQ(s.value(), 9u);
  s.release();
}

}  // namespace
}  // namespace hcq
