// Conformance: bad input from a user. Each misuse gives a typed error with a clear message; nothing
// crashes, and the device stays usable afterwards (the fixture's TearDown checks it is idle and error-free).
#include <functional>

#include "common/timeline.hpp"
#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

class ConformanceMisuse : public ConformanceFixture {
 protected:
  void SetUp() override {
    ConformanceFixture::SetUp();
    add_one_ = load(kernels().add_one_f32);  // 2 buffers, 1 value
    a_ = std::make_unique<DeviceMemory>(dev(), 64);
    b_ = std::make_unique<DeviceMemory>(dev(), 64);
  }
  void TearDown() override {
    ConformanceFixture::TearDown();
    a_.reset();
    b_.reset();
    add_one_.reset();
  }
  LaunchArgs good_args() const { return LaunchArgs{{b_->va(), a_->va()}, {2u}}; }

  // A queue that completes on the timeline: proves the device still works after a rejected command.
  void expect_queue_works(HWQueue& q) {
    uint64_t value = signal_next(q);
    q.submit();
    wait_timeline(value);
  }

  std::unique_ptr<Program> add_one_;
  std::unique_ptr<DeviceMemory> a_, b_;
};

TEST_P(ConformanceMisuse, WaitOnFreedSignal) {
  Signal handle = Signal::create(0, "conformance freed");
  Signal copy = handle;
  handle.release();
  EXPECT_FALSE(handle.valid());
  EXPECT_FALSE(copy.valid()) << "every copy of a released handle is invalid";

  auto message = thrown_message<InvalidArgument>([&] { copy.wait(1, kBlockedWait); });
  ASSERT_TRUE(message);
  EXPECT_FALSE(message->empty());
  EXPECT_THROW((void)copy.value(), InvalidArgument);
  EXPECT_THROW(copy.set_value(1), InvalidArgument);

  // A slot reused by a new signal must not be reachable through the stale handle.
  OwnedSignal reuse(0x42, "conformance reuse");
  EXPECT_THROW(copy.set_value(7), InvalidArgument);
  EXPECT_EQ(reuse->value(), 0x42u);
}

TEST_P(ConformanceMisuse, EncodeFreedSignal) {
  Signal handle = Signal::create(0, "conformance freed");
  handle.release();
  for (QueueKind qk : queue_kinds()) {
    SCOPED_TRACE(to_string(qk));
    auto q = dev().new_queue(qk);
    wait_previous(*q);
    EXPECT_THROW(q->wait(handle, 1), InvalidArgument);
    EXPECT_THROW(q->signal(handle, 1), InvalidArgument);
    EXPECT_THROW(q->timestamp(handle), InvalidArgument);
    expect_queue_works(*q);  // the rejected commands left the queue as it was
  }
}

TEST_P(ConformanceMisuse, ExecWithWrongNumberOfArgs) {
  const Dims one{1u, 1u, 1u}, two{2u, 1u, 1u};
  const std::vector<LaunchArgs> wrong = {
      {{b_->va()}, {2u}},                      // a buffer short
      {{b_->va(), a_->va(), a_->va()}, {2u}},  // a buffer too many
      {{b_->va(), a_->va()}, {}},              // a value short
      {{b_->va(), a_->va()}, {2u, 3u}},        // a value too many
  };
  auto q = dev().compute_queue();
  wait_previous(*q);
  for (size_t i = 0; i < wrong.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "case " << i);
    auto message = thrown_message<InvalidArgument>([&] { q->exec(*add_one_, wrong[i], one, two); });
    if (message) {
      EXPECT_NE(message->find(add_one_->name()), std::string::npos) << "no kernel name in: " << *message;
    }
  }
  expect_queue_works(*q);

  std::array<uint64_t, 1> one_buf{b_->va()};
  std::array<uint64_t, 2> two_bufs{b_->va(), a_->va()};
  std::array<uint32_t, 1> one_val{2};
  std::array<uint32_t, 0> no_vals{};
  EXPECT_THROW((*add_one_)(one_buf, one_val, {1, 1, 1}, {2, 1, 1}), InvalidArgument);
  EXPECT_THROW((*add_one_)(two_bufs, no_vals, {1, 1, 1}, {2, 1, 1}), InvalidArgument);
}

TEST_P(ConformanceMisuse, ZeroSizeAllocation) {
  auto message = thrown_message<InvalidArgument>([&] { (void)dev().allocator().alloc(0); });
  ASSERT_TRUE(message);
  EXPECT_NE(message->find(dev().name()), std::string::npos) << "no device name in: " << *message;
  EXPECT_THROW((void)dev().allocator().alloc(0, BufferSpec{.cpu_access = true}), InvalidArgument);
}

TEST_P(ConformanceMisuse, DimsOverDeviceLimits) {
  const LaunchLimits& lim = add_one_->limits();
  struct Case {
    const char* what;
    std::array<uint32_t, 3> global, local;
  };
  std::vector<Case> cases = {
      {"zero global", {0, 1, 1}, {1, 1, 1}},
      {"zero local", {1, 1, 1}, {1, 0, 1}},
      {"local x over max_local", {1, 1, 1}, {lim.max_local[0] + 1, 1, 1}},
      {"local z over max_local", {1, 1, 1}, {1, 1, lim.max_local[2] + 1}},
      {"global y over max_global", {1, lim.max_global[1] + 1, 1}, {1, 1, 1}},
  };
  // Within every per-dim limit, over the threads-per-group limit (when the limits allow such a shape).
  uint32_t x = std::min(lim.max_local[0], lim.max_threads_per_group);
  uint32_t y = std::min<uint32_t>(lim.max_local[1], lim.max_threads_per_group / x + 1);
  if (uint64_t{x} * y > lim.max_threads_per_group) cases.push_back({"threads per group", {1, 1, 1}, {x, y, 1}});

  auto q = dev().compute_queue();
  wait_previous(*q);
  std::array<uint64_t, 2> bufs{b_->va(), a_->va()};
  std::array<uint32_t, 1> vals{2};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Dims global{c.global[0], c.global[1], c.global[2]}, local{c.local[0], c.local[1], c.local[2]};
    EXPECT_THROW(q->exec(*add_one_, good_args(), global, local), InvalidArgument);
    EXPECT_THROW(add_one_->check_launch(2, 1, c.global.data(), c.local.data()), InvalidArgument);
    EXPECT_THROW((*add_one_)(bufs, vals, c.global, c.local), InvalidArgument);
  }
  expect_queue_works(*q);
}

// Dims that are variables can only be checked when submitted or run. Either way is conformant, but not running the
// launch silently or crashing: the submit throws InvalidArgument (and the queue then runs with good values), or the
// device reports a fault that synchronize raises. In a child process, since a fault is sticky.
TEST_P(ConformanceMisuse, PatchedDimsOverDeviceLimits) {
  struct BadDims {
    const char* what;
    uint64_t local_x, local_y;
  };
  const LaunchLimits& lim = add_one_->limits();
  const std::vector<BadDims> cases = {
      {"local x over max_local", lim.max_local[0] + 1ull, 1},
      {"local y zero", 1, 0},
      {"threads per group over the limit", lim.max_local[0], lim.max_threads_per_group / lim.max_local[0] + 1ull},
      {"local x does not fit 32 bits", (uint64_t{1} << 32) | 1, 1},
  };
  for (const BadDims& c : cases) {
    SCOPED_TRACE(c.what);
    std::function<void(ChildReport&)> body = [&](ChildReport& r) {
      auto q = dev().compute_queue();
      q->wait(dev().timeline_signal(), Var{2} - 1);
      q->exec(*add_one_, good_args(), Dims{1u, 1u, 1u}, Dims{Var{0}, Var{1}, 1u});
      q->signal(dev().timeline_signal(), Var{2});
      uint64_t value = dev().timeline_value();
      std::array<uint64_t, 3> bad{c.local_x, c.local_y, value};
      try {
        q->submit(bad);
      } catch (const InvalidArgument& e) {
        r.note(std::string("rejected at submit: ") + e.what());
        value = hcq::test::take_timeline_value(dev());
        std::array<uint64_t, 3> good{2, 1, value};
        q->submit(good);
        dev().synchronize();
        r.check(dev().timeline_signal().value() >= value, "the queue runs with good dims after a rejected submit");
        return;
      }
      hcq::test::take_timeline_value(dev());  // it was submitted: the timeline protocol goes on
      try {
        dev().synchronize();
        r.check(false, "the launch with bad dims ran, or was dropped, without any error");
      } catch (const DeviceFault& e) {
        r.note(std::string("device fault: ") + e.what());
        r.check(dev().has_error(), "the fault is sticky");
      }
    };
    HCQ_CONFORMANCE_EXPECT_IN_CHILD(body);
  }
}

TEST_P(ConformanceMisuse, ExecOnCopyQueue) {
  if (!has_copy_queue()) GTEST_SKIP() << dev().name() << " has no copy queue";
  auto q = dev().copy_queue();
  wait_previous(*q);
  EXPECT_THROW(q->exec(*add_one_, good_args(), Dims{1u, 1u, 1u}, Dims{2u, 1u, 1u}), InvalidArgument);
  expect_queue_works(*q);
}

TEST_P(ConformanceMisuse, SubmitWithoutAVariable) {
  auto q = dev().compute_queue();
  q->wait(dev().timeline_signal(), Var{0} - 1);
  q->write(b_->va(), Var{1}, Width::b32);
  q->signal(dev().timeline_signal(), Var{0});
  uint64_t value = dev().timeline_value();
  std::array<uint64_t, 1> short_vars{value};
  (void)thrown_message<InvalidArgument>([&] { q->submit(short_vars); });
  EXPECT_THROW(q->submit(), InvalidArgument);

  value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 2> vars{value, 0x600d};
  q->submit(vars);
  wait_timeline(value);
  EXPECT_EQ(b_->download_as<uint32_t>(1)[0], 0x600du);
}

TEST_P(ConformanceMisuse, AddAfterSubmit) {
  auto q = dev().compute_queue();
  wait_previous(*q);
  expect_queue_works(*q);
  EXPECT_THROW(q->memory_barrier(), InvalidArgument) << "the first submit finalizes a queue";
  EXPECT_THROW(q->bind(), InvalidArgument) << "bind after submit";
}

TEST_P(ConformanceMisuse, LoadUnknownKernelOrBadImage) {
  std::vector<uint8_t> binary = dev().compiler().compile_cached(kernels().add_one_f32.source);
  EXPECT_THROW(dev().load_program("no_such_kernel", binary), InvalidArgument);

  std::vector<uint8_t> garbage(256, 0xab);
  EXPECT_THROW(dev().load_program(kernels().add_one_f32.name, garbage), CompileError);
  EXPECT_THROW(dev().load_program(kernels().add_one_f32.name, std::span<const uint8_t>()), CompileError);
  for (size_t keep : {size_t{4}, size_t{64}, binary.size() / 2, binary.size() - 1}) {
    SCOPED_TRACE(testing::Message() << "image truncated to " << keep << " of " << binary.size() << " bytes");
    std::span<const uint8_t> truncated(binary.data(), keep);
    EXPECT_THROW(dev().load_program(kernels().add_one_f32.name, truncated), CompileError);
  }
}

TEST_P(ConformanceMisuse, CompileErrorHasDiagnostics) {
  auto message = thrown_message<CompileError>([&] { dev().compiler().compile("this is not a kernel @@@"); });
  ASSERT_TRUE(message);
  EXPECT_GT(message->size(), 20u) << "the compiler's diagnostics belong in the message: " << *message;
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceMisuse);

// Device names are not per device: one plain suite.
TEST(ConformanceRegistry, UnknownDeviceName) {
  for (const char* name : {"NO-SUCH-DEVICE", "NOPE:0", "CPU:abc", "CPU:-1"}) {
    SCOPED_TRACE(name);
    auto message = thrown_message<InvalidArgument>([&] { open_device(name); });
    if (!message) continue;
    EXPECT_NE(message->find("CPU"), std::string::npos) << "the message lists the known names: " << *message;
  }
  EXPECT_THROW(Buffer(open_device("NO-SUCH-DEVICE"), 16), InvalidArgument);
}

TEST(ConformanceRegistry, ConformanceDevicesOpen) {
  for (const auto& d : conformance_devices()) {
    SCOPED_TRACE(d.name);
    Device& dev = open_device(d.name);
    EXPECT_EQ(&open_device(d.name), &dev) << "a device opens once";
    DeviceInfo info = dev.info();
    EXPECT_EQ(info.name, d.name);
    EXPECT_GT(info.compute_queues, 0u);
    EXPECT_NO_THROW((void)device_kind(info.interface)) << "devices.cpp has no kernels for " << info.interface;
  }
}

}  // namespace
}  // namespace hcq::conformance
