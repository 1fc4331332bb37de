#include "conformance/fixture.hpp"

#include <cctype>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace hcq::conformance {

DeviceMemory::DeviceMemory(Device& dev, uint64_t size, BufferSpec spec)
    : device_(&dev), alloc_(dev.allocator().alloc(size, spec)) {}

DeviceMemory::~DeviceMemory() {
  try {
    device_->allocator().free(alloc_);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "freeing " << alloc_.size << " bytes at " << hex(alloc_.va) << " on " << device_->name()
                  << " threw: " << e.what();
  }
}

std::byte* DeviceMemory::host() const {
  auto* p = static_cast<std::byte*>(alloc_.host_ptr());
  if (p == nullptr)
    throw std::logic_error(
        cat("conformance: allocation at ", hex(alloc_.va), " on ", device_->name(), " is not host-mapped"));
  return p;
}

void DeviceMemory::upload(std::span<const std::byte> bytes, uint64_t offset) {
  device_->allocator().copyin(alloc_, offset, bytes);
}

std::vector<std::byte> DeviceMemory::download(uint64_t offset, std::optional<uint64_t> size) const {
  std::vector<std::byte> out(size.value_or(alloc_.size - offset));
  device_->allocator().copyout(out, alloc_, offset);
  return out;
}

void ConformanceFixture::SetUp() {
  dev_ = &open_device(GetParam());
  kind_ = &device_kind(dev_->info().interface);
  // Every test starts on an idle device, as tinygrad's setUp does: nothing of a previous test is in flight.
  dev_->synchronize();
}

void ConformanceFixture::TearDown() {
  if (dev_ == nullptr) return;
  // A test must leave its device usable for the next: idle, and without a sticky error.
  EXPECT_NO_THROW(dev_->synchronize()) << "device " << dev_->name() << " after the test";
  EXPECT_FALSE(dev_->has_error()) << "device " << dev_->name() << " has a sticky error after the test";
}

std::unique_ptr<Program> ConformanceFixture::load_on(Device& d, const KernelSource& k) {
  // Binaries are memoized per (compiler, source) for the process: every test loads the same few kernels.
  static std::mutex mu;
  static std::map<std::pair<std::string, std::string>, std::vector<uint8_t>> binaries;
  Compiler& compiler = d.compiler();
  std::pair<std::string, std::string> key{compiler.identity() + "/" + compiler.target() + "/" + compiler.options(),
                                          k.source};
  std::vector<uint8_t> binary;
  {
    std::lock_guard lock(mu);
    auto it = binaries.find(key);
    if (it == binaries.end()) it = binaries.emplace(key, compiler.compile_cached(k.source)).first;
    binary = it->second;
  }
  return d.load_program(k.name, binary);
}

std::vector<QueueKind> ConformanceFixture::queue_kinds() const {
  DeviceInfo info = dev().info();
  std::vector<QueueKind> kinds;
  if (info.compute_queues > 0) kinds.push_back(QueueKind::compute);
  if (info.copy_queues > 0) kinds.push_back(QueueKind::copy);
  return kinds;
}

bool ConformanceFixture::timeline_blocked_before(uint64_t value) const {
  const Signal& timeline = dev().timeline_signal();
  if (timeline.value() >= value) return false;
  try {
    timeline.wait(value, kBlockedWait);
  } catch (const TimeoutError&) {
    return timeline.value() < value;
  }
  return false;
}

void ChildReport::check(bool condition, const std::string& what) {
  if (condition) return;
  ok_ = false;
  text_ += "FAILED: " + what + "\n";
}

void run_child(const std::function<void(ChildReport&)>& body) {
  ChildReport report;
  try {
    body(report);
  } catch (const std::exception& e) {
    report.check(false, std::string("unexpected exception: ") + e.what());
  } catch (...) {
    report.check(false, "unexpected exception of unknown type");
  }
  std::cerr << report.text() << (report.ok() ? "child checks passed\n" : "child checks failed\n") << std::flush;
  std::_Exit(report.ok() ? 0 : 1);
}

bool mentions_value(const std::string& message, uint64_t value) {
  return message.find(std::to_string(value)) != std::string::npos || message.find(hex(value)) != std::string::npos;
}

std::string device_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0) c = '_';
  return name;
}

}  // namespace hcq::conformance
