// HWQueue builder: validation, finalize rules, patch-only-what-changed and the completion wait, against a small
// fake backend whose "commands" are opcode + operand words and whose "device" is the test itself.
#include "hcq/hw_queue.hpp"
#include "common/timeline.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "hcq/allocator.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/backend/signal_pool.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/program.hpp"

namespace hcq {
namespace {

using std::chrono::milliseconds;

enum Op : uint32_t { kWait = 0xa1, kSignal, kTimestamp, kExec, kCopy, kBarrier, kWrite, kPoll };

struct Submission {
  std::vector<uint32_t> words;
  uint64_t completion_addr;
  uint64_t seq;
};

class FakeDevice;

class FakeQueue final : public HWQueue {
 public:
  FakeQueue(FakeDevice& dev, QueueKind kind);
  ~FakeQueue() override;

  std::vector<Submission> submissions;
  std::vector<uint32_t> bound_copy;
  bool complete_at_once = true;  // the fake device "finishes" each submission as soon as it is handed over

  // Exposed for the tests of the emit helpers and of the backends' destructor rule.
  using HWQueue::emit;
  using HWQueue::ends_with_timeline_signal;
  using HWQueue::patch_word;

 protected:
  void encode_wait(Sym addr, Sym value) override {
    emit(kWait);
    emit_sym64(addr);
    emit_sym64(value);
  }
  void encode_signal(Sym addr, Sym value) override {
    emit(kSignal);
    emit_sym64(addr);
    emit_sym64(value);
  }
  void encode_timestamp(Sym addr) override {
    emit(kTimestamp);
    emit_sym64(addr);
  }
  void encode_exec(const Program& program, const LaunchArgs& args, const Dims& global, const Dims& local) override;
  void encode_copy(Sym dst, Sym src, uint64_t size) override {
    emit(kCopy);
    emit_sym64(dst);
    emit_sym64(src);
    emit64(size);
  }
  void encode_memory_barrier() override { emit(kBarrier); }
  void encode_write(Sym addr, Sym value, Width width) override {
    emit(kWrite);
    emit_sym64(addr);
    if (width == Width::b64) emit_sym64(value);
    else emit_sym32(value);
  }
  void encode_poll_bit(Sym addr, uint32_t mask, bool set) override {
    emit(kPoll);
    emit_sym64(addr);
    emit(mask);
    emit(set ? 1 : 0);
  }
  std::byte* bind_words(std::span<const uint32_t> w) override {
    bound_copy.assign(w.begin(), w.end());
    return reinterpret_cast<std::byte*>(bound_copy.data());
  }
  void submit_words(uint64_t completion_addr, uint64_t seq) override {
    submissions.push_back({bound() ? bound_copy : words_, completion_addr, seq});
    if (complete_at_once && completion_addr != 0)
      std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(completion_addr)).store(seq);
  }

 private:
  std::vector<SideBlock> side_;
};

class FakeProgram final : public Program {
 public:
  FakeProgram(Device& dev, uint32_t bufs, uint32_t vals, LaunchLimits limits = {})
      : Program(dev, "fake_kernel", bufs, vals, limits) {}
};

class FakeDevice final : public Device {
 public:
  explicit FakeDevice(std::string name = "FAKE:0") : Device(std::move(name)) { init_runtime(nullptr); }
  ~FakeDevice() override { shutdown_runtime(); }

  DeviceInfo info() const override { return {name(), "fake", "none", 0, 1, 1, "0"}; }
  std::unique_ptr<HWQueue> new_queue(QueueKind kind) override { return std::make_unique<FakeQueue>(*this, kind); }
  std::unique_ptr<FakeQueue> fake_queue(QueueKind kind = QueueKind::compute) {
    return std::make_unique<FakeQueue>(*this, kind);
  }
  Allocation alloc_memory(uint64_t size, const BufferSpec& spec) override {
    uint64_t va = process().va.alloc(size);
    void* p = ::mmap(reinterpret_cast<void*>(va), size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (p == MAP_FAILED) throw OutOfMemory("fake device: mmap failed");
    note_alloc(static_cast<int64_t>(size));
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
};

FakeQueue::FakeQueue(FakeDevice& dev, QueueKind kind) : HWQueue(dev, kind) {}
FakeQueue::~FakeQueue() {
  for (const SideBlock& b : side_) device().free_side(b);
}

// Kernargs as a GPU lays them out: 8-byte buffer addresses, then 32-bit values; the words hold the dims and
// the kernarg address.
void FakeQueue::encode_exec(const Program&, const LaunchArgs& args, const Dims& global, const Dims& local) {
  SideBlock kernargs = device().alloc_side(8 * args.bufs.size() + 4 * args.vals.size() + 8);
  side_.push_back(kernargs);
  for (size_t i = 0; i < args.bufs.size(); ++i)
    patches_.add(args.bufs[i],
                 {PatchList::kAbsolute, reinterpret_cast<uint64_t>(kernargs.host + 8 * i), PatchList::Kind::u64});
  for (size_t i = 0; i < args.vals.size(); ++i)
    patches_.add(args.vals[i],
                 {PatchList::kAbsolute, reinterpret_cast<uint64_t>(kernargs.host + 8 * args.bufs.size() + 4 * i),
                  PatchList::Kind::u32});
  emit(kExec);
  for (const Sym& g : global) emit_sym32(g);
  for (const Sym& l : local) emit_sym32(l);
  emit64(kernargs.va);
}

template <class E>
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error of the expected type)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

class HWQueueTest : public ::testing::Test {
 protected:
  FakeDevice dev;
  OwnedSignal sig{0, "test signal"};
};

TEST_F(HWQueueTest, EncodesAndCountsCommands) {
  auto q = dev.fake_queue();
  q->wait(sig, 1).signal(sig, 2).memory_barrier();
  EXPECT_EQ(q->num_commands(), 3u);
  auto w = q->words();
  ASSERT_EQ(w.size(), 11u);
  EXPECT_EQ(w[0], kWait);
  EXPECT_EQ(w[1] | (uint64_t{w[2]} << 32), sig->addr());
  EXPECT_EQ(w[3], 1u);
  EXPECT_EQ(w[5], kSignal);
  EXPECT_EQ(w[8], 2u);
  EXPECT_EQ(w[10], kBarrier);
  EXPECT_TRUE(q->patches().empty());  // all constants
  EXPECT_EQ(to_string(QueueKind::compute), std::string("compute"));
  EXPECT_EQ(to_string(QueueKind::copy), std::string("copy"));
}

// A backend's destructor gives a queue's side memory back without waiting for the ring only when the queue's last
// command is a constant signal of its device's timeline, as Device::submit builds it: a command after that signal,
// another signal, a symbolic value, a bound queue (resubmitted with new values) or an empty queue do not qualify.
TEST_F(HWQueueTest, OnlyAQueueEndingOnTheTimelineSkipsTheRingWait) {
  const Signal& timeline = dev.timeline_signal();
  auto eager = dev.fake_queue();
  eager->wait(timeline, 6).memory_barrier().signal(timeline, 7);
  EXPECT_TRUE(eager->ends_with_timeline_signal());
  auto after = dev.fake_queue();
  after->signal(timeline, 7).memory_barrier();
  EXPECT_FALSE(after->ends_with_timeline_signal());
  auto other = dev.fake_queue();
  other->signal(timeline, 7).signal(sig, 1);
  EXPECT_FALSE(other->ends_with_timeline_signal());
  auto symbolic = dev.fake_queue();
  symbolic->signal(timeline, Var{0});
  EXPECT_FALSE(symbolic->ends_with_timeline_signal());
  auto bound = dev.fake_queue();
  bound->signal(timeline, 7).bind();
  EXPECT_FALSE(bound->ends_with_timeline_signal());
  EXPECT_FALSE(dev.fake_queue()->ends_with_timeline_signal());
}

TEST_F(HWQueueTest, ReleasedSignalIsRejected) {
  auto q = dev.fake_queue();
  Signal s = Signal::create(0, "short-lived");
  s.release();
  EXPECT_THROW(q->wait(s, 1), InvalidArgument);
  EXPECT_THROW(q->signal(s, 1), InvalidArgument);
  EXPECT_THROW(q->timestamp(s), InvalidArgument);
  Signal released_copy = sig.get();
  EXPECT_NO_THROW(q->timestamp(released_copy));
  EXPECT_EQ(q->num_commands(), 1u);
}

TEST_F(HWQueueTest, NonsenseOperandsAreRejectedWithoutEmitting) {
  auto q = dev.fake_queue();
  EXPECT_TRUE(contains(error_of<InvalidArgument>([&] { q->copy(0x1000, 0x2000, 0); }), "size 0"));
  EXPECT_THROW(q->signal(Sym(0), 1), InvalidArgument);                           // null address
  EXPECT_THROW(q->wait(Sym(0x1004), 1), InvalidArgument);                        // misaligned signal
  EXPECT_THROW(q->write(Sym(0x1002), 1), InvalidArgument);                       // misaligned word
  EXPECT_THROW(q->write(Sym(0x1000), Sym(uint64_t{1} << 40)), InvalidArgument);  // does not fit 32 bits
  EXPECT_THROW(q->poll_bit(Sym(0x1000), 0, true), InvalidArgument);
  EXPECT_EQ(q->num_commands(), 0u);
  EXPECT_TRUE(q->words().empty());
  // Symbolic operands cannot be checked now and are accepted; a negative 32-bit constant is a 32-bit value.
  q->write(Var{0}, -1).write(Sym(0x1000), Var{1}, Width::b64).copy(Var{2}, Var{3}, 64);
  EXPECT_EQ(q->num_commands(), 3u);
}

TEST_F(HWQueueTest, ExecValidation) {
  FakeProgram prog(dev, 2, 1);
  auto copyq = dev.fake_queue(QueueKind::copy);
  std::string msg = error_of<InvalidArgument>([&] { copyq->exec(prog, {{1, 2}, {3}}, {1, 1, 1}, {1, 1, 1}); });
  EXPECT_TRUE(contains(msg, "copy queue")) << msg;
  EXPECT_TRUE(contains(msg, "FAKE:0")) << msg;

  auto q = dev.fake_queue();
  msg = error_of<InvalidArgument>([&] { q->exec(prog, {{1}, {3}}, {1, 1, 1}, {1, 1, 1}); });
  EXPECT_TRUE(contains(msg, "1 buffers")) << msg;
  EXPECT_THROW(q->exec(prog, {{1, 2}, {}}, {1, 1, 1}, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(q->exec(prog, {{1, 2}, {3}}, {0, 1, 1}, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(q->exec(prog, {{1, 2}, {3}}, {1, 70000, 1}, {1, 1, 1}), InvalidArgument);
  EXPECT_THROW(q->exec(prog, {{1, 2}, {3}}, {1, 1, 1}, {2048, 1, 1}), InvalidArgument);
  EXPECT_THROW(q->exec(prog, {{1, 2}, {3}}, {1, 1, 1}, {1, 1, 65}), InvalidArgument);
  msg = error_of<InvalidArgument>([&] { q->exec(prog, {{1, 2}, {3}}, {1, 1, 1}, {64, 32, 1}); });
  EXPECT_TRUE(contains(msg, "2048 threads")) << msg;
  EXPECT_EQ(q->num_commands(), 0u);

  FakeDevice other("FAKE:1");
  FakeProgram foreign(other, 0, 0);
  EXPECT_THROW(q->exec(foreign, {}, {1, 1, 1}, {1, 1, 1}), InvalidArgument);

  // Symbolic dims pass (the device checks them when it runs); constant ones within limits too.
  q->exec(prog, {{1, 2}, {3}}, {Var{0}, 1, 1}, {Var{1}, 32, 1});
  EXPECT_EQ(q->num_commands(), 1u);
}

// A device whose per-dim limits are as wide as a uint32 still has its threads-per-workgroup limit: a product of
// local dims that overflows 64 bits (2^31 * 2^31 * 4 = 2^64) must not wrap around to a small count and pass.
TEST_F(HWQueueTest, ThreadCountOfHugeLocalDimsDoesNotWrapAround) {
  LaunchLimits wide;
  wide.max_threads_per_group = 1024;
  for (int i = 0; i < 3; ++i) wide.max_local[i] = wide.max_global[i] = 0xffffffffu;
  FakeProgram prog(dev, 0, 0, wide);
  auto q = dev.fake_queue();
  const std::string msg = error_of<InvalidArgument>([&] { q->exec(prog, {}, {1, 1, 1}, {1u << 31, 1u << 31, 4u}); });
  EXPECT_TRUE(contains(msg, "threads per workgroup")) << msg;
  EXPECT_EQ(q->num_commands(), 0u);
  q->exec(prog, {}, {0xffffffffu, 1, 1}, {1024u, 1, 1});  // at the limits: accepted
  EXPECT_EQ(q->num_commands(), 1u);
}

TEST_F(HWQueueTest, SymbolicDimsAreCheckedAtSubmitBeforePatching) {
  FakeProgram prog(dev, 0, 0);
  auto q = dev.fake_queue();
  q->exec(prog, {}, {Var{0}, 1, 1}, {Var{1}, Var{2}, 1});
  q->bind();
  q->submit(std::vector<uint64_t>{4, 32, 32});
  ASSERT_EQ(q->bound_copy[1], 4u);
  const std::vector<std::vector<uint64_t>> bad = {
      {0, 32, 32},                      // no workgroups
      {4, 1025, 1},                     // local x over max_local
      {4, 64, 32},                      // 2048 threads per workgroup
      {4, (uint64_t{1} << 32) | 1, 1},  // would truncate to 1 in a 32-bit word
      {uint64_t{1} << 31, 1, 1},        // global x over max_global
  };
  for (const auto& vars : bad) {
    std::string msg = error_of<InvalidArgument>([&] { q->submit(vars); });
    EXPECT_TRUE(contains(msg, "fake_kernel")) << msg;
    EXPECT_TRUE(contains(msg, "submitted variables")) << msg;
  }
  EXPECT_EQ(q->submissions.size(), 1u);
  EXPECT_EQ(q->bound_copy[1], 4u) << "a rejected submit patched the words";
  q->submit(std::vector<uint64_t>{8, 16, 2});
  EXPECT_EQ(q->bound_copy[1], 8u);
}

TEST_F(HWQueueTest, NoBuildingAfterSubmitOrBind) {
  auto q = dev.fake_queue();
  q->signal(sig, 1);
  q->submit();
  std::string msg = error_of<InvalidArgument>([&] { q->signal(sig, 2); });
  EXPECT_TRUE(contains(msg, "finalized")) << msg;
  EXPECT_THROW(q->bind(), InvalidArgument);
  EXPECT_EQ(q->num_commands(), 1u);

  auto b = dev.fake_queue();
  b->signal(sig, 1).bind();
  EXPECT_TRUE(b->bound());
  EXPECT_THROW(b->memory_barrier(), InvalidArgument);
  EXPECT_THROW(b->bind(), InvalidArgument);
}

TEST_F(HWQueueTest, UnboundWordPatchesNeedNoCompletionTracking) {
  auto q = dev.fake_queue();
  q->signal(sig, Var{0}).write(Var{1}, Var{0} + 1);
  q->submit(std::vector<uint64_t>{5, 0x1000});
  q->submit(std::vector<uint64_t>{6, 0x2000});
  ASSERT_EQ(q->submissions.size(), 2u);
  EXPECT_EQ(q->submissions[0].completion_addr, 0u);
  EXPECT_EQ(q->submissions[1].seq, 2u);
  EXPECT_EQ(q->submissions[0].words[3], 5u);
  EXPECT_EQ(q->submissions[1].words[3], 6u);
  EXPECT_EQ(q->submissions[1].words[6], 0x2000u);
  EXPECT_EQ(q->submissions[1].words[8], 7u);
}

TEST_F(HWQueueTest, MissingVariableFailsTheSubmitCleanly) {
  auto q = dev.fake_queue();
  q->signal(sig, Var{1});
  EXPECT_THROW(q->submit(std::vector<uint64_t>{1}), InvalidArgument);
  EXPECT_TRUE(q->submissions.empty());
  q->submit(std::vector<uint64_t>{1, 2});
  EXPECT_EQ(q->submissions.size(), 1u);
  EXPECT_EQ(q->submissions[0].seq, 1u);
}

TEST_F(HWQueueTest, BoundQueuePatchesOnlyWhatChanged) {
  auto q = dev.fake_queue();
  q->signal(sig, Var{0}).signal(sig, Var{1});
  q->bind();
  const std::vector<uint32_t> built(q->words().begin(), q->words().end());
  q->submit(std::vector<uint64_t>{10, 20});
  ASSERT_EQ(q->bound_copy[3], 10u);
  ASSERT_EQ(q->bound_copy[8], 20u);
  EXPECT_NE(q->submissions[0].completion_addr, 0u);  // bound: tracked

  q->bound_copy[3] = 0xdead;  // an unchanged variable must not be rewritten
  q->submit(std::vector<uint64_t>{10, 21});
  EXPECT_EQ(q->bound_copy[3], 0xdeadu);
  EXPECT_EQ(q->bound_copy[8], 21u);
  // The patches went to the bound copy, not the built words.
  EXPECT_TRUE(std::equal(built.begin(), built.end(), q->words().begin()));
}

TEST_F(HWQueueTest, SideMemoryPatchesAreTracked) {
  FakeProgram prog(dev, 1, 1);
  auto q = dev.fake_queue();
  q->exec(prog, {{Var{0}}, {Var{1}}}, {1, 1, 1}, {1, 1, 1});
  EXPECT_TRUE(q->patches().has_absolute());
  q->submit(std::vector<uint64_t>{0xabc000, 77});
  ASSERT_EQ(q->submissions.size(), 1u);
  EXPECT_NE(q->submissions[0].completion_addr, 0u);
  const auto& w = q->submissions[0].words;
  auto* kernargs = reinterpret_cast<const std::byte*>(w[7] | (uint64_t{w[8]} << 32));
  uint64_t buf;
  uint32_t val;
  std::memcpy(&buf, kernargs, 8);
  std::memcpy(&val, kernargs + 8, 4);
  EXPECT_EQ(buf, 0xabc000u);
  EXPECT_EQ(val, 77u);
}

TEST_F(HWQueueTest, ChangedResubmitWaitsForThePreviousSubmission) {
  auto q = dev.fake_queue();
  q->signal(sig, Var{0});
  q->bind();
  q->complete_at_once = false;
  q->submit(std::vector<uint64_t>{1});
  ASSERT_EQ(q->submissions.size(), 1u);
  auto* completion = reinterpret_cast<uint64_t*>(q->submissions[0].completion_addr);

  // Unchanged variables: nothing to patch, so no need to wait for the device.
  q->submit(std::vector<uint64_t>{1});
  EXPECT_EQ(q->submissions.size(), 2u);

  // Changed: submit must wait until the device reports submission 2 done before patching the bound words.
  std::atomic<uint32_t> word_while_device_busy{0};
  std::thread device([&] {
    std::this_thread::sleep_for(milliseconds(20));
    word_while_device_busy = q->bound_copy[3];
    std::atomic_ref<uint64_t>(*completion).store(2, std::memory_order_release);
  });
  q->submit(std::vector<uint64_t>{2});
  device.join();
  EXPECT_EQ(word_while_device_busy.load(), 1u) << "the bound words were patched while the device could read them";
  EXPECT_EQ(q->bound_copy[3], 2u);
  EXPECT_EQ(q->submissions.back().seq, 3u);
  std::atomic_ref<uint64_t>(*completion).store(3);  // let the destructor find it finished
}

TEST_F(HWQueueTest, ResubmitWaitFailsFastWhenTheDeviceFaulted) {
  auto q = dev.fake_queue();
  q->signal(sig, Var{0});
  q->bind();
  q->complete_at_once = false;
  q->submit(std::vector<uint64_t>{1});
  dev.record_error(std::make_exception_ptr(DeviceFault("FAKE:0: queue faulted")));
  EXPECT_THROW(q->submit(std::vector<uint64_t>{2}), DeviceFault);
}

TEST_F(HWQueueTest, InFlightCompletionSignalOutlivesTheQueue) {
  auto q = dev.fake_queue();
  q->signal(sig, Var{0});
  q->bind();
  q->complete_at_once = false;
  q->submit(std::vector<uint64_t>{1});
  const uint64_t completion_addr = q->submissions[0].completion_addr;
  const size_t live = process().signals.live_count();
  hcq::test::take_timeline_value(dev);  // the submission belongs to timeline value 1
  q.reset();                            // must not block, and must not free a slot the device will still write
  EXPECT_EQ(process().signals.live_count(), live);

  dev.timeline_signal().set_value(1);
  dev.synchronize();  // the device has passed everything: the slot can go
  EXPECT_EQ(process().signals.live_count(), live - 1);
  OwnedSignal reuse(0, "next owner");
  EXPECT_EQ(reuse->addr(), completion_addr);
}

TEST_F(HWQueueTest, EmitHelpersFollowTheWords) {
  auto q = dev.fake_queue();
  q->emit(0);
  q->patch_word(0, Var{0}, PatchList::Kind::field, 0, 4, 8);
  for (int i = 0; i < 1000; ++i) q->emit(static_cast<uint32_t>(i));  // words_ reallocates
  q->patch_word(500, Var{0} + 1, PatchList::Kind::u32);
  q->patch_word(600, Sym(0x77), PatchList::Kind::u32);  // constant: written now
  EXPECT_EQ(q->words()[600], 0x77u);
  EXPECT_THROW(q->patch_word(1001, Sym(1), PatchList::Kind::u32), InvalidArgument);
  EXPECT_THROW(q->patch_word(1000, Sym(1), PatchList::Kind::u64), InvalidArgument);
  q->submit(std::vector<uint64_t>{0x12});
  EXPECT_EQ(q->submissions[0].words[0], 0x120u);
  EXPECT_EQ(q->submissions[0].words[500], 0x13u);
}

}  // namespace
}  // namespace hcq
