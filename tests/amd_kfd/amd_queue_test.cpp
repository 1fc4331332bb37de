// The AMD HWQueues (PM4 compute, SDMA copy) on SIM-AMD: every operation executed by the simulated engines, bound
// queues resubmitted with patched variables, ring wrap with backpressure, serialized submitters, and an exec.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/amd_program.hpp"
#include "amd/kfd/amd_queue.hpp"
#include "amd/target.hpp"
#include "amd_codeobj/kernels.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "sim/kfd/sim_amd_device.hpp"

namespace hcq::amd {
namespace {

using namespace std::chrono_literals;

class AmdQueueTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_amd_gpu(cat("SIM-AMD:", GetParam()), GetParam());
    amd_ = dynamic_cast<AmdDevice*>(dev_.get());
    ASSERT_NE(amd_, nullptr);
  }
  void TearDown() override {
    if (amd_) {
      EXPECT_FALSE(dev_->has_error()) << dev_->describe_state();
    }
  }
  Allocation host_mem(uint64_t size) {
    BufferSpec s;
    s.cpu_access = true;
    s.zero = true;
    Allocation a = dev_->alloc_memory(size, s);
    allocs_.push_back(a);
    return a;
  }
  void wait(const Signal& s, uint64_t v) { dev_->wait_signal(s, v, 10s); }
  const Target& target() const { return Target::from_gfx(GetParam()); }

  std::unique_ptr<Device> dev_;
  AmdDevice* amd_ = nullptr;
  struct Freer {
    AmdQueueTest* t;
    ~Freer() {
      for (const Allocation& a : t->allocs_) t->dev_->free_memory(a);
    }
  };
  std::vector<Allocation> allocs_;
};

const QueueKind kKinds[] = {QueueKind::compute, QueueKind::copy};

TEST_P(AmdQueueTest, SignalWritesValueAndClock) {
  for (QueueKind k : kKinds) {
    SCOPED_TRACE(to_string(k));
    OwnedSignal s(0, "signal test");
    auto q = dev_->new_queue(k);
    q->signal(s, 0x1'0000'0005ull);  // 64-bit value
    q->submit();
    wait(s, 0x1'0000'0005ull);
    EXPECT_EQ(s->value(), 0x1'0000'0005ull);
    EXPECT_NE(s->timestamp(), 0u) << "the clock at +8";
  }
}

TEST_P(AmdQueueTest, WaitIsReleasedByTheHost) {
  for (QueueKind k : kKinds) {
    SCOPED_TRACE(to_string(k));
    OwnedSignal gate(0, "gate"), done(0, "done");
    auto q = dev_->new_queue(k);
    q->wait(gate, 7u);
    q->signal(done, 1u);
    q->submit();
    std::this_thread::sleep_for(30ms);
    EXPECT_EQ(done->value(), 0u) << "the wait let the queue through before the gate was set";
    EXPECT_NE(dev_->describe_state().find("rptr"), std::string::npos) << dev_->describe_state();
    gate->set_value(6);
    std::this_thread::sleep_for(10ms);
    EXPECT_EQ(done->value(), 0u) << "6 is not >= 7";
    gate->set_value(7);
    wait(done, 1);
  }
}

TEST_P(AmdQueueTest, TimestampsAreOrdered) {
  for (QueueKind k : kKinds) {
    SCOPED_TRACE(to_string(k));
    OwnedSignal a(0, "ts a"), b(0, "ts b"), done(0, "done");
    auto q = dev_->new_queue(k);
    q->timestamp(a);
    q->timestamp(b);
    q->signal(done, 1u);
    q->submit();
    wait(done, 1);
    EXPECT_NE(a->timestamp(), 0u);
    EXPECT_LE(a->timestamp(), b->timestamp());
    EXPECT_LE(b->timestamp(), done->timestamp());
    EXPECT_EQ(a->value(), 0u) << "a timestamp leaves the value alone";
  }
}

TEST_P(AmdQueueTest, WriteAndPollBit) {
  Freer f{this};
  for (QueueKind k : kKinds) {
    SCOPED_TRACE(to_string(k));
    Allocation m = host_mem(64);
    // The GPU polls and writes these words while the host does: atomic accesses on both sides, as on hardware.
    auto* w = static_cast<uint32_t*>(m.host_ptr());
    auto set = [&](int i, uint32_t v) { __atomic_store_n(&w[i], v, __ATOMIC_RELEASE); };
    auto get = [&](int i) { return __atomic_load_n(&w[i], __ATOMIC_ACQUIRE); };
    std::memset(m.host_ptr(), 0xab, 64);
    set(0, 0);
    OwnedSignal done(0, "done");
    auto q = dev_->new_queue(k);
    q->poll_bit(m.va, 0x6, true);
    q->write(m.va + 8, 0xdeadbeefu, Width::b32);
    q->write(m.va + 16, Var{0}, Width::b64);
    q->poll_bit(m.va + 4, 0x80, false);
    q->signal(done, 1u);
    set(1, 0x80);
    const uint64_t vars[] = {0x0123456789abcdefull};
    q->submit(vars);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(get(2), 0xababababu) << "poll_bit let the write through with the bits clear";
    set(0, 0x2);
    std::this_thread::sleep_for(10ms);
    EXPECT_EQ(get(2), 0xababababu) << "only one of the two bits is set";
    set(0, 0x7);
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(get(2), 0xdeadbeefu);
    EXPECT_EQ(done->value(), 0u) << "the second poll waits for bit 7 to clear";
    set(1, 0x7f);
    wait(done, 1);
    EXPECT_EQ(get(3), 0xababababu) << "a 32-bit write touches 4 bytes";
    uint64_t v;
    std::memcpy(&v, static_cast<std::byte*>(m.host_ptr()) + 16, 8);
    EXPECT_EQ(v, 0x0123456789abcdefull);
    EXPECT_EQ(get(6), 0xababababu);
  }
}

TEST_P(AmdQueueTest, CopySmallAndSplit) {
  Freer f{this};
  // Small and unaligned.
  Allocation src = host_mem(4096), dst = host_mem(4096);
  for (int i = 0; i < 4096; ++i) static_cast<uint8_t*>(src.host_ptr())[i] = static_cast<uint8_t>(i * 7 + 1);
  OwnedSignal done(0, "copy done");
  auto q = dev_->copy_queue();
  q->copy(dst.va + 3, src.va + 5, 777);
  q->signal(done, 1u);
  q->submit();
  wait(done, 1);
  const auto* s = static_cast<const uint8_t*>(src.host_ptr());
  const auto* d = static_cast<const uint8_t*>(dst.host_ptr());
  EXPECT_EQ(std::memcmp(d + 3, s + 5, 777), 0);
  EXPECT_EQ(d[2], 0);
  EXPECT_EQ(d[780], 0);

  // The split at the engine's limit, as encoded (the limit on SDMA 6/7 is 1 GiB: no memory needed to build it).
  const uint64_t max = target().sdma->max_copy_bytes;
  auto big = dev_->copy_queue();
  big->copy(0x100000000ull, 0x200000000ull, 2 * max + 100);
  EXPECT_EQ(big->words().size(), 3u * target().sdma->copy_linear->words);

  // A split copy that runs, where the limit is small enough (SDMA 4: 4 MiB).
  if (max <= (8u << 20)) {
    const uint64_t n = 2 * max + 4096 + 12;
    Allocation bs = host_mem(n), bd = host_mem(n);
    auto* p = static_cast<uint32_t*>(bs.host_ptr());
    for (uint64_t i = 0; i < n / 4; ++i) p[i] = static_cast<uint32_t>(i * 2654435761u);
    OwnedSignal done2(0, "split done");
    auto q2 = dev_->copy_queue();
    q2->copy(bd.va, bs.va, n);
    q2->signal(done2, 1u);
    q2->submit();
    wait(done2, 1);
    EXPECT_EQ(std::memcmp(bd.host_ptr(), bs.host_ptr(), n), 0);
  }
  EXPECT_THROW(dev_->compute_queue()->copy(dst.va, src.va, 8), InvalidArgument) << "no copies on PM4";
}

TEST_P(AmdQueueTest, BoundQueuesResubmittedWithPatchedVariables) {
  Freer f{this};
  Allocation src = host_mem(64), dst = host_mem(64), slots = host_mem(64);
  for (int i = 0; i < 8; ++i) static_cast<uint64_t*>(src.host_ptr())[i] = 0xa000 + i;
  OwnedSignal gate(0, "gate"), done(0, "done");

  auto c = dev_->compute_queue();
  c->wait(gate, Var{0});
  c->write(Var{1}, Var{2}, Width::b32);
  c->signal(done, Var{0});
  c->bind();
  auto s = dev_->copy_queue();
  s->wait(done, Var{0});
  s->copy(Var{1}, Var{2}, 8);
  s->signal(done, Var{0} + 1);
  s->bind();
  ASSERT_TRUE(c->bound());
  ASSERT_TRUE(s->bound());
  for (uint64_t round = 1; round <= 8; ++round) {
    const uint64_t target = 2 * round - 1;  // c waits gate >= target, signals done = target; s signals target + 1
    const uint64_t cv[] = {target, slots.va + 4 * (round - 1), 0x5000 + round};
    c->submit(cv);
    const uint64_t sv[] = {target, dst.va + 8 * (round - 1), src.va + 8 * (8 - round)};
    s->submit(sv);
    gate->set_value(target);
    wait(done, target + 1);
    EXPECT_EQ(static_cast<uint32_t*>(slots.host_ptr())[round - 1], 0x5000 + round);
    EXPECT_EQ(static_cast<uint64_t*>(dst.host_ptr())[round - 1], 0xa000 + (8 - round));
  }
  EXPECT_THROW(c->bind(), InvalidArgument);
}

// Many submissions, together far larger than the 256 KiB ring, first held back by a wait: the submitter must block
// for room (never overwriting what the GPU has not read), then everything runs, in order, exactly once.
TEST_P(AmdQueueTest, RingWrapsWithBackpressure) {
  Freer f{this};
  for (QueueKind k : kKinds) {
    SCOPED_TRACE(to_string(k));
    constexpr uint32_t kSubs = 300, kWrites = 60;  // PM4: ~300 * 60 * 8 dwords = 576 KiB
    Allocation m = host_mem(kSubs * kWrites * 4);
    OwnedSignal gate(0, "gate"), done(0, "done");
    auto first = dev_->new_queue(k);
    first->wait(gate, 1u);
    first->submit();
    std::atomic<uint32_t> submitted{0};
    std::thread t([&] {
      for (uint32_t i = 0; i < kSubs; ++i) {
        auto q = dev_->new_queue(k);
        for (uint32_t j = 0; j < kWrites; ++j) q->write(m.va + 4 * (i * kWrites + j), i * kWrites + j + 1, Width::b32);
        q->signal(done, i + 1);
        q->submit();
        submitted = i + 1;
      }
    });
    std::this_thread::sleep_for(100ms);
    const uint32_t before = submitted.load();
    EXPECT_LT(before, kSubs) << "the ring cannot hold every submission while the GPU is blocked";
    EXPECT_EQ(done->value(), 0u);
    gate->set_value(1);
    t.join();
    wait(done, kSubs);
    const auto* w = static_cast<const uint32_t*>(m.host_ptr());
    for (uint32_t i = 0; i < kSubs * kWrites; ++i) ASSERT_EQ(w[i], i + 1) << "at " << i;

    // One submission larger than the ring streams through it.
    std::memset(m.host_ptr(), 0, kSubs * kWrites * 4);
    auto huge = dev_->new_queue(k);
    for (uint32_t i = 0; i < kSubs * kWrites; ++i) huge->write(m.va + 4 * i, ~i, Width::b32);
    huge->signal(done, kSubs + 1);
    EXPECT_GT(huge->words().size() * 4, 256u * 1024);
    huge->submit();
    wait(done, kSubs + 1);
    for (uint32_t i = 0; i < kSubs * kWrites; ++i) ASSERT_EQ(w[i], ~i) << "at " << i;
  }
}

TEST_P(AmdQueueTest, SubmittersOnSeveralThreadsAreSerialized) {
  Freer f{this};
  constexpr uint32_t kThreads = 4, kEach = 150;
  Allocation m = host_mem(kThreads * kEach * 8);
  std::vector<std::thread> ts;
  for (uint32_t t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (uint32_t i = 0; i < kEach; ++i) {
        auto q = dev_->new_queue(t % 2 ? QueueKind::copy : QueueKind::compute);
        q->write(m.va + 8 * (t * kEach + i), (uint64_t{t} << 32) | i | 0x80000000u, Width::b64);
        q->submit();
      }
    });
  for (auto& t : ts) t.join();
  OwnedSignal done(0, "done");
  for (QueueKind k : kKinds) {
    auto q = dev_->new_queue(k);
    q->signal(done, k == QueueKind::compute ? 1u : 2u);
    q->submit();
    wait(done, k == QueueKind::compute ? 1 : 2);
  }
  const auto* w = static_cast<const uint64_t*>(m.host_ptr());
  for (uint32_t t = 0; t < kThreads; ++t)
    for (uint32_t i = 0; i < kEach; ++i) ASSERT_EQ(w[t * kEach + i], (uint64_t{t} << 32) | i | 0x80000000u);
}

TEST_P(AmdQueueTest, ExecWithConstantAndSymbolicDims) {
  Freer f{this};
  std::unique_ptr<Program> p = dev_->load_program("axpb", test::axpb_code_object(GetParam()));
  const uint32_t n = 1000;
  Allocation in = host_mem(n * 4), out = host_mem(n * 4);
  auto* fi = static_cast<float*>(in.host_ptr());
  for (uint32_t i = 0; i < n; ++i) fi[i] = static_cast<float>(i);
  const auto* fo = static_cast<const float*>(out.host_ptr());
  OwnedSignal done(0, "exec done");

  auto q = dev_->compute_queue();
  q->exec(*p, LaunchArgs{{out.va, in.va}, {n, 3u, 7u}}, Dims{16u, 1u, 1u}, Dims{64u, 1u, 1u});
  q->signal(done, 1u);
  q->submit();
  wait(done, 1);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(fo[i], static_cast<float>(i) * 3 + 7) << i;

  // Symbolic group count with a power-of-two local size; symbolic arguments; bound and resubmitted.
  auto b = dev_->compute_queue();
  b->exec(*p, LaunchArgs{{Var{1}, in.va}, {Var{2}, Var{3}, 1u}}, Dims{Var{0}, 1u, 1u}, Dims{32u, 1u, 1u});
  b->signal(done, Var{4});
  b->bind();
  for (uint32_t round = 0; round < 3; ++round) {
    const uint32_t count = 100 + 300 * round, groups = (count + 31) / 32;
    std::memset(out.host_ptr(), 0, n * 4);
    const uint64_t vars[] = {groups, out.va, count, round + 2, 2 + round};
    b->submit(vars);
    wait(done, 2 + round);
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(fo[i], i < count ? static_cast<float>(i) * (round + 2) + 1 : 0.0f) << "round " << round << " at " << i;
  }

  // Global and local both symbolic, local not a power of two: the launch block and the registers take each as is.
  auto both = dev_->compute_queue();
  both->exec(*p, LaunchArgs{{out.va, in.va}, {n, 5u, 1u}}, Dims{Var{0}, 1u, 1u}, Dims{Var{1}, 1u, 1u});
  both->signal(done, Var{2});
  both->bind();
  for (uint32_t round = 0; round < 2; ++round) {
    const uint32_t local = round == 0 ? 48 : 100, groups = (n + local - 1) / local;
    std::memset(out.host_ptr(), 0, n * 4);
    const uint64_t vars[] = {groups, local, 10 + round};
    both->submit(vars);
    wait(done, 10 + round);
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_EQ(fo[i], static_cast<float>(i) * 5 + 1) << "local " << local << " at " << i;
  }

  // A kernel that reads the dispatch packet (hand-written IR) still gets one; on PM4 queues, symbolic dims whose
  // product the packet's grid size cannot carry are refused for it. AQL queues (gfx942) compute the grid at each
  // submit from the patched launch block, so they take any dims.
  std::unique_ptr<Program> lds = dev_->load_program("lds_reverse", test::lds_code_object(GetParam()));
  if (std::string(GetParam()) == "gfx942") {
    EXPECT_NO_THROW(
        dev_->compute_queue()->exec(*lds, LaunchArgs{{out.va}, {n}}, Dims{Var{0}, 1u, 1u}, Dims{Var{1}, 1u, 1u}));
  } else {
    EXPECT_THROW(dev_->compute_queue()->exec(*lds, LaunchArgs{{out.va}, {n}}, Dims{Var{0}, 1u, 1u}, Dims{48u, 1u, 1u}),
                 InvalidArgument);
    EXPECT_THROW(
        dev_->compute_queue()->exec(*lds, LaunchArgs{{out.va}, {n}}, Dims{Var{0}, 1u, 1u}, Dims{Var{1}, 1u, 1u}),
        InvalidArgument);
  }
  EXPECT_THROW(
      dev_->copy_queue()->exec(*p, LaunchArgs{{out.va, in.va}, {n, 3u, 7u}}, Dims{1u, 1u, 1u}, Dims{1u, 1u, 1u}),
      InvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Sim, AmdQueueTest, ::testing::Values("gfx1100", "gfx942", "gfx1201"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace hcq::amd
