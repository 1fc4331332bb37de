// Buffer on the CPU device: lazy allocation, views sharing a base, copies in, out and across devices, and the range
// checks. The copies go through the HCQ allocator's staging ring, so sizes here straddle its chunks.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <vector>

#include "common/axpb_source.hpp"
#include "hcq/allocator.hpp"
#include "hcq/buffer.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/program.hpp"
#include "hcq/registry.hpp"

namespace hcq {
namespace {

std::vector<std::byte> pattern(size_t n, uint32_t seed) {
  std::vector<std::byte> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

std::vector<std::byte> read_all(Buffer& b) {
  std::vector<std::byte> out(b.size());
  b.copyout(std::span(out));
  return out;
}

// Wraps around the staging ring and ends in a partial chunk.
const uint64_t kOddSize =
    HCQAllocator::kDefaultOptions.staging_size * (HCQAllocator::kDefaultOptions.staging_count + 2) + 12345;

TEST(Buffer, AllocatesOnFirstUse) {
  Buffer b(open_device("CPU"), 4096);
  EXPECT_FALSE(b.allocated());
  EXPECT_EQ(b.size(), 4096u);
  EXPECT_EQ(b.device().name(), open_device("CPU").name());
  const uint64_t va = b.va();
  EXPECT_NE(va, 0u);
  EXPECT_TRUE(b.allocated());
  EXPECT_EQ(b.va(), va) << "allocated once";
}

TEST(Buffer, ViewsShareTheBaseAndSeeEachOthersWrites) {
  Buffer b(open_device("CPU"), 8192);
  Buffer v = b.view(1024, 2048);
  EXPECT_FALSE(v.allocated());
  v.ensure_allocated();
  EXPECT_TRUE(b.allocated()) << "allocating a view allocates the shared base";
  EXPECT_EQ(v.va(), b.va() + 1024);
  EXPECT_EQ(v.offset(), 1024u);

  Buffer vv = v.view(512, 256);
  EXPECT_EQ(vv.offset(), 1536u);
  EXPECT_EQ(vv.va(), b.va() + 1536);

  const auto data = pattern(256, 1);
  vv.copyin(std::span(data));
  const auto whole = read_all(b);
  EXPECT_EQ(std::memcmp(whole.data() + 1536, data.data(), data.size()), 0);

  const auto more = pattern(2048, 2);
  v.copyin(std::span(more));
  EXPECT_EQ(read_all(vv), std::vector<std::byte>(more.begin() + 512, more.begin() + 768));
}

TEST(Buffer, CopyinCopyoutRoundTripAcrossStagingChunks) {
  for (uint64_t size : {uint64_t{1}, uint64_t{4096}, HCQAllocator::kDefaultOptions.staging_size, kOddSize}) {
    SCOPED_TRACE(cat(size, " bytes"));
    Buffer b(open_device("CPU"), size);
    const auto data = pattern(size, static_cast<uint32_t>(size));
    b.copyin(std::span(data));
    EXPECT_EQ(read_all(b), data);
  }
}

TEST(Buffer, BackToBackCopyinsLandInOrder) {
  // Each copyin returns before the device copied it; the staging ring must not be refilled under a pending copy.
  Buffer b(open_device("CPU"), 64 * 1024);
  std::vector<std::byte> last;
  for (uint32_t i = 0; i < 64; ++i) {
    last = pattern(b.size(), i);
    b.copyin(std::span(last));
  }
  EXPECT_EQ(read_all(b), last);

  std::vector<Buffer> many;
  for (uint32_t i = 0; i < 16; ++i) {
    many.emplace_back(open_device("CPU"), 100'000 + i);
    const auto d = pattern(many.back().size(), 100 + i);
    many.back().copyin(std::span(d));
  }
  for (uint32_t i = 0; i < 16; ++i) EXPECT_EQ(read_all(many[i]), pattern(100'000 + i, 100 + i)) << i;
}

TEST(Buffer, CopyFromOnOneDevice) {
  Buffer a(open_device("CPU"), kOddSize), b(open_device("CPU"), kOddSize);
  const auto data = pattern(kOddSize, 7);
  a.copyin(std::span(data));
  b.copy_from(a);
  EXPECT_EQ(read_all(b), data);

  Buffer whole(open_device("CPU"), 4 * 4096);
  const auto zeros = std::vector<std::byte>(4 * 4096);
  whole.copyin(std::span(zeros));
  Buffer left = whole.view(0, 4096), right = whole.view(3 * 4096, 4096);
  Buffer source = a.view(100, 4096);
  right.copy_from(source);
  left.copy_from(right);
  const auto got = read_all(whole);
  EXPECT_EQ(std::memcmp(got.data(), data.data() + 100, 4096), 0);
  EXPECT_EQ(std::memcmp(got.data() + 3 * 4096, data.data() + 100, 4096), 0);
  EXPECT_EQ(std::memcmp(got.data() + 4096, zeros.data(), 2 * 4096), 0) << "bytes between the views untouched";
}

TEST(Buffer, CopyFromAnotherDevice) {
  Device& d0 = open_device("CPU:0");
  Device& d1 = open_device("CPU:1");
  ASSERT_NE(&d0, &d1);
  Buffer on0(d0, kOddSize), on1(d1, kOddSize);
  const auto data = pattern(kOddSize, 9);
  on0.copyin(std::span(data));
  on1.copy_from(on0);
  EXPECT_EQ(read_all(on1), data);

  // And back, into a view, with work queued behind it on the destination.
  Buffer back(d0, kOddSize + 64);
  Buffer inner = back.view(64, kOddSize);
  const auto changed = pattern(kOddSize, 10);
  on1.copyin(std::span(changed));
  inner.copy_from(on1);
  EXPECT_EQ(read_all(inner), changed);
  d0.synchronize();
  d1.synchronize();
}

TEST(Buffer, MemoryGoesBackToTheCacheWhenTheLastViewGoes) {
  Device& dev = open_device("CPU");
  dev.allocator().free_cache();
  uint64_t va = 0;
  {
    auto b = std::make_unique<Buffer>(dev, 3 * 4096 + 8);
    Buffer v = b->view(8, 4096);
    va = b->va();
    b.reset();
    EXPECT_EQ(dev.allocator().cached_bytes(), 0u) << "the view keeps the base alive";
    EXPECT_EQ(v.va(), va + 8);
  }
  EXPECT_EQ(dev.allocator().cached_bytes(), 3 * 4096u + 8);
  Buffer again(dev, 3 * 4096 + 8);
  EXPECT_EQ(again.va(), va) << "served from the allocator's cache";
}

TEST(Buffer, BadRangesThrowInvalidArgument) {
  Buffer b(open_device("CPU"), 4096);
  EXPECT_THROW(b.view(4096, 1), InvalidArgument);
  EXPECT_THROW(b.view(1, 4096), InvalidArgument);
  EXPECT_THROW(b.view(UINT64_MAX, 2), InvalidArgument);
  EXPECT_THROW(b.view(2, UINT64_MAX), InvalidArgument);
  EXPECT_NO_THROW(b.view(0, 4096));

  Buffer v = b.view(1024, 1024);
  EXPECT_THROW(v.view(512, 1024), InvalidArgument) << "a view's range is checked against the view, not the base";

  std::vector<std::byte> small(100), big(4097);
  EXPECT_THROW(b.copyin(std::span<const std::byte>(small)), InvalidArgument);
  EXPECT_THROW(b.copyin(std::span<const std::byte>(big)), InvalidArgument);
  EXPECT_THROW(b.copyout(std::span(small)), InvalidArgument);
  EXPECT_THROW(v.copyout(std::span(big)), InvalidArgument);

  Buffer other(open_device("CPU"), 2048);
  EXPECT_THROW(b.copy_from(other), InvalidArgument);
  Buffer a1 = b.view(0, 2048), a2 = b.view(1024, 2048);
  EXPECT_THROW(a1.copy_from(a2), InvalidArgument) << "overlapping views of one buffer";

  EXPECT_THROW(Buffer(open_device("CPU"), 0), InvalidArgument);
  EXPECT_THROW(Buffer(open_device("NO-SUCH-DEVICE"), 16), InvalidArgument);
}

TEST(Buffer, AllocatorRangeChecksNameTheNumbers) {
  Device& dev = open_device("CPU");
  Allocator& al = dev.allocator();
  const Allocation a = al.alloc(4096);
  std::vector<std::byte> data(100);
  try {
    al.copyin(a, 4000, std::span<const std::byte>(data));
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("100 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("offset 4000"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4096 bytes"), std::string::npos) << msg;
  }
  EXPECT_THROW(al.copyout(std::span(data), a, 4000), InvalidArgument);
  EXPECT_THROW(al.copyout(std::span(data), a, UINT64_MAX), InvalidArgument);
  EXPECT_THROW(al.transfer(a, 0, a, 4090, 100), InvalidArgument);
  EXPECT_THROW(al.transfer(a, 4090, a, 0, 100), InvalidArgument);
  al.free(a);
}

TEST(Buffer, StagingIsReusableAfterTheTimelineRestarts) {
  // Staging stamps from before a restart are far above the new timeline values; waiting for them would hang.
  Device& dev = open_device("CPU");
  Buffer b(dev, kOddSize);
  const auto before = pattern(kOddSize, 21);
  b.copyin(std::span(before));
  EXPECT_EQ(read_all(b), before);
  ASSERT_GT(dev.timeline_value(), HCQAllocator::kDefaultOptions.staging_count + 1);
  dev.synchronize();
  dev.set_timeline_value(2);
  const auto after = pattern(kOddSize, 22);
  b.copyin(std::span(after));
  EXPECT_EQ(read_all(b), after);
  EXPECT_GT(dev.timeline_value(), 2u);
}

TEST(Buffer, TypedCopies) {
  Buffer b(open_device("CPU"), 1000 * sizeof(float));
  std::vector<float> in(1000);
  std::iota(in.begin(), in.end(), 0.5f);
  b.copyin(std::span<const float>(in));
  std::vector<float> out(1000);
  b.copyout(std::span<float>(out));
  EXPECT_EQ(in, out);
}

// A buffer and a program keep the device the registry opened: closing every device (as the registry does at exit,
// possibly before a cache of buffers is destroyed) leaves them usable, and the device closes when the last goes.
TEST(Buffer, KeepsItsDeviceOpenAfterCloseAllDevices) {
  Device& dev = open_device("CPU");
  const std::weak_ptr<Device> watch = dev.weak_from_this();
  ASSERT_FALSE(watch.expired()) << "the registry shares its devices";
  auto in = std::make_unique<Buffer>(dev, 64 * sizeof(float));
  auto out = std::make_unique<Buffer>(dev, 64 * sizeof(float));
  std::vector<float> values(64);
  std::iota(values.begin(), values.end(), 1.0f);
  in->copyin(std::span<const float>(values));
  std::unique_ptr<Program> axpb = dev.load_program("axpb", dev.compiler().compile_cached(test::kAxpbSource));

  close_all_devices();
  ASSERT_FALSE(watch.expired()) << "the buffers and the program keep CPU:0 open";
  EXPECT_NE(&open_device("CPU"), &dev) << "the registry opens a new CPU:0";

  const Buffer* bufs[] = {out.get(), in.get()};
  const uint32_t vals[] = {64, 2, 1};
  axpb->launch(bufs, vals, {1, 1, 1}, {64, 1, 1}).wait();
  std::vector<float> got(64);
  out->copyout(std::span<float>(got));
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], values[i] * 2 + 1) << "element " << i;

  in.reset();
  axpb.reset();
  EXPECT_FALSE(watch.expired()) << "one buffer still holds it";
  out.reset();
  EXPECT_TRUE(watch.expired()) << "the last holder closed it";
}

}  // namespace
}  // namespace hcq
