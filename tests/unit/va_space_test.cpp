// VaSpace: the unified VA reservation, carved first-fit with alignment and coalescing.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>

#include "hcq/backend/os.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/backend/sanitizer.hpp"
#include "hcq/backend/va_space.hpp"
#include "hcq/error.hpp"

#if HCQ_ADDRESS_SANITIZER
#include <sanitizer/asan_interface.h>
#endif

namespace hcq {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST(VaSpaceTest, ReservesAndHandsOutRangesInside) {
  VaSpace va(real_os(), 64 * kMiB);
  EXPECT_EQ(va.size(), 64 * kMiB);
  EXPECT_EQ(va.base() % 4096, 0u);
  uint64_t a = va.alloc(4096);
  uint64_t b = va.alloc(8192);
  EXPECT_TRUE(va.contains(a));
  EXPECT_TRUE(va.contains(b + 8191));
  EXPECT_FALSE(va.contains(va.base() + va.size()));
  EXPECT_TRUE(b >= a + 4096 || a >= b + 8192) << "ranges overlap";
  EXPECT_EQ(va.bytes_in_use(), 3 * 4096u);
}

TEST(VaSpaceTest, SizeIsRoundedUpToPages) {
  VaSpace va(real_os(), 16 * kMiB);
  uint64_t a = va.alloc(1);
  uint64_t b = va.alloc(1);
  EXPECT_EQ(va.bytes_in_use(), 2 * 4096u);
  EXPECT_GE(b > a ? b - a : a - b, 4096u);
  va.free(a, 1);  // the same rounding on free
  EXPECT_EQ(va.bytes_in_use(), 4096u);
}

TEST(VaSpaceTest, HonoursAlignment) {
  VaSpace va(real_os(), 64 * kMiB);
  va.alloc(4096);  // push the next fit off any natural alignment
  for (uint64_t align : {uint64_t{8192}, uint64_t{65536}, 2 * kMiB}) {
    uint64_t p = va.alloc(4096, align);
    EXPECT_EQ(p % align, 0u) << "align " << align;
  }
  uint64_t small = va.alloc(4096, 16);  // below a page: a page it is
  EXPECT_EQ(small % 4096, 0u);
  EXPECT_THROW(va.alloc(4096, 3 * 4096), InvalidArgument);
  EXPECT_THROW(va.alloc(4096, 0), InvalidArgument);
  EXPECT_THROW(va.alloc(0), InvalidArgument);
}

TEST(VaSpaceTest, FreedNeighboursCoalesce) {
  VaSpace va(real_os(), 4 * kMiB);
  uint64_t a = va.alloc(kMiB), b = va.alloc(kMiB), c = va.alloc(kMiB), d = va.alloc(kMiB);
  EXPECT_THROW(va.alloc(4096), OutOfMemory);
  // Free in an order that needs merging on both sides.
  va.free(a, kMiB);
  va.free(c, kMiB);
  va.free(b, kMiB);
  va.free(d, kMiB);
  EXPECT_EQ(va.bytes_in_use(), 0u);
  // Only a coalesced free list can hand out the whole reservation again.
  uint64_t all = va.alloc(4 * kMiB);
  EXPECT_EQ(all, va.base());
}

TEST(VaSpaceTest, ExhaustionIsOutOfMemoryWithSizes) {
  VaSpace va(real_os(), 2 * kMiB);
  va.alloc(kMiB + 4096);
  try {
    va.alloc(kMiB);
    FAIL() << "no OutOfMemory";
  } catch (const OutOfMemory& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("1048576"), std::string::npos) << msg;  // the size asked
  }
  EXPECT_THROW(va.alloc(3 * kMiB), OutOfMemory);
}

TEST(VaSpaceTest, DoubleFreeAndForeignFreeAreInvalid) {
  VaSpace va(real_os(), 4 * kMiB);
  uint64_t a = va.alloc(8192);
  EXPECT_THROW(va.free(a, 4096), InvalidArgument);  // wrong size
  va.free(a, 8192);
  EXPECT_THROW(va.free(a, 8192), InvalidArgument);
  EXPECT_THROW(va.free(va.base() + 12345, 4096), InvalidArgument);
  EXPECT_EQ(va.bytes_in_use(), 0u);
}

TEST(VaSpaceTest, ManyAllocationsNeverOverlap) {
  VaSpace va(real_os(), 64 * kMiB);
  std::vector<std::pair<uint64_t, uint64_t>> live;
  for (int i = 0; i < 200; ++i) {
    uint64_t size = 4096 * (1 + (i * 7) % 13);
    live.emplace_back(va.alloc(size, 4096u << (i % 4)), size);
    if (i % 3 == 0) {
      auto [p, s] = live[live.size() / 2];
      va.free(p, s);
      live.erase(live.begin() + static_cast<long>(live.size() / 2));
    }
  }
  std::sort(live.begin(), live.end());
  for (size_t i = 1; i < live.size(); ++i) EXPECT_LE(live[i - 1].first + live[i - 1].second, live[i].first);
}

sigjmp_buf fault_jump;
void on_fault(int) { siglongjmp(fault_jump, 1); }

TEST(VaSpaceTest, FreedRangeFaultsInsteadOfShowingOldData) {
  VaSpace va(real_os(), 4 * kMiB);
  uint64_t a = va.alloc(4096);
  // A backend maps memory into the range, as a device allocation would.
  void* p =
      ::mmap(reinterpret_cast<void*>(a), 4096, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_EQ(p, reinterpret_cast<void*>(a));
  *static_cast<volatile int*>(p) = 7;
  va.free(a, 4096);

  struct sigaction act{}, old_segv{};
  act.sa_handler = on_fault;
  sigaction(SIGSEGV, &act, &old_segv);
  volatile bool faulted = false;
  if (sigsetjmp(fault_jump, 1) == 0) {
    (void)*static_cast<volatile int*>(p);
  } else {
    faulted = true;
  }
  sigaction(SIGSEGV, &old_segv, nullptr);
  EXPECT_TRUE(faulted) << "a freed range is still readable";
}

// NVIDIA command streams carry 40-bit addresses (GPFIFO entries, QMD pointers), so every build, ASan's included,
// must give the process a unified VA that ends at or below 2^40.
TEST(VaSpaceTest, ProcessReservationEndsBelowTheNvidiaAddressLimit) {
  if (std::getenv("HCQ_VA_SIZE_GB") != nullptr) GTEST_SKIP() << "HCQ_VA_SIZE_GB sets a size the limit may not hold";
  const VaSpace& va = process().va;
  EXPECT_LE(va.base() + va.size(), uint64_t{1} << 40) << "reservation at " << std::hex << va.base();
}

// Under ASan the unified VA lies in the runtime's shadow gap (hcq/va_layout.hpp). ASan must still check accesses
// there, from instrumented code and from its memcpy interceptor alike, and not wave them through as foreign memory.
TEST(VaSpaceTest, AddressSanitizerChecksTheUnifiedVa) {
#if HCQ_ADDRESS_SANITIZER
  const uint64_t va = process().va.alloc(2 * 4096);
  void* p = ::mmap(reinterpret_cast<void*>(va), 2 * 4096, PROT_READ | PROT_WRITE,
                   MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_EQ(p, reinterpret_cast<void*>(va));
  char* bytes = static_cast<char*>(p);
  ASAN_POISON_MEMORY_REGION(bytes + 4096, 4096);
  EXPECT_EQ(__asan_region_is_poisoned(bytes, 2 * 4096), bytes + 4096);
  static char source[256];
  volatile size_t length = sizeof(source);  // not a constant: the copy goes through the interceptor
  // Other tests may have left threads running (device workers): a forked child must re-execute.
  const std::string style = GTEST_FLAG_GET(death_test_style);
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(std::memcpy(bytes + 4096 - 64, source, length), "use-after-poison");
  EXPECT_DEATH(*static_cast<volatile char*>(bytes + 4096 + 100) = 1, "use-after-poison");
  GTEST_FLAG_SET(death_test_style, style);
  std::memcpy(bytes, source, length);  // the unpoisoned page is ordinary memory
  ASAN_UNPOISON_MEMORY_REGION(bytes + 4096, 4096);
  process().va.free(va, 2 * 4096);
#else
  GTEST_SKIP() << "not an AddressSanitizer build";
#endif
}

}  // namespace
}  // namespace hcq
