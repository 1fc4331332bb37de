// Conformance: copies on the copy queue. Small, 64 MiB, patched source/destination, 256 one-byte copies from
// host memory (direct, and through an intermediate device buffer).
#include <cstring>

#include "common/timeline.hpp"
#include "conformance/fixture.hpp"

namespace hcq::conformance {
namespace {

constexpr BufferSpec kDeviceSpec{.nolru = true};
constexpr BufferSpec kHostSpec{.host = true, .nolru = true};

class ConformanceCopy : public ConformanceFixture {
 protected:
  void SetUp() override {
    ConformanceFixture::SetUp();
    if (!has_copy_queue()) GTEST_SKIP() << dev().name() << " has no copy queue";
  }

  // Fills host-mapped memory with a position-dependent pattern, so a misplaced or partial copy shows.
  static void fill_pattern(std::byte* p, uint64_t size, uint64_t salt) {
    uint64_t words = size / 8;
    auto* w = reinterpret_cast<uint64_t*>(p);
    for (uint64_t i = 0; i < words; ++i) w[i] = (i * 0x9e3779b97f4a7c15ull) ^ salt;
    for (uint64_t i = words * 8; i < size; ++i) p[i] = static_cast<std::byte>(i ^ salt);
  }
};

TEST_P(ConformanceCopy, SmallCopy) {
  DeviceMemory a(dev(), 8), b(dev(), 8);
  a.upload_as<float>({0.0f, 1.0f});
  b.upload_as<float>({0.0f, 0.0f});
  auto q = dev().copy_queue();
  wait_previous(*q);
  q->copy(b.va(), a.va(), 8);
  uint64_t value = signal_next(*q);
  q->submit();
  wait_timeline(value);
  EXPECT_EQ(b.download_as<float>(2), (std::vector<float>{0.0f, 1.0f}));
}

// A copy that starts and ends off any alignment leaves its neighbours alone.
TEST_P(ConformanceCopy, UnalignedCopyKeepsNeighbours) {
  constexpr uint64_t kSize = 1000;
  DeviceMemory src(dev(), kSize, kHostSpec), dst(dev(), kSize);
  fill_pattern(src.host(), kSize, 0x55);
  dst.upload(std::vector<std::byte>(kSize, std::byte{0xEE}));
  auto q = dev().copy_queue();
  wait_previous(*q);
  q->copy(dst.va() + 3, src.va() + 5, 777);
  uint64_t value = signal_next(*q);
  q->submit();
  wait_timeline(value);
  auto got = dst.download();
  for (uint64_t i = 0; i < kSize; ++i) {
    std::byte want = (i >= 3 && i < 3 + 777) ? src.host()[i + 2] : std::byte{0xEE};
    ASSERT_EQ(got[i], want) << "at byte " << i;
  }
}

TEST_P(ConformanceCopy, Copy64MiB) {
  constexpr uint64_t kSize = 64ull << 20;
  DeviceMemory dst(dev(), kSize, kDeviceSpec), src(dev(), kSize, kHostSpec);
  fill_pattern(src.host(), kSize, 0x1234);
  auto q = dev().copy_queue();
  wait_previous(*q);
  q->copy(dst.va(), src.va(), kSize);
  uint64_t value = signal_next(*q);
  q->submit();
  wait_timeline(value);
  auto got = dst.download();
  ASSERT_EQ(got.size(), kSize);
  EXPECT_EQ(std::memcmp(got.data(), src.host(), kSize), 0) << "the 64 MiB copy differs from its source";
}

// Source and destination are variables (tinygrad's test_update_copy), resubmitted with other buffers.
TEST_P(ConformanceCopy, PatchedCopy) {
  DeviceMemory a(dev(), 8), b(dev(), 8), c(dev(), 8);
  a.upload_as<uint32_t>({11, 22});
  b.upload_as<uint32_t>({0, 0});
  c.upload_as<uint32_t>({33, 44});
  auto q = dev().copy_queue();
  q->wait(dev().timeline_signal(), Var{2} - 1);
  q->copy(Var{0}, Var{1}, 8);
  q->signal(dev().timeline_signal(), Var{2});

  uint64_t value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 3> a_to_b{b.va(), a.va(), value};
  q->submit(a_to_b);
  wait_timeline(value);
  EXPECT_EQ(b.download_as<uint32_t>(2), (std::vector<uint32_t>{11, 22}));

  value = hcq::test::take_timeline_value(dev());
  std::array<uint64_t, 3> c_to_a{a.va(), c.va(), value};
  q->submit(c_to_a);
  wait_timeline(value);
  EXPECT_EQ(a.download_as<uint32_t>(2), (std::vector<uint32_t>{33, 44}));
  EXPECT_EQ(b.download_as<uint32_t>(2), (std::vector<uint32_t>{11, 22})) << "the old destination was written again";
}

// tinygrad's test_update_copy_long: a 64 MiB copy whose addresses are variables.
TEST_P(ConformanceCopy, PatchedCopy64MiB) {
  constexpr uint64_t kSize = 64ull << 20;
  DeviceMemory dst(dev(), kSize, kDeviceSpec), src(dev(), kSize, kHostSpec);
  std::memset(src.host(), 1, kSize);
  auto q = dev().copy_queue();
  wait_previous(*q);
  q->copy(Var{0}, Var{1}, kSize);
  uint64_t value = signal_next(*q);
  std::array<uint64_t, 2> vars{dst.va(), src.va()};
  q->submit(vars);
  wait_timeline(value);
  auto got = dst.download();
  auto* words = reinterpret_cast<const uint64_t*>(got.data());
  for (uint64_t i = 0; i < kSize / 8; ++i)
    ASSERT_EQ(words[i], 0x0101010101010101ull) << "offset " << i * 8 << " differs: not all copied";
}

// 256 one-byte copies from host memory the host rewrites before each submission.
TEST_P(ConformanceCopy, SmallCopiesFromHostBuffer) {
  DeviceMemory dst(dev(), 1, kDeviceSpec), src(dev(), 1, kHostSpec);
  for (int i = 0; i < 256; ++i) {
    src.host()[0] = static_cast<std::byte>(i);
    auto q = dev().copy_queue();
    wait_previous(*q);
    q->copy(dst.va(), src.va(), 1);
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    ASSERT_EQ(dst.download()[0], static_cast<std::byte>(i)) << "copy " << i;
  }
}

// As above, through an intermediate device buffer: two copies in one queue run in order.
TEST_P(ConformanceCopy, SmallCopiesFromHostBufferIntercopy) {
  DeviceMemory mid(dev(), 1, kDeviceSpec), dst(dev(), 1, kDeviceSpec), src(dev(), 1, kHostSpec);
  for (int i = 0; i < 256; ++i) {
    src.host()[0] = static_cast<std::byte>(i);
    auto q = dev().copy_queue();
    wait_previous(*q);
    q->copy(mid.va(), src.va(), 1);
    q->copy(dst.va(), mid.va(), 1);
    uint64_t value = signal_next(*q);
    q->submit();
    wait_timeline(value);
    ASSERT_EQ(dst.download()[0], static_cast<std::byte>(i)) << "copy " << i;
  }
}

HCQ_CONFORMANCE_INSTANTIATE(ConformanceCopy);

}  // namespace
}  // namespace hcq::conformance
