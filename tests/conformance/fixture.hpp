// The base of every conformance suite: one device per test parameter, opened through the registry, with helpers for
// the timeline protocol, device memory and kernels. Each suite derives its own fixture (named Conformance<Topic>)
// and instantiates it with HCQ_CONFORMANCE_INSTANTIATE, so `--gtest_filter=Conformance*` selects all of them.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <typeinfo>
#include <vector>

#include "common/timeline.hpp"
#include "conformance/devices.hpp"
#include "hcq/hcq.hpp"

namespace hcq::conformance {

using namespace std::chrono_literals;

// A short timeout for waits that are expected to time out (the queue is provably blocked, so the outcome does not
// depend on how long we wait; this only bounds the test's run time).
inline constexpr std::chrono::milliseconds kBlockedWait = 30ms;

// One device allocation, freed when this goes. Reads and writes go through the device's allocator, so they work
// whether or not the memory is mapped on the host.
class DeviceMemory {
 public:
  DeviceMemory(Device& dev, uint64_t size, BufferSpec spec = {});
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  uint64_t va() const { return alloc_.va; }
  uint64_t size() const { return alloc_.size; }
  const Allocation& allocation() const { return alloc_; }
  // The host mapping; the test fails (throws std::logic_error) if the memory is not host-mapped.
  std::byte* host() const;

  void upload(std::span<const std::byte> bytes, uint64_t offset = 0);
  std::vector<std::byte> download(uint64_t offset = 0, std::optional<uint64_t> size = {}) const;
  template <class T>
  void upload_as(const std::vector<T>& values, uint64_t offset = 0) {
    upload(std::as_bytes(std::span<const T>(values)), offset);
  }
  template <class T>
  std::vector<T> download_as(size_t count, uint64_t offset = 0) const {
    std::vector<T> out(count);
    device_->allocator().copyout(std::as_writable_bytes(std::span<T>(out)), alloc_, offset);
    return out;
  }

 private:
  Device* device_;
  Allocation alloc_;
};

class ConformanceFixture : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;

  Device& dev() const { return *dev_; }
  const DeviceKind& kind() const { return *kind_; }
  const ConformanceKernels& kernels() const { return kind_->kernels; }
  // Compiles (cached) and loads a kernel on dev() or another device of the same kind.
  std::unique_ptr<Program> load(const KernelSource& k) const { return load_on(dev(), k); }
  static std::unique_ptr<Program> load_on(Device& d, const KernelSource& k);

  // The queue kinds dev() has (a device may have no copy queue).
  std::vector<QueueKind> queue_kinds() const;
  bool has_copy_queue() const { return dev().info().copy_queues > 0; }

  // Timeline protocol helpers. wait_previous: q.wait(timeline, timeline_value - 1). signal_next: q.signal(timeline,
  // hcq::test::take_timeline_value()), returning the value signalled, for wait_timeline().
  static void wait_previous(Device& d, HWQueue& q) { q.wait(d.timeline_signal(), d.timeline_value() - 1); }
  static uint64_t signal_next(Device& d, HWQueue& q) {
    uint64_t value = hcq::test::take_timeline_value(d);
    q.signal(d.timeline_signal(), value);
    return value;
  }
  static void wait_timeline(Device& d, uint64_t value) { d.wait_signal(d.timeline_signal(), value); }
  void wait_previous(HWQueue& q) const { wait_previous(dev(), q); }
  uint64_t signal_next(HWQueue& q) const { return signal_next(dev(), q); }
  void wait_timeline(uint64_t value) const { wait_timeline(dev(), value); }

  // True when the timeline signal has not reached `value` and a short wait for it times out: the queue that
  // signals it is blocked. (A wait that cannot succeed, so no timing is asserted.)
  bool timeline_blocked_before(uint64_t value) const;

 private:
  Device* dev_ = nullptr;
  const DeviceKind* kind_ = nullptr;
};

// Runs fn, expecting it to throw exactly an Expected (or a subclass). Returns the message, or records a failure that
// says what happened instead and returns nullopt.
template <class Expected, class Fn>
std::optional<std::string> thrown_message(Fn&& fn) {
  try {
    fn();
  } catch (const Expected& e) {
    return std::string(e.what());
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected " << typeid(Expected).name() << ", but got " << typeid(e).name() << ": " << e.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "expected " << typeid(Expected).name() << ", but nothing was thrown";
  return std::nullopt;
}

// Findings of a check run in a child process (see HCQ_CONFORMANCE_EXPECT_IN_CHILD).
class ChildReport {
 public:
  void check(bool condition, const std::string& what);
  void note(const std::string& text) { text_ += text + "\n"; }
  bool ok() const { return ok_; }
  const std::string& text() const { return text_; }

 private:
  bool ok_ = true;
  std::string text_;
};

// The child's side: runs body, prints its report and "child checks passed" (or "failed") to stderr, and exits
// without exit-time teardown (a device left faulted may not close quietly, and that is not what is under test).
[[noreturn]] void run_child(const std::function<void(ChildReport&)>& body);

// True if `message` shows `value` in decimal or as hex().
bool mentions_value(const std::string& message, uint64_t value);

// "CPU:0" -> "CPU_0": gtest parameter names must be alphanumeric.
std::string device_param_name(const ::testing::TestParamInfo<std::string>& info);

}  // namespace hcq::conformance

// The instantiation prefix is "Conformance" too, so full names read "Conformance/ConformanceSignal.Basic/CPU_0".
#define HCQ_CONFORMANCE_INSTANTIATE(Suite)                                                                          \
  INSTANTIATE_TEST_SUITE_P(Conformance, Suite, ::testing::ValuesIn(::hcq::conformance::conformance_device_names()), \
                           ::hcq::conformance::device_param_name)

// Runs a check that may leave its device hung or with a sticky error in a child process (a gtest death test,
// re-executed so the child starts with fresh devices and the parent's environment), keeping this process's devices
// clean. `body` is a std::function<void(ChildReport&)>; the test fails unless the child reports every check passed.
#define HCQ_CONFORMANCE_EXPECT_IN_CHILD(body)                                                              \
  do {                                                                                                     \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                                                        \
    EXPECT_EXIT(::hcq::conformance::run_child(body), ::testing::ExitedWithCode(0), "child checks passed"); \
  } while (0)
