// Conformance: signal, signal with patched address and value, wait (already satisfied, set late by the host,
// patched), timestamps. Every test runs on each queue kind the device has.
#include "common/timeline.hpp"
#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

class ConformanceSignal : public ConformanceFixture {};

TEST_P(ConformanceSignal, SignalsTimeline) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    auto q = dev().new_queue(qk);
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    EXPECT_EQ(dev().timeline_signal().value(), value);
  }
}

TEST_P(ConformanceSignal, SignalWritesValueAndTimestamp) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal sig(0, "conformance signal");
    auto q = dev().new_queue(qk);
    wait_previous(*q);
    q->signal(sig, 0xabcdef0123ull);
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    EXPECT_EQ(sig->value(), 0xabcdef0123ull) << "a 64-bit value must be written whole";
    EXPECT_NE(sig->timestamp(), 0u) << "a signal writes the device clock at +8";
  }
}

// Address and value are variables: the same built queue signals the timeline twice (tinygrad's
// test_signal_update), then two different user signals.
TEST_P(ConformanceSignal, SignalWithPatchedAddressAndValue) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    auto q = dev().new_queue(qk);
    q->signal(Var{0}, Var{1});

    for (int round = 0; round < 2; ++round) {
      uint64_t value = hcq::test::take_timeline_value(dev());
      std::array<uint64_t, 2> vars{dev().timeline_signal().addr(), value};
      q->submit(vars);
      wait_timeline(value);
    }

    OwnedSignal a(0, "patched signal a"), b(0, "patched signal b");
    std::array<uint64_t, 2> to_a{a->addr(), 0x1111};
    q->submit(to_a);
    a->wait(0x1111);
    std::array<uint64_t, 2> to_b{b->addr(), 0x2222};
    q->submit(to_b);
    b->wait(0x2222);
    EXPECT_EQ(a->value(), 0x1111u) << "patching the address must not write the old signal again";
    EXPECT_EQ(b->value(), 0x2222u);
  }
}

TEST_P(ConformanceSignal, WaitAlreadySatisfied) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal fake(1, "already set");
    auto q = dev().new_queue(qk);
    q->wait(fake, 1);
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
  }
}

TEST_P(ConformanceSignal, WaitGreaterOrEqual) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal fake(0x50, "past the value");
    auto q = dev().new_queue(qk);
    q->wait(fake, 0x30);  // a wait passes once the value is >= its operand, not only ==
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
  }
}

// The queue blocks on a signal the host sets later: it provably has not passed, then it completes.
TEST_P(ConformanceSignal, WaitSetLateByHost) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal fake(0, "set late by the host");
    auto q = dev().new_queue(qk);
    q->wait(fake, 1);
    uint64_t value = signal_next(*q);
    q->submit();

    EXPECT_TRUE(timeline_blocked_before(value)) << "the queue passed a wait whose signal is still 0";
    fake->set_value(1);
    wait_timeline(value);
  }
}

// A partial value does not release the wait: the queue stays blocked until the value reaches the operand.
TEST_P(ConformanceSignal, WaitSeesOnlyTheFullValue) {
  OwnedSignal fake(0, "stepped by the host");
  auto q = dev().compute_queue();
  q->wait(fake, 3);
  uint64_t value = signal_next(*q);
  q->submit();
  fake->set_value(2);
  EXPECT_TRUE(timeline_blocked_before(value)) << "the queue passed a wait for 3 with the signal at 2";
  fake->set_value(3);
  wait_timeline(value);
}

// Address and value of a wait are variables (tinygrad's test_wait_update).
TEST_P(ConformanceSignal, WaitPatched) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal fake(0, "patched wait");
    fake->set_value(0x30);
    auto q = dev().new_queue(qk);
    q->wait(Var{0}, Var{1});
    q->signal(dev().timeline_signal(), Var{2});

    uint64_t value = hcq::test::take_timeline_value(dev());
    std::array<uint64_t, 3> vars{fake->addr(), 0x30, value};
    q->submit(vars);
    wait_timeline(value);

    // Resubmitted with a value not reached yet: blocked until the host catches up.
    value = hcq::test::take_timeline_value(dev());
    vars = {fake->addr(), 0x31, value};
    q->submit(vars);
    EXPECT_TRUE(timeline_blocked_before(value)) << "the patched wait value 0x31 was not applied";
    fake->set_value(0x31);
    wait_timeline(value);
  }
}

TEST_P(ConformanceSignal, TimestampsAreOrdered) {
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal first(0, "ts first"), second(0, "ts second");
    auto q = dev().new_queue(qk);
    wait_previous(*q);
    q->timestamp(first);
    q->timestamp(second);
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    EXPECT_NE(first->timestamp(), 0u);
    EXPECT_GE(second->timestamp(), first->timestamp()) << "timestamps run backwards within one queue";
    EXPECT_EQ(first->value(), 0u) << "timestamp writes +8 only, never the value";
  }
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceSignal);

}  // namespace
}  // namespace hcq::conformance
