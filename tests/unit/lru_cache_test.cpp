// The Allocator's LRU cache, against a fake device whose memory is plain host memory and whose allocation calls are
// counted (and can be made to fail).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "hcq/allocator.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"

namespace hcq {
namespace {

// Copies are plain memcpy: the cache under test does not care how bytes move.
class HostCopyAllocator : public Allocator {
 public:
  using Allocator::Allocator;
  void copyin(const Allocation& dst, uint64_t offset, std::span<const std::byte> src) override {
    std::memcpy(static_cast<std::byte*>(dst.host_ptr()) + offset, src.data(), src.size());
  }
  void copyout(std::span<std::byte> dst, const Allocation& src, uint64_t offset) override {
    std::memcpy(dst.data(), static_cast<const std::byte*>(src.host_ptr()) + offset, dst.size());
  }
  Completion transfer(const Allocation& dst, uint64_t dst_off, const Allocation& src, uint64_t src_off,
                      uint64_t size) override {
    std::memcpy(static_cast<std::byte*>(dst.host_ptr()) + dst_off,
                static_cast<const std::byte*>(src.host_ptr()) + src_off, size);
    return Completion();
  }
};

class FakeDevice : public Device {
 public:
  explicit FakeDevice(uint64_t capacity = 1ull << 30) : Device("FAKE:0"), capacity_(capacity) {
    init_runtime(std::make_unique<HostCopyAllocator>(*this));
  }
  ~FakeDevice() override { shutdown_runtime(); }

  DeviceInfo info() const override {
    DeviceInfo i;
    i.name = "FAKE:0";
    i.interface = "fake";
    return i;
  }
  std::unique_ptr<HWQueue> new_queue(QueueKind) override { throw UnsupportedDriver("FAKE:0 has no queues"); }
  Compiler& compiler() override { throw UnsupportedDriver("FAKE:0 has no compiler"); }
  std::unique_ptr<Program> load_program(const std::string&, std::span<const uint8_t>) override {
    throw UnsupportedDriver("FAKE:0 loads no programs");
  }
  double ticks_to_us(uint64_t ticks) const override { return static_cast<double>(ticks); }

  Allocation alloc_memory(uint64_t size, const BufferSpec& spec) override {
    std::lock_guard lock(mu_);
    ++alloc_calls;
    if (fail_next > 0) {
      --fail_next;
      throw OutOfMemory("FAKE:0: told to fail");
    }
    if (spec.external_ptr != nullptr) {
      return {.va = reinterpret_cast<uint64_t>(spec.external_ptr),
              .size = size,
              .spec = spec,
              .device = this,
              .host_mapped = true};
    }
    if (bytes_in_use() + size > capacity_) {
      throw OutOfMemory(cat("FAKE:0: ", size, " bytes do not fit (", bytes_in_use(), " of ", capacity_, " used)"));
    }
    const uint64_t rounded = (size + 4095) & ~uint64_t{4095};
    HostBlock block(static_cast<std::byte*>(std::aligned_alloc(4096, rounded)));
    if (!block) throw OutOfMemory("FAKE:0: host aligned_alloc failed");
    if (spec.zero) std::memset(block.get(), 0, rounded);
    const auto va = reinterpret_cast<uint64_t>(block.get());
    blocks_.emplace(va, std::move(block));
    note_alloc(static_cast<int64_t>(size));
    return {.va = va, .size = size, .spec = spec, .device = this, .host_mapped = true};
  }

  void free_memory(const Allocation& a) override {
    std::lock_guard lock(mu_);
    ++free_calls;
    if (a.spec.external_ptr != nullptr) return;
    ASSERT_EQ(blocks_.erase(a.va), 1u) << "freed an address the fake never handed out: " << hex(a.va);
    note_alloc(-static_cast<int64_t>(a.size));
  }

  int alloc_calls = 0;
  int free_calls = 0;
  int fail_next = 0;

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const { std::free(p); }
  };
  using HostBlock = std::unique_ptr<std::byte, FreeDeleter>;
  std::mutex mu_;
  uint64_t capacity_;
  std::map<uint64_t, HostBlock> blocks_;
};

TEST(LruCache, ZeroSizeIsInvalidArgument) {
  FakeDevice dev;
  EXPECT_THROW(dev.allocator().alloc(0), InvalidArgument);
  EXPECT_EQ(dev.alloc_calls, 0);
}

TEST(LruCache, FreedAllocationIsReusedForTheSameSizeAndSpec) {
  FakeDevice dev;
  Allocator& al = dev.allocator();
  const Allocation a = al.alloc(4096);
  al.free(a);
  EXPECT_EQ(al.cached_bytes(), 4096u);
  EXPECT_EQ(dev.free_calls, 0);

  const Allocation b = al.alloc(4096);
  EXPECT_EQ(b.va, a.va);
  EXPECT_EQ(dev.alloc_calls, 1);
  EXPECT_EQ(al.cached_bytes(), 0u);
  al.free(b);
}

TEST(LruCache, OtherSizeOrSpecMisses) {
  FakeDevice dev;
  Allocator& al = dev.allocator();
  const Allocation a = al.alloc(4096);
  al.free(a);

  const Allocation bigger = al.alloc(8192);
  const Allocation host_visible = al.alloc(4096, {.cpu_access = true});
  const Allocation host = al.alloc(4096, {.host = true});
  EXPECT_EQ(dev.alloc_calls, 4);
  EXPECT_NE(bigger.va, a.va);
  EXPECT_NE(host_visible.va, a.va);
  EXPECT_NE(host.va, a.va);
  EXPECT_EQ(al.cached_bytes(), 4096u);  // the first one is still waiting for a (4096, {}) request

  const Allocation again = al.alloc(4096);
  EXPECT_EQ(again.va, a.va);
  EXPECT_EQ(dev.alloc_calls, 4);
  for (const Allocation& x : {bigger, host_visible, host, again}) al.free(x);
}

TEST(LruCache, NolruZeroAndExternalAreNeverCached) {
  alignas(4096) static std::byte external[4096];
  const BufferSpec specs[] = {{.nolru = true}, {.zero = true}, {.external_ptr = external}};
  for (const BufferSpec& spec : specs) {
    SCOPED_TRACE(to_string(spec));
    FakeDevice dev;
    Allocator& al = dev.allocator();
    const Allocation a = al.alloc(4096, spec);
    al.free(a);
    EXPECT_EQ(dev.free_calls, 1);
    EXPECT_EQ(al.cached_bytes(), 0u);
    const Allocation b = al.alloc(4096, spec);
    EXPECT_EQ(dev.alloc_calls, 2);
    al.free(b);
    EXPECT_EQ(dev.free_calls, 2);
  }
}

TEST(LruCache, ZeroSpecReallyIsZeroAfterAnotherUser) {
  FakeDevice dev;
  Allocator& al = dev.allocator();
  const Allocation dirty = al.alloc(4096);
  std::memset(dirty.host_ptr(), 0xab, 4096);
  al.free(dirty);
  const Allocation zeroed = al.alloc(4096, {.zero = true});
  const auto* p = static_cast<const unsigned char*>(zeroed.host_ptr());
  for (size_t i = 0; i < 4096; ++i) ASSERT_EQ(p[i], 0) << "byte " << i;
  al.free(zeroed);
}

TEST(LruCache, OutOfMemoryEmptiesTheCacheAndRetriesOnce) {
  FakeDevice dev(3 * 4096);
  Allocator& al = dev.allocator();
  const Allocation a = al.alloc(2 * 4096);
  al.free(a);  // cached: the device still counts it in use
  EXPECT_EQ(dev.bytes_in_use(), 2 * 4096u);

  // Another key, so the cache cannot serve it; it only fits once the cached block is really freed.
  const Allocation b = al.alloc(2 * 4096, {.cpu_access = true});
  EXPECT_EQ(dev.alloc_calls, 3);  // a, then b failing, then b again
  EXPECT_EQ(dev.free_calls, 1);
  EXPECT_EQ(al.cached_bytes(), 0u);
  EXPECT_EQ(dev.bytes_in_use(), 2 * 4096u);
  al.free(b);
}

TEST(LruCache, SecondFailureThrowsOutOfMemoryNamingDeviceSizeAndBytesInUse) {
  FakeDevice dev(4 * 4096);
  Allocator& al = dev.allocator();
  const Allocation held = al.alloc(3 * 4096);
  const Allocation cached = al.alloc(4096);
  al.free(cached);
  const int calls_before = dev.alloc_calls;
  try {
    al.alloc(12345);
    FAIL() << "expected OutOfMemory";
  } catch (const OutOfMemory& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("FAKE:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("12345 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cat(3 * 4096, " bytes in use")), std::string::npos) << msg;
  }
  EXPECT_EQ(dev.alloc_calls - calls_before, 2) << "exactly one retry";
  EXPECT_EQ(al.cached_bytes(), 0u) << "the cache was emptied before the retry";
  EXPECT_EQ(dev.free_calls, 1);
  al.free(held);
}

TEST(LruCache, InjectedFailureIsRetriedAfterFreeingTheCache) {
  FakeDevice dev;
  Allocator& al = dev.allocator();
  al.free(al.alloc(4096));
  dev.fail_next = 1;
  const Allocation a = al.alloc(8192);
  EXPECT_EQ(dev.free_calls, 1);
  EXPECT_EQ(a.size, 8192u);
  al.free(a);

  dev.fail_next = 2;
  EXPECT_THROW(al.alloc(8192, {.nolru = true}), OutOfMemory);
}

TEST(LruCache, FreeCacheReallyFreesEverything) {
  FakeDevice dev;
  Allocator& al = dev.allocator();
  std::vector<Allocation> all;
  for (uint64_t size : {4096u, 4096u, 8192u, 100u}) all.push_back(al.alloc(size));
  for (const Allocation& a : all) al.free(a);
  EXPECT_EQ(al.cached_bytes(), 4096u + 4096u + 8192u + 100u);
  al.free_cache();
  EXPECT_EQ(al.cached_bytes(), 0u);
  EXPECT_EQ(dev.free_calls, 4);
  EXPECT_EQ(dev.bytes_in_use(), 0u);
}

TEST(LruCache, ConcurrentUsersNeverShareAnAllocation) {
  FakeDevice dev;
  Allocator& al = dev.allocator();
  std::mutex live_mu;
  std::set<uint64_t> live;
  std::atomic<int> duplicates{0};
  auto worker = [&](unsigned char tag) {
    for (int i = 0; i < 2000; ++i) {
      const uint64_t size = 4096u * (1 + i % 3);
      const Allocation a = al.alloc(size);
      {
        std::lock_guard lock(live_mu);
        if (!live.insert(a.va).second) ++duplicates;
      }
      std::memset(a.host_ptr(), tag, size);
      const auto* p = static_cast<const unsigned char*>(a.host_ptr());
      if (p[0] != tag || p[size - 1] != tag) ++duplicates;
      {
        std::lock_guard lock(live_mu);
        live.erase(a.va);
      }
      al.free(a);
    }
  };
  std::thread t1(worker, 1), t2(worker, 2);
  t1.join();
  t2.join();
  EXPECT_EQ(duplicates.load(), 0);
  EXPECT_LE(dev.alloc_calls, 6) << "steady state is served from the cache";
}

}  // namespace
}  // namespace hcq
