// Conformance: a hang ends in a timeout error that names the signal, its address, and the expected and current
// values; afterwards the device is usable again (or reports a clear sticky error).
#include <cstdlib>
#include <functional>

#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

class ConformanceHang : public ConformanceFixture {
 protected:
  // The device runs a kernel and gets the right answer.
  void expect_usable() {
    auto add_one = load(kernels().add_one_f32);
    DeviceMemory a(dev(), 8), b(dev(), 8);
    a.upload_as<float>({1.5f, 2.5f});
    auto q = dev().compute_queue();
    wait_previous(*q);
    q->exec(*add_one, LaunchArgs{{b.va(), a.va()}, {2u}}, Dims{1u, 1u, 1u}, Dims{2u, 1u, 1u});
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    EXPECT_EQ(b.download_as<float>(2), (std::vector<float>{2.5f, 3.5f}));
  }
};

// A host wait on a signal nobody sets: the message carries label, address, expected and current value.
TEST_P(ConformanceHang, HostWaitTimesOutWithContext) {
  OwnedSignal never(0x5a5a5a, "conformance never-set");
  auto message = thrown_message<TimeoutError>([&] { never->wait(0xc0ffee, kBlockedWait); });
  ASSERT_TRUE(message);
  EXPECT_NE(message->find("conformance never-set"), std::string::npos) << "no label in: " << *message;
  EXPECT_NE(message->find(hex(never->addr())), std::string::npos) << "no address in: " << *message;
  EXPECT_TRUE(mentions_value(*message, 0xc0ffee)) << "no expected value in: " << *message;
  EXPECT_TRUE(mentions_value(*message, 0x5a5a5a)) << "no current value in: " << *message;
}

// A queue hangs on a wait that is never satisfied: waiting for its timeline value times out with the timeline
// signal's address and values in the message. Then the host releases the wait and the device works again.
TEST_P(ConformanceHang, QueueHangEndsInTimeoutThenRecovers) {
  // Distinctive timeline values, so the message check below cannot match some other number by chance.
  dev().set_timeline_value(0x2345678);
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    OwnedSignal never(0, "conformance hang");
    auto q = dev().new_queue(qk);
    wait_previous(*q);
    q->wait(never, 0x77);
    uint64_t value = signal_next(*q);
    q->submit();

    const Signal& timeline = dev().timeline_signal();
    auto message = thrown_message<TimeoutError>([&] { timeline.wait(value, kBlockedWait); });
    ASSERT_TRUE(message);
    EXPECT_NE(message->find(hex(timeline.addr())), std::string::npos) << "no address in: " << *message;
    EXPECT_TRUE(mentions_value(*message, value)) << "no expected value " << value << " in: " << *message;
    EXPECT_TRUE(mentions_value(*message, value - 1)) << "no current value " << value - 1 << " in: " << *message;
    EXPECT_EQ(timeline.value(), value - 1);

    never->set_value(0x77);
    wait_timeline(value);
    EXPECT_FALSE(dev().has_error());
  }
  expect_usable();
}

// What a user sees: synchronize() on a hung device times out, naming the device and the timeline signal. Runs
// in a child process re-executed with HCQ_WAIT_TIMEOUT_MS=300 (the knob is read once per process), so the hang,
// and a sticky error if the device chose to record one, stay out of this process's devices.
TEST_P(ConformanceHang, SynchronizeOnHungDeviceTimesOut) {
  const char* old = std::getenv("HCQ_WAIT_TIMEOUT_MS");
  const std::string saved = old != nullptr ? old : "";
  ::setenv("HCQ_WAIT_TIMEOUT_MS", "300", 1);

  std::function<void(ChildReport&)> body = [this](ChildReport& r) {
    dev().set_timeline_value(0x1234567);  // distinctive values for the message checks
    OwnedSignal never(0, "conformance sync hang");
    auto q = dev().compute_queue();
    wait_previous(*q);
    q->wait(never, 1);
    uint64_t value = signal_next(*q);
    q->submit();
    const uint64_t timeline_addr = dev().timeline_signal().addr();

    std::string message;
    try {
      dev().synchronize();
      r.check(false, "synchronize returned on a hung device");
    } catch (const TimeoutError& e) {
      message = e.what();
    }
    r.note("timeout message: " + message);
    r.check(message.find(dev().name()) != std::string::npos, "the message names the device " + dev().name());
    r.check(message.find(hex(timeline_addr)) != std::string::npos,
            "the message names the address " + hex(timeline_addr));
    r.check(mentions_value(message, value), "the message names the expected value " + std::to_string(value));
    r.check(mentions_value(message, value - 1), "the message names the current value " + std::to_string(value - 1));

    // Release the hang: the device must work again, or say clearly (and every time) why not.
    never->set_value(1);
    try {
      dev().synchronize();
      r.note("device usable after the hang");
      auto q2 = dev().compute_queue();
      wait_previous(*q2);
      uint64_t v2 = signal_next(*q2);
      q2->submit();
      dev().synchronize();
      r.check(dev().timeline_signal().value() >= v2, "a submission after the hang completes");
    } catch (const Error& e) {
      r.note(std::string("sticky error: ") + e.what());
      r.check(dev().has_error(), "a synchronize that throws after the hang leaves has_error() set");
      r.check(std::string(e.what()).size() > 10, "the sticky error has a message");
      bool rethrown = false;
      try {
        dev().synchronize();
      } catch (const Error&) {
        rethrown = true;
      }
      r.check(rethrown, "a sticky error is re-raised by every synchronize");
    }
  };
  HCQ_CONFORMANCE_EXPECT_IN_CHILD(body);

  if (old != nullptr) {
    ::setenv("HCQ_WAIT_TIMEOUT_MS", saved.c_str(), 1);
  } else {
    ::unsetenv("HCQ_WAIT_TIMEOUT_MS");
  }
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceHang);

}  // namespace
}  // namespace hcq::conformance
