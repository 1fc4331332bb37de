// Conformance: submissions from several threads, and completions. Two threads launch kernels and copy buffers on
// one device at once: every submission takes exactly one timeline value, every result is right, and each
// completion a thread gets back is done once waited for. Run under ThreadSanitizer too (scripts/test.sh).
#include <stdexcept>
#include <thread>

#include "common/message_of.hpp"
#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

class ConformanceThreads : public ConformanceFixture {};

constexpr uint32_t kWords = 256;  // per launch
constexpr uint32_t kRounds = 12;  // launches per thread
constexpr uint32_t kLocal = 64;

// What thread t's input holds at word i, and so what launch r leaves in its slice: in + r.
uint32_t input_word(uint32_t t, uint32_t i) { return t * 100'000 + i * 3; }

TEST_P(ConformanceThreads, LaunchesAndCopiesFromTwoThreadsEachTakeOneTimelineValue) {
  const std::unique_ptr<Program> add_value = load(kernels().add_value_u32);
  constexpr uint32_t kThreads = 2;
  struct PerThread {
    Buffer in, out, copy;
  };
  std::vector<PerThread> per;
  for (uint32_t t = 0; t < kThreads; ++t) {
    per.push_back(
        {Buffer(dev(), kWords * 4), Buffer(dev(), kRounds * kWords * 4), Buffer(dev(), kRounds * kWords * 4)});
    std::vector<uint32_t> in(kWords);
    for (uint32_t i = 0; i < kWords; ++i) in[i] = input_word(t, i);
    per[t].in.copyin(std::span<const uint32_t>(in));
  }
  dev().synchronize();
  const uint64_t first = dev().timeline_value();

  std::vector<std::exception_ptr> errors(kThreads);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        PerThread& p = per[t];
        for (uint32_t r = 0; r < kRounds; ++r) {
          // Round r writes in + r into slice r of out.
          const Buffer slice = p.out.view(uint64_t{r} * kWords * 4, kWords * 4);
          const Buffer* bufs[] = {&slice, &p.in};
          const uint32_t vals[] = {kWords, r};
          const Completion launched = add_value->launch(bufs, vals, {kWords / kLocal, 1, 1}, {kLocal, 1, 1});
          if (r % 4 == 3) {
            launched.wait();
            if (!launched.done()) throw std::logic_error("a completion waited for is not done");
          }
        }
        const Completion copied = p.copy.copy_from(p.out);
        copied.wait();
        if (!copied.done()) throw std::logic_error("a copy's completion waited for is not done");
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (uint32_t t = 0; t < kThreads; ++t) {
    if (errors[t]) {
      try {
        std::rethrow_exception(errors[t]);
      } catch (const std::exception& e) {
        FAIL() << "thread " << t << ": " << e.what();
      }
    }
  }

  // One value per launch and per device-to-device copy, whatever the interleaving.
  EXPECT_EQ(dev().timeline_value(), first + kThreads * (kRounds + 1));
  EXPECT_TRUE(dev().last_submission().done());
  for (uint32_t t = 0; t < kThreads; ++t) {
    std::vector<uint32_t> got(kRounds * kWords);
    per[t].copy.copyout(std::span<uint32_t>(got));
    for (uint32_t r = 0; r < kRounds; ++r) {
      for (uint32_t i = 0; i < kWords; ++i) {
        ASSERT_EQ(got[r * kWords + i], input_word(t, i) + r) << "thread " << t << " round " << r << " word " << i;
      }
    }
  }
}

// A completion is not done while the work before it is provably blocked, and is done once it ran.
TEST_P(ConformanceThreads, CompletionIsDoneOnlyAfterItsWorkRan) {
  EXPECT_TRUE(Completion().done());
  EXPECT_NO_THROW(Completion().wait());

  OwnedSignal gate(0, "test gate");
  auto q = dev().compute_queue();
  const Completion blocked = dev().submit(*q, [&](HWQueue& b) { b.wait(gate, 1); });
  EXPECT_EQ(blocked.device(), &dev());
  EXPECT_EQ(blocked.value() + 1, dev().timeline_value());
  EXPECT_TRUE(timeline_blocked_before(blocked.value()));
  EXPECT_FALSE(blocked.done());

  gate->set_value(1);
  blocked.wait();
  EXPECT_TRUE(blocked.done());
  EXPECT_EQ(dev().timeline_signal().value(), blocked.value());
}

// A launch with a buffer of another device, or with a null buffer, is refused before anything is submitted.
TEST_P(ConformanceThreads, LaunchWithBuffersChecksThemFirst) {
  const std::unique_ptr<Program> add_value = load(kernels().add_value_u32);
  Buffer a(dev(), kWords * 4), b(dev(), kWords * 4);
  const uint32_t vals[] = {kWords, 1};
  const uint64_t before = dev().timeline_value();
  const Buffer* with_null[] = {&a, nullptr};
  EXPECT_EQ(test::message_of<InvalidArgument>([&] { add_value->launch(with_null, vals, {4, 1, 1}, {kLocal, 1, 1}); }),
            dev().name() + ": program add_value_u32: buffer argument 1 is null");
  const Buffer* one[] = {&a};
  EXPECT_THROW(add_value->launch(one, vals, {4, 1, 1}, {kLocal, 1, 1}), InvalidArgument);
  if (dev().name() != "CPU:0") {
    Buffer elsewhere(open_device("CPU"), kWords * 4);
    const Buffer* mixed[] = {&a, &elsewhere};
    EXPECT_EQ(test::message_of<InvalidArgument>([&] { add_value->launch(mixed, vals, {4, 1, 1}, {kLocal, 1, 1}); }),
              dev().name() + ": program add_value_u32: buffer argument 1 lives on CPU:0 (copy it to " + dev().name() +
                  " first)");
  }
  EXPECT_EQ(dev().timeline_value(), before);
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceThreads);

}  // namespace
}  // namespace hcq::conformance
