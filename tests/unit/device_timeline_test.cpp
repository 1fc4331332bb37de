// Device base: the timeline protocol, the sticky error, the swap to the shadow timeline, and side memory, against
// a fake device whose "hardware" is the test writing the timeline signal.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include "common/timeline.hpp"
#include "hcq/allocator.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"

namespace hcq {
namespace {

using std::chrono::milliseconds;

class FakeDevice final : public Device {
 public:
  FakeDevice() : Device("FAKE:0") { init_runtime(nullptr); }
  ~FakeDevice() override { shutdown_runtime(); }

  DeviceInfo info() const override { return {name(), "fake", "none", 0, 1, 1, "0"}; }
  std::unique_ptr<HWQueue> new_queue(QueueKind) override { throw Error("fake device: no queues"); }
  Allocation alloc_memory(uint64_t size, const BufferSpec& spec) override {
    ++allocs;
    uint64_t va = process().va.alloc(size);
    void* p = ::mmap(reinterpret_cast<void*>(va), size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) throw OutOfMemory("fake device: mmap failed");
    note_alloc(static_cast<int64_t>(size));
    last_spec = spec;
    return Allocation{va, size, spec, this, true, 0};
  }
  void free_memory(const Allocation& a) override {
    process().va.free(a.va, a.size);
    note_alloc(-static_cast<int64_t>(a.size));
  }
  Compiler& compiler() override { throw Error("fake device: no compiler"); }
  std::unique_ptr<Program> load_program(const std::string&, std::span<const uint8_t>) override {
    throw Error("fake device: no programs");
  }
  double ticks_to_us(uint64_t ticks) const override { return static_cast<double>(ticks); }
  std::string describe_state() const override { return "fake ring stopped at 7"; }

  // What a submission does on the "hardware": take the next value and signal it at once.
  uint64_t run_one() {
    uint64_t v = hcq::test::take_timeline_value(*this);
    timeline_signal().set_value(v);
    return v;
  }

  int allocs = 0;
  BufferSpec last_spec;
};

class DeviceTimelineTest : public ::testing::Test {
 protected:
  FakeDevice dev;
};

TEST_F(DeviceTimelineTest, StartsAtOneAndAdvances) {
  EXPECT_EQ(dev.timeline_value(), 1u);
  EXPECT_EQ(dev.timeline_signal().value(), 0u);
  EXPECT_EQ(dev.timeline_signal().label(), "FAKE:0 timeline");
  EXPECT_EQ(hcq::test::take_timeline_value(dev), 1u);
  EXPECT_EQ(hcq::test::take_timeline_value(dev), 2u);
  EXPECT_EQ(dev.timeline_value(), 3u);
  dev.timeline_signal().set_value(2);  // the "hardware" finishes both, or teardown would wait for them
}

TEST_F(DeviceTimelineTest, SynchronizeWaitsForTheLastValue) {
  dev.run_one();
  uint64_t last = hcq::test::take_timeline_value(dev);  // submitted, not yet done
  std::atomic<bool> done{false};
  std::thread hardware([&] {
    std::this_thread::sleep_for(milliseconds(10));
    done = true;
    dev.timeline_signal().set_value(last);
  });
  dev.synchronize();
  EXPECT_TRUE(done.load()) << "synchronize returned before the timeline reached " << last;
  hardware.join();
}

TEST_F(DeviceTimelineTest, SynchronizeRethrowsTheFirstErrorEveryTime) {
  dev.run_one();
  EXPECT_FALSE(dev.has_error());
  dev.record_error(std::make_exception_ptr(DeviceFault("FAKE:0: first fault")));
  dev.record_error(std::make_exception_ptr(DeviceFault("FAKE:0: an echo")));
  EXPECT_TRUE(dev.has_error());
  for (int i = 0; i < 2; ++i) {
    try {
      dev.synchronize();
      FAIL() << "no error";
    } catch (const DeviceFault& e) {
      // The first fault, never the echo; the library may append where it wrote the hang bundle.
      EXPECT_EQ(std::string_view(e.what()).substr(0, 19), "FAKE:0: first fault") << e.what();
      EXPECT_EQ(std::string_view(e.what()).find("echo"), std::string_view::npos) << e.what();
    }
  }
}

TEST_F(DeviceTimelineTest, AFaultEndsAWaitAtOnce) {
  hcq::test::take_timeline_value(dev);  // submitted, and the "hardware" will never finish it
  std::thread hardware([&] {
    std::this_thread::sleep_for(milliseconds(10));
    dev.record_error(std::make_exception_ptr(DeviceFault("FAKE:0: queue 0 faulted")));
  });
  // With a timeout of a minute, only the error check can end this wait in time for the test to finish.
  EXPECT_THROW(dev.wait_signal(dev.timeline_signal(), 1, milliseconds(60000)), DeviceFault);
  hardware.join();
}

TEST_F(DeviceTimelineTest, TimeoutNamesTheDeviceAndItsState) {
  OwnedSignal s(0, "FAKE:0 never");
  try {
    dev.wait_signal(s, 1, milliseconds(2));
    FAIL() << "no timeout";
  } catch (const TimeoutError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("FAKE:0 never"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fake ring stopped at 7"), std::string::npos) << msg;
  }
}

TEST_F(DeviceTimelineTest, SwapsToTheShadowPast2To31) {
  int resets = 0;
  dev.on_timeline_reset([&] { ++resets; });
  const uint64_t old_addr = dev.timeline_signal().addr();

  dev.set_timeline_value(uint64_t{1} << 31);  // exactly 2^31 is not past it
  EXPECT_EQ(resets, 1);                       // set_timeline_value renumbers too
  EXPECT_EQ(dev.timeline_signal().value(), (uint64_t{1} << 31) - 1);
  dev.synchronize();
  EXPECT_EQ(dev.timeline_value(), uint64_t{1} << 31);
  EXPECT_EQ(dev.timeline_signal().addr(), old_addr);
  EXPECT_EQ(resets, 1);

  dev.run_one();  // the last submission takes the timeline past 2^31
  dev.synchronize();
  EXPECT_EQ(dev.timeline_value(), 1u);
  EXPECT_NE(dev.timeline_signal().addr(), old_addr);
  EXPECT_EQ(dev.timeline_signal().value(), 0u);
  EXPECT_EQ(dev.timeline_signal().label(), "FAKE:0 timeline shadow");
  EXPECT_EQ(resets, 2);

  // The protocol goes on from 1 on the new signal.
  EXPECT_EQ(dev.run_one(), 1u);
  dev.synchronize();
  EXPECT_EQ(dev.timeline_value(), 2u);

  // A second wrap returns to the first signal, reset to 0.
  dev.set_timeline_value((uint64_t{1} << 31) + 10);
  dev.synchronize();
  EXPECT_EQ(dev.timeline_signal().addr(), old_addr);
  EXPECT_EQ(dev.timeline_signal().value(), 0u);
  EXPECT_EQ(dev.timeline_value(), 1u);
  EXPECT_EQ(resets, 4);
}

TEST_F(DeviceTimelineTest, SetTimelineValueRejectsZero) { EXPECT_THROW(dev.set_timeline_value(0), InvalidArgument); }

TEST_F(DeviceTimelineTest, SideMemoryIsHostVisibleAndAligned) {
  SideBlock a = dev.alloc_side(100, 256);
  EXPECT_EQ(a.va % 256, 0u);
  EXPECT_GE(a.size, 100u);
  EXPECT_EQ(reinterpret_cast<uint64_t>(a.host), a.va);
  std::memset(a.host, 0xab, a.size);
  EXPECT_TRUE(dev.last_spec.cpu_access);
  EXPECT_TRUE(dev.last_spec.nolru);
  EXPECT_GE(dev.bytes_in_use(), uint64_t{1} << 20);  // one chunk of at least 1 MiB
  SideBlock b = dev.alloc_side(100);
  EXPECT_TRUE(b.va >= a.va + a.size || b.va + b.size <= a.va) << "side blocks overlap";
  EXPECT_EQ(dev.allocs, 1);  // both from the same chunk
  EXPECT_THROW(dev.alloc_side(16, 3), InvalidArgument);
  EXPECT_THROW(dev.free_side({reinterpret_cast<std::byte*>(0x1000), 0x1000, 16}), InvalidArgument);
}

// Which address a block gets is the pool's policy (a bump front, next fit); what is checked here is the contract:
// a freed block is never handed out while a submission may still read it, and it is reused once the timeline
// passed, so a steady stream of launches never grows the pool.
bool overlaps(const SideBlock& x, const SideBlock& y) { return x.va < y.va + y.size && y.va < x.va + x.size; }

TEST_F(DeviceTimelineTest, FreedSideMemoryWaitsForTheTimeline) {
  SideBlock a = dev.alloc_side(4096);
  uint64_t in_flight = hcq::test::take_timeline_value(dev);  // a submission reading `a`, not finished
  dev.free_side(a);
  std::vector<SideBlock> meanwhile;  // 2.4 MiB: more than the chunk `a` came from
  for (int i = 0; i < 600; ++i) {
    meanwhile.push_back(dev.alloc_side(4096));
    ASSERT_FALSE(overlaps(meanwhile.back(), a)) << "reused while the submission that read it may still run";
  }
  dev.timeline_signal().set_value(in_flight);  // done, but `a` was freed at timeline value in_flight + 1
  for (const SideBlock& b : meanwhile) dev.free_side(b);
  dev.run_one();  // ... and that one passes too

  const int chunks = dev.allocs;
  for (int i = 0; i < 2000; ++i) {  // 8 MiB through the pool, every block freed and its stamp passed
    SideBlock b = dev.alloc_side(4096);
    dev.free_side(b);
    dev.run_one();
  }
  EXPECT_EQ(dev.allocs, chunks) << "freed side memory not reused once the timeline passed its stamp";
}

TEST_F(DeviceTimelineTest, SynchronizeFreesAllDeferredSideMemory) {
  std::vector<SideBlock> blocks;
  for (int i = 0; i < 600; ++i) blocks.push_back(dev.alloc_side(4096));
  hcq::test::take_timeline_value(dev);  // a submission reading them, finished only by synchronize
  for (const SideBlock& b : blocks) dev.free_side(b);
  dev.timeline_signal().set_value(dev.timeline_value() - 1);  // what the hardware does before synchronize returns
  dev.synchronize();
  const int chunks = dev.allocs;
  for (int i = 0; i < 600; ++i) dev.alloc_side(4096);  // fits in the memory given back
  EXPECT_EQ(dev.allocs, chunks);
}

// Small blocks aligned wider than the bump front's ranges (4 KiB) interleaved with ordinary ones: each keeps its
// alignment and lies within side memory, and no two live blocks overlap.
TEST_F(DeviceTimelineTest, WidelyAlignedSmallSideBlocksNeitherOverlapNorStrayOutsideTheChunk) {
  std::vector<SideBlock> live;
  for (int i = 0; i < 24; ++i) {
    const uint64_t align = i % 3 == 0 ? uint64_t{1} << 20 : i % 3 == 1 ? 64 * 1024 : 64;
    const SideBlock b = dev.alloc_side(64, align);
    EXPECT_EQ(b.va % align, 0u) << "block " << i;
    for (const SideBlock& o : live) ASSERT_FALSE(overlaps(b, o)) << "block " << i << " overlaps a live block";
    live.push_back(b);
  }
  for (const SideBlock& b : live) EXPECT_NO_THROW(dev.free_side(b)) << "a block outside every side memory chunk";
}

TEST_F(DeviceTimelineTest, BigSideBlocksGetTheirOwnChunk) {
  SideBlock big = dev.alloc_side(3 << 20);
  EXPECT_GE(big.size, uint64_t{3} << 20);
  std::memset(big.host, 1, big.size);
  EXPECT_EQ(dev.allocs, 1);
}

TEST(DeviceShutdownTest, GivesSideMemoryBack) {
  // The device's timeline signals come from the process signal pool, whose pages stay for the process: make sure
  // the first page exists before counting, so that only side memory is measured.
  OwnedSignal first_page(0);
  const uint64_t va_before = process().va.bytes_in_use();
  {
    FakeDevice dev;
    dev.alloc_side(64);
    dev.alloc_side(2 << 20);
    EXPECT_GT(process().va.bytes_in_use(), va_before);
  }
  EXPECT_EQ(process().va.bytes_in_use(), va_before);
}

}  // namespace
}  // namespace hcq
