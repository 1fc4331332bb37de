// Timeline signals raise the GPU's signal event, and host waits sleep on it: the queues append the event write and
// interrupt after a timeline value (PM4 RELEASE_MEM with int_sel and ctxid = event id; SDMA FENCE + TRAP; AQL
// through the PM4 in its vendor IB packet), the simulated KFD signals the event as the kernel's interrupt handler
// does, and Device::wait_signal blocks in WAIT_EVENTS until then. Faults and timeouts end such a wait as before.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/kfd_ioctl.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "amd/decode.hpp"
#include "amd/kfd/amd_device.hpp"
#include "amd/target.hpp"
#include "common/timeline.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "sim/amd_engine/engine.hpp"
#include "sim/kfd/sim_kfd.hpp"
#include "sim/sim_os.hpp"

namespace hcq::amd {
namespace {

using namespace std::chrono_literals;

// Below every allocation of the unified VA space and inside the GPUVM aperture: mapped on no GPU.
constexpr uint64_t kUnmapped = 0x20000;

// A simulated machine of `gpus` GPUs of the target, its packet engines running the queues; the test keeps the
// SimKfd to read what happened to the events.
class AmdSignalEventTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { open(1); }
  void open(unsigned gpus) {
    kfd_ = std::make_shared<sim::SimKfd>(std::vector<std::string>(gpus, GetParam()),
                                         sim::amd_engine::make_queue_runner_factory({}));
    os_ = std::make_shared<sim::SimOs>(std::vector<std::shared_ptr<sim::SimDriver>>{kfd_});
    for (unsigned i = 0; i < gpus; ++i) {
      devs_.push_back(open_kfd_device_on(cat("SIM-AMD:", GetParam(), i ? cat(":", i) : ""), os_, i, "sim-kfd"));
      ASSERT_NE(dynamic_cast<AmdDevice*>(devs_.back().get()), nullptr);
    }
  }
  void TearDown() override {
    while (!devs_.empty()) devs_.pop_back();
  }
  Device& dev(size_t i = 0) { return *devs_.at(i); }
  AmdDevice& amd(size_t i = 0) { return static_cast<AmdDevice&>(*devs_.at(i)); }
  sim::SimKfd::EventCounters counters(size_t i = 0) {
    const auto c = kfd_->event_counters(amd(i).gpu().signal_event_id());
    EXPECT_TRUE(c.has_value());
    return c.value_or(sim::SimKfd::EventCounters{});
  }
  const Target& target() { return Target::from_gfx(GetParam()); }
  // The counters once the interrupt after `before` has been counted (or 2 s have passed). A queue writes the
  // timeline value before it raises the interrupt (RELEASE_MEM's data then its int_sel; SDMA's FENCE then TRAP), so
  // a wait that saw the value between two of its sleeps can return before the interrupt is counted.
  sim::SimKfd::EventCounters counters_after_interrupt(const sim::SimKfd::EventCounters& before, size_t i = 0) {
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    sim::SimKfd::EventCounters c = counters(i);
    while (c.interrupts == before.interrupts && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(1ms);
      c = counters(i);
    }
    return c;
  }

  // Submits, on `q`: wait for `gate` >= 1, then what `body` adds, then the timeline's next value; returns it.
  uint64_t gated_signal(Device& d, HWQueue& q, const Signal& gate, const std::function<void(HWQueue&)>& body = {}) {
    const uint64_t v = hcq::test::take_timeline_value(d);
    q.wait(gate, 1u);
    if (body) body(q);
    q.signal(d.timeline_signal(), v).submit();
    return v;
  }
  // Opens the gate from another thread: once `asleep` says the waiter is blocked in WAIT_EVENTS (polled, up to 5 s;
  // under a loaded machine a fixed delay can pass before the waiter has even started), else after 60 ms.
  static std::thread open_later(const Signal& gate, std::function<bool()> asleep = {}) {
    return std::thread([gate, asleep = std::move(asleep)] {
      const auto deadline = std::chrono::steady_clock::now() + 5s;
      if (asleep) {
        while (!asleep() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
      } else {
        std::this_thread::sleep_for(60ms);
      }
      gate.set_value(1);
    });
  }
  // For open_later: the waiter of device i has gone to sleep since `before`.
  std::function<bool()> slept_since(const sim::SimKfd::EventCounters& before, size_t i = 0) {
    return [this, before, i] { return counters(i).waits > before.waits; };
  }

  // The interrupt packets in a queue's words: RELEASE_MEMs that ask for an interrupt (PM4), TRAPs (SDMA).
  struct Interrupt {
    uint64_t ctxid = 0, mailbox = 0, data = 0;
  };
  std::vector<Interrupt> interrupts(const HWQueue& q) {
    std::vector<Interrupt> out;
    if (q.kind() == QueueKind::compute) {
      for (const DecodedPacket& p : decode_pm4(q.words(), target())) {
        EXPECT_TRUE(p.ok()) << p.op << ": " << p.error;
        if (p.op != "RELEASE_MEM" || p.field("int_sel")->value == 0) continue;
        EXPECT_EQ(p.field("int_sel")->value, 2u) << "send interrupt after write confirm";
        EXPECT_EQ(p.field("data_sel")->value, 1u) << "the event id, 32 bits";
        out.push_back({p.field("int_ctxid")->value, p.field("address")->value, p.field("data")->value});
      }
      return out;
    }
    const std::vector<DecodedPacket> ps = decode_sdma(q.words(), target());
    for (size_t i = 0; i < ps.size(); ++i) {
      EXPECT_TRUE(ps[i].ok()) << ps[i].op << ": " << ps[i].error;
      if (ps[i].op != "TRAP") continue;
      Interrupt it{ps[i].field("int_context")->value, 0, 0};
      // The FENCE just before it wrote the event id into the mailbox.
      if (i > 0 && ps[i - 1].op == "FENCE") {
        it.mailbox = ps[i - 1].field("addr")->value;
        it.data = ps[i - 1].field("data")->value;
      }
      out.push_back(it);
    }
    return out;
  }

  std::shared_ptr<sim::SimKfd> kfd_;
  std::shared_ptr<sim::SimOs> os_;
  std::vector<std::unique_ptr<Device>> devs_;
};

TEST_P(AmdSignalEventTest, TheDeviceHasASignalEventWithAMailbox) {
  const KfdGpu& g = amd().gpu();
  EXPECT_NE(g.event_slot_va(), 0u);
  EXPECT_EQ(g.event_slot_va() % 8, 0u);
  // The mailbox is the event's slot of the page the process gave KFD: unsignaled until the GPU writes it.
  EXPECT_EQ(*reinterpret_cast<const uint64_t*>(g.event_slot_va()), sim::SimKfd::kUnsignaledSlot);
  EXPECT_TRUE(kfd_->event_counters(g.signal_event_id()).has_value());
}

TEST_P(AmdSignalEventTest, TimelineSignalCarriesTheInterrupt) {
  const uint32_t id = amd().gpu().signal_event_id();
  const uint64_t mailbox = amd().gpu().event_slot_va();
  for (QueueKind kind : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(kind));
    auto q = dev().new_queue(kind);
    q->signal(dev().timeline_signal(), 5u);
    const std::vector<Interrupt> ints = interrupts(*q);
    ASSERT_EQ(ints.size(), 1u);
    EXPECT_EQ(ints[0].ctxid, id);
    EXPECT_EQ(ints[0].mailbox, mailbox);
    EXPECT_EQ(ints[0].data, id) << "the mailbox gets the event id";
  }
}

TEST_P(AmdSignalEventTest, OtherSignalsHaveNoInterrupt) {
  OwnedSignal other(0, "not the timeline");
  for (QueueKind kind : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(kind));
    auto q = dev().new_queue(kind);
    q->signal(other, 1u).wait(other, 1u).timestamp(other);
    EXPECT_TRUE(interrupts(*q).empty());
  }
}

TEST_P(AmdSignalEventTest, SymbolicSignalAddressCarriesTheInterrupt) {
  // Graph replay names the timeline by a variable (it may be the timeline or its shadow at replay time).
  for (QueueKind kind : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(kind));
    auto q = dev().new_queue(kind);
    q->signal(Sym(Var{0}), Sym(Var{1}));
    const std::vector<Interrupt> ints = interrupts(*q);
    ASSERT_EQ(ints.size(), 1u);
    EXPECT_EQ(ints[0].ctxid, amd().gpu().signal_event_id());
  }
}

TEST_P(AmdSignalEventTest, WaitSleepsInWaitEventsAndTheInterruptWakesIt) {
  for (QueueKind kind : {QueueKind::compute, QueueKind::copy}) {
    SCOPED_TRACE(to_string(kind));
    const sim::SimKfd::EventCounters before = counters();
    OwnedSignal gate(0, "gate");
    auto q = dev().new_queue(kind);
    const uint64_t v = gated_signal(dev(), *q, gate);
    std::thread opener = open_later(gate, slept_since(before));
    dev().wait_signal(dev().timeline_signal(), v);
    opener.join();
    EXPECT_GE(dev().timeline_signal().value(), v);
    const sim::SimKfd::EventCounters after = counters_after_interrupt(before);
    // It slept in the ioctl (a few 10 ms slices at most, not thousands of polls), and the GPU raised the interrupt
    // once. Whether the host was blocked at that instant or between two slices (then it takes the event, or sees
    // the value, on its next look) is the scheduler's choice, so the wake-up itself is checked only to be at most one.
    EXPECT_GE(after.waits - before.waits, 1u);
    EXPECT_LE(after.waits - before.waits, 30u);
    EXPECT_EQ(after.interrupts - before.interrupts, 1u);
    EXPECT_LE(after.woken_by_interrupt - before.woken_by_interrupt, 1u);
    dev().synchronize();
  }
}

TEST_P(AmdSignalEventTest, WaitOnOtherSignalsDoesNotUseTheEvent) {
  OwnedSignal gate(0, "gate"), done(0, "done");
  auto q = dev().compute_queue();
  q->wait(gate, 1u).signal(done, 1u).submit();
  const sim::SimKfd::EventCounters before = counters();
  std::thread opener = open_later(gate);
  dev().wait_signal(done, 1);
  opener.join();
  EXPECT_EQ(counters().waits, before.waits) << "no interrupt comes for this signal: the wait backs off instead";
  dev().synchronize();
}

TEST_P(AmdSignalEventTest, TimeoutWhileSleeping) {
  OwnedSignal gate(0, "gate");
  auto q = dev().compute_queue();
  const uint64_t v = gated_signal(dev(), *q, gate);
  const sim::SimKfd::EventCounters before = counters();
  try {
    dev().wait_signal(dev().timeline_signal(), v, 150ms);
    ADD_FAILURE() << "the wait returned with the gate closed";
  } catch (const TimeoutError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("timeout after 150 ms"), std::string::npos) << msg;
    EXPECT_NE(msg.find("to reach >= " + std::to_string(v)), std::string::npos) << msg;
  }
  const sim::SimKfd::EventCounters after = counters();
  EXPECT_GE(after.waits - before.waits, 1u) << "the wait slept in WAIT_EVENTS";
  EXPECT_EQ(after.interrupts, before.interrupts);
  gate->set_value(1);
  dev().synchronize();
}

TEST_P(AmdSignalEventTest, FaultEndsASleepingWait) {
  OwnedSignal gate(0, "gate");
  auto q = dev().compute_queue();
  const uint64_t v = gated_signal(dev(), *q, gate, [](HWQueue& h) { h.write(Sym(kUnmapped), 1u); });
  const sim::SimKfd::EventCounters before = counters();
  const auto t0 = std::chrono::steady_clock::now();
  std::thread opener = open_later(gate, slept_since(before));
  try {
    dev().wait_signal(dev().timeline_signal(), v);
    ADD_FAILURE() << "the wait returned on a faulted queue";
  } catch (const DeviceFault& e) {
    EXPECT_NE(std::string(e.what()).find("GPU memory fault at " + hex(kUnmapped)), std::string::npos) << e.what();
  }
  opener.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "a fault must not wait for the timeout";
  EXPECT_GE(counters().waits - before.waits, 1u) << "the wait slept in WAIT_EVENTS";
  EXPECT_THROW(dev().synchronize(), DeviceFault);
}

TEST_P(AmdSignalEventTest, PeerGpuTakesASlotInTheProcessEventPage) {
  devs_.clear();
  open(2);
  const KfdGpu &g0 = amd(0).gpu(), &g1 = amd(1).gpu();
  ASSERT_NE(g1.event_slot_va(), 0u);
  EXPECT_NE(g0.signal_event_id(), g1.signal_event_id());
  // One event page per KFD process: the second GPU's mailbox is its slot of the page the first gave.
  EXPECT_EQ(g1.event_slot_va() - g0.event_slot_va(), (uint64_t{g1.signal_event_id()} - g0.signal_event_id()) * 8);
  // The first GPU goes: the page stays (KFD never frees it) and the second keeps sleeping and waking on it.
  devs_.erase(devs_.begin());
  OwnedSignal gate(0, "gate");
  auto q = dev(0).copy_queue();
  const uint64_t v = gated_signal(dev(0), *q, gate);
  const sim::SimKfd::EventCounters before = counters(0);
  std::thread opener = open_later(gate, slept_since(before, 0));
  dev(0).wait_signal(dev(0).timeline_signal(), v);
  opener.join();
  const sim::SimKfd::EventCounters after = counters_after_interrupt(before, 0);
  EXPECT_GE(after.waits - before.waits, 1u);
  EXPECT_EQ(after.interrupts - before.interrupts, 1u);
  dev(0).synchronize();
}

INSTANTIATE_TEST_SUITE_P(SimAmd, AmdSignalEventTest, ::testing::Values("gfx1100", "gfx942", "gfx1201"),
                         [](const auto& info) { return std::string(info.param); });

// ---------------------------------------------------------------------------------------------------------------
// The simulated KFD's events, as the kernel's kfd_events.c behaves, through the ioctls.

class SimKfdSignalEventTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kfd_ = std::make_shared<sim::SimKfd>(std::vector<std::string>{"gfx1100"});
    os_ = std::make_unique<sim::SimOs>(std::vector<std::shared_ptr<sim::SimDriver>>{kfd_});
    fd_ = os_->open("/dev/kfd", O_RDWR);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (slots_) os_->munmap(slots_, sim::SimKfd::kEventPageBytes);
    os_->close(fd_);
  }
  int io(unsigned long req, void* arg) { return os_->ioctl(fd_, req, arg) == 0 ? 0 : errno; }
  // A signal event in the page KFD makes when the process gives none; the page mapped through /dev/kfd.
  uint32_t signal_event() {
    kfd_ioctl_create_event_args e{};
    e.event_type = KFD_IOC_EVENT_SIGNAL;
    e.auto_reset = 1;
    EXPECT_EQ(io(AMDKFD_IOC_CREATE_EVENT, &e), 0);
    if (!slots_) {
      void* p = os_->mmap(nullptr, sim::SimKfd::kEventPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                          static_cast<off_t>(e.event_page_offset));
      EXPECT_NE(p, MAP_FAILED);
      slots_ = static_cast<uint64_t*>(p);
    }
    return e.event_id;
  }
  // WAIT_EVENTS on `ids` (any): the errno, and the wait result in *result.
  int wait(std::vector<uint32_t> ids, uint32_t timeout_ms, uint32_t* result) {
    std::vector<kfd_event_data> d(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) d[i].event_id = ids[i];
    kfd_ioctl_wait_events_args w{};
    w.events_ptr = reinterpret_cast<uint64_t>(d.data());
    w.num_events = static_cast<uint32_t>(d.size());
    w.timeout = timeout_ms;
    const int err = io(AMDKFD_IOC_WAIT_EVENTS, &w);
    *result = w.wait_result;
    return err;
  }
  // Blocks until `n` WAIT_EVENTS calls have named `id` (the waiter threads are in the ioctl).
  void await_waits(uint32_t id, uint64_t n) {
    while (kfd_->event_counters(id)->waits < n) std::this_thread::sleep_for(1ms);
    std::this_thread::sleep_for(20ms);  // past the registration, into the sleep
  }

  std::shared_ptr<sim::SimKfd> kfd_;
  std::unique_ptr<sim::SimOs> os_;
  int fd_ = -1;
  uint64_t* slots_ = nullptr;
};

TEST_F(SimKfdSignalEventTest, WaitValidatesAndTimesOut) {
  const uint32_t id = signal_event();
  uint32_t r = 0;
  EXPECT_EQ(wait({id}, 0, &r), 0);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_TIMEOUT)) << "a zero timeout polls";
  EXPECT_EQ(wait({id}, 30, &r), 0);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_TIMEOUT));
  EXPECT_EQ(wait({id, 4000}, 30, &r), EINVAL) << "an id that names no event";
  kfd_ioctl_wait_events_args none{};
  EXPECT_EQ(io(AMDKFD_IOC_WAIT_EVENTS, &none), EINVAL) << "no events";
}

TEST_F(SimKfdSignalEventTest, InterruptWakesEveryWaiterOnce) {
  const uint32_t id = signal_event();
  uint32_t r1 = 0, r2 = 0;
  std::thread a([&] { EXPECT_EQ(wait({id}, 5000, &r1), 0); });
  std::thread b([&] { EXPECT_EQ(wait({id}, 5000, &r2), 0); });
  await_waits(id, 2);
  slots_[id] = id;  // what the GPU's RELEASE_MEM writes before the interrupt
  kfd_->raise_interrupt(kfd_->gpu_id(0), id);
  a.join();
  b.join();
  EXPECT_EQ(r1, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_COMPLETE));
  EXPECT_EQ(r2, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_COMPLETE));
  EXPECT_EQ(kfd_->event_counters(id)->interrupts, 1u);
  EXPECT_EQ(kfd_->event_counters(id)->woken_by_interrupt, 2u);
  EXPECT_EQ(slots_[id], sim::SimKfd::kUnsignaledSlot) << "the interrupt handler acknowledges the slot";
  uint32_t r = 0;
  EXPECT_EQ(wait({id}, 0, &r), 0);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_TIMEOUT)) << "auto-reset: the waiters took it";
}

TEST_F(SimKfdSignalEventTest, InterruptNeedsTheSlotWritten) {
  const uint32_t a = signal_event(), b = signal_event();
  uint32_t r = 0;
  // The id names `a` but the GPU wrote no slot: nothing fires.
  kfd_->raise_interrupt(kfd_->gpu_id(0), a);
  EXPECT_EQ(wait({a, b}, 0, &r), 0);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_TIMEOUT));
  // An id that names nothing: the handler scans the page and fires what was written (b only).
  slots_[b] = b;
  kfd_->raise_interrupt(kfd_->gpu_id(0), 0x0fffffff);
  EXPECT_EQ(wait({a}, 0, &r), 0);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_TIMEOUT));
  EXPECT_EQ(wait({b}, 0, &r), 0);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_COMPLETE));
  // Set with no one waiting, an auto-reset event stays set for the next waiter.
  slots_[a] = a;
  kfd_->raise_interrupt(kfd_->gpu_id(0), a);
  EXPECT_EQ(wait({a}, 0, &r), 0);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_COMPLETE));
  EXPECT_EQ(kfd_->event_counters(a)->interrupts, 1u) << "the one whose slot was written";
  EXPECT_EQ(kfd_->event_counters(a)->woken_by_interrupt, 0u) << "no one was blocked on it";
}

TEST_F(SimKfdSignalEventTest, DestroyingAnEventEndsItsWaitWithEio) {
  const uint32_t id = signal_event();
  int err = 0;
  uint32_t r = 0;
  std::thread t([&] { err = wait({id}, 5000, &r); });
  await_waits(id, 1);
  kfd_ioctl_destroy_event_args d{id, 0};
  ASSERT_EQ(io(AMDKFD_IOC_DESTROY_EVENT, &d), 0);
  t.join();
  EXPECT_EQ(err, EIO);
  EXPECT_EQ(r, static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_FAIL));
}

}  // namespace
}  // namespace hcq::amd
