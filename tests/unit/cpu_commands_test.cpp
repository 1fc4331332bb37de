// The CPU command set and its consumer: the table is consistent, the encoder's words parse back with it, the ring
// wraps and takes submissions larger than itself, and bad commands fault the queue (visibly, and for good).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../../drivers/cpu/cpu_commands.hpp"
#include "../../drivers/cpu/cpu_device.hpp"
#include "../../drivers/cpu/cpu_ring.hpp"
#include "../../drivers/cpu/cpu_worker.hpp"
#include "common/timeline.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "hcq/memory.hpp"
#include "hcq/registry.hpp"

namespace hcq::cpu {
namespace {

constexpr const char* kAddOne = R"(
HCQ_KERNEL(add1, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(float, 1)[i] + 1.0f;
  }
}
)";

std::vector<uint32_t> write32(uint64_t addr, uint32_t value) {
  return {make_header(Opcode::write32, command_length(Opcode::write32)), static_cast<uint32_t>(addr),
          static_cast<uint32_t>(addr >> 32), value};
}

// Walks a command stream with the table; returns the opcodes, failing the test on a malformed command.
std::vector<Opcode> parse(std::span<const uint32_t> words) {
  std::vector<Opcode> ops;
  for (size_t i = 0; i < words.size();) {
    const auto why = check_header(words[i], words.size() - i);
    EXPECT_FALSE(why) << "dword " << i << ": " << why.value_or("");
    if (why) break;
    ops.push_back(static_cast<Opcode>(header_opcode(words[i])));
    i += header_length(words[i]);
  }
  return ops;
}

TEST(CpuCommands, TableIsComplete) {
  std::set<std::string> names;
  for (const CommandInfo& c : kCommands) {
    ASSERT_NE(c.name, nullptr);
    EXPECT_FALSE(std::string(c.name).empty());
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate name " << c.name;
    EXPECT_EQ(command_info(static_cast<uint32_t>(c.op)), &c);
    if (c.payload == kVariableLength) continue;
    EXPECT_LE(c.payload, kMaxPayload);
    const uint32_t len = command_length(c.op);
    EXPECT_FALSE(check_header(make_header(c.op, len), len)) << c.name;
    EXPECT_TRUE(check_header(make_header(c.op, len + 1), len + 1)) << c.name << " accepted a wrong length";
    if (c.op != Opcode::skip && len > 1) {
      EXPECT_TRUE(check_header(make_header(c.op, len), len - 1)) << c.name << " accepted a truncated command";
    }
    EXPECT_TRUE(check_header(make_header(c.op, len) | 0x100u, len)) << c.name << " accepted reserved bits";
  }
  EXPECT_EQ(command_info(uint32_t{kCommands.size()}), nullptr);
  EXPECT_STREQ(opcode_name(0xee), "unknown");
  EXPECT_TRUE(check_header(0xee | (1u << 16), 1));             // unknown opcode
  EXPECT_TRUE(check_header(make_header(Opcode::nop, 0), 4));   // a NOP still has its header
  EXPECT_FALSE(check_header(make_header(Opcode::nop, 3), 3));  // any NOP length fits
  EXPECT_EQ(join64(0x89abcdefu, 0x01234567u), 0x0123456789abcdefull);
}

class CpuDeviceTest : public ::testing::Test {
 protected:
  // A private instance: faults are sticky, so tests that fault must not share the registry's CPU device.
  std::unique_ptr<CpuDevice> dev_ = std::make_unique<CpuDevice>("CPU:test");
  ~CpuDeviceTest() override = default;

  Allocation alloc(uint64_t size) {
    BufferSpec spec;
    spec.cpu_access = true;
    spec.nolru = true;
    return dev_->alloc_memory(size, spec);
  }
};

TEST_F(CpuDeviceTest, EncoderOutputParsesBackWithTheTable) {
  const auto obj = dev_->compiler().compile(kAddOne);
  auto program = dev_->load_program("add1", obj);
  Allocation a = alloc(4096), b = alloc(4096);
  OwnedSignal sig(0);

  auto q = dev_->compute_queue();
  q->wait(sig, Var{0})
      .timestamp(sig)
      .exec(*program, LaunchArgs{{a.va, Var{1}}, {Sym(16u)}}, Dims{1u, 1u, 1u}, Dims{Var{2}, 1u, 1u})
      .memory_barrier()
      .write(a.va + 64, 7u, Width::b32)
      .write(a.va + 128, Var{3}, Width::b64)
      .poll_bit(a.va + 64, 1u, true)
      .signal(sig, Var{0} + 1);
  auto c = dev_->copy_queue();
  c->copy(b.va, a.va, 256);

  const std::vector<Opcode> expected = {Opcode::wait,    Opcode::timestamp, Opcode::exec,     Opcode::barrier,
                                        Opcode::write32, Opcode::write64,   Opcode::poll_bit, Opcode::signal};
  EXPECT_EQ(parse(q->words()), expected);
  EXPECT_EQ(q->num_commands(), expected.size());
  EXPECT_EQ(parse(c->words()), std::vector<Opcode>{Opcode::copy});

  // Run it: the patched operands land where the table says they are.
  const std::vector<uint64_t> vars = {0, b.va, 16, 0x1122334455667788ull};
  q->submit(vars);
  dev_->wait_signal(sig, 1);
  const auto* words = q->words().data();
  EXPECT_EQ(join64(words[1], words[2]), sig->addr());
  EXPECT_EQ(static_cast<uint32_t*>(a.host_ptr())[16], 7u);
  EXPECT_EQ(static_cast<uint64_t*>(a.host_ptr())[16], 0x1122334455667788ull);
  EXPECT_NE(sig->timestamp(), 0u);

  q.reset();
  c.reset();
  dev_->free_memory(a);
  dev_->free_memory(b);
}

TEST_F(CpuDeviceTest, CopyFromUnmappedAddressFaultsTheQueue) {
  Allocation dst = alloc(4096), gone = alloc(4096);
  const uint64_t dangling = gone.va;
  dev_->free_memory(gone);  // the address is back in the reservation, PROT_NONE: touching it would crash

  auto q = dev_->copy_queue();
  q->copy(dst.va, dangling + 16, 64).signal(dev_->timeline_signal(), dev_->timeline_value());
  q->submit();
  hcq::test::take_timeline_value(*dev_);

  for (int attempt = 0; attempt < 2; ++attempt) {  // sticky: reported every time
    try {
      dev_->synchronize();
      FAIL() << "synchronize did not report the fault";
    } catch (const DeviceFault& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(hex(dangling + 16)), std::string::npos) << msg;
      EXPECT_NE(msg.find("COPY"), std::string::npos) << msg;
      EXPECT_NE(msg.find("CPU:test"), std::string::npos) << msg;
      EXPECT_NE(msg.find("ring dword 0"), std::string::npos) << msg;
    }
  }
  EXPECT_TRUE(dev_->has_error());
  EXPECT_NE(dev_->describe_state().find("FAULTED"), std::string::npos) << dev_->describe_state();

  // Later submissions are not run.
  auto later = dev_->copy_queue();
  later->write(dst.va, 42u, Width::b32);
  later->submit();
  auto other = dev_->compute_queue();  // the other queue is unaffected
  OwnedSignal done(0);
  other->signal(done, 1);
  other->submit();
  done->wait(1);  // not dev_->wait_signal: that re-raises the device's sticky fault at once
  EXPECT_EQ(static_cast<uint32_t*>(dst.host_ptr())[0], 0u);
  dev_->free_memory(dst);
}

TEST_F(CpuDeviceTest, ExecWithAFreedBufferFaultsInsteadOfCrashing) {
  const auto obj = dev_->compiler().compile(kAddOne);
  auto program = dev_->load_program("add1", obj);
  Allocation a = alloc(4096);
  // The top of the unified VA reservation: reserved PROT_NONE, and first-fit allocation never gets there.
  const uint64_t dangling = process().va.base() + process().va.size() - 65536;
  auto q = dev_->compute_queue();
  q->exec(*program, LaunchArgs{{a.va, dangling}, {Sym(4u)}}, Dims{1u, 1u, 1u}, Dims{4u, 1u, 1u})
      .signal(dev_->timeline_signal(), dev_->timeline_value());
  q->submit();
  hcq::test::take_timeline_value(*dev_);
  try {
    dev_->synchronize();
    FAIL() << "no fault";
  } catch (const DeviceFault& e) {
    EXPECT_NE(std::string(e.what()).find(hex(dangling)), std::string::npos) << e.what();
  }
  q.reset();
  program.reset();
  dev_->free_memory(a);
}

TEST_F(CpuDeviceTest, KernelsRunOverManyWorkgroups) {
  const auto obj = dev_->compiler().compile(kAddOne);
  auto program = dev_->load_program("add1", obj);
  constexpr uint32_t n = 10000;
  Allocation in = alloc(n * 4), out = alloc(n * 4);
  auto* src = static_cast<float*>(in.host_ptr());
  for (uint32_t i = 0; i < n; ++i) src[i] = static_cast<float>(i);
  const std::array<uint64_t, 2> bufs{out.va, in.va};
  const std::array<uint32_t, 1> vals{n};
  (*program)(bufs, vals, {(n + 31) / 32, 1, 1}, {32, 1, 1}, true);
  const auto* dst = static_cast<const float*>(out.host_ptr());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], static_cast<float>(i) + 1.0f) << i;
  program.reset();
  dev_->free_memory(in);
  dev_->free_memory(out);
}

TEST_F(CpuDeviceTest, LoadProgramNamesMissingKernels) {
  const auto obj = dev_->compiler().compile(kAddOne);
  try {
    dev_->load_program("nope", obj);
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("add1"), std::string::npos) << e.what();
  }
  const auto plain = dev_->compiler().compile("void plain(void) {}\n");
  EXPECT_THROW(dev_->load_program("plain", plain), CompileError);  // no HCQ_KERNEL descriptor
}

TEST_F(CpuDeviceTest, SubmissionsFromManyThreadsAreSerialized) {
  constexpr int kThreads = 4, kSubmits = 300;
  std::vector<OwnedSignal> sigs;
  for (int t = 0; t < kThreads; ++t) sigs.emplace_back(0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 1; i <= kSubmits; ++i) {
        auto q = dev_->new_queue(t % 2 ? QueueKind::compute : QueueKind::copy);
        q->memory_barrier().signal(sigs[t], static_cast<uint64_t>(i));
        q->submit();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) dev_->wait_signal(sigs[t], kSubmits);
  EXPECT_FALSE(dev_->has_error());
}

// The ring and worker on their own, fed raw words.
class CpuRingTest : public CpuDeviceTest {
 protected:
  void start(uint64_t dwords) {
    ring_mem_ = alloc(dwords * 4);
    ring_ = std::make_unique<CpuRing>(std::span(static_cast<uint32_t*>(ring_mem_.host_ptr()), dwords), "test ring");
    worker_ = std::make_unique<CpuWorker>(*dev_, "test", *ring_, dev_->mappings(), wake_, nullptr);
    target_ = alloc(4096);
  }
  void TearDown() override {
    worker_.reset();
    ring_.reset();
    if (ring_mem_.size) dev_->free_memory(ring_mem_);
    if (target_.size) dev_->free_memory(target_);
  }
  uint32_t* slots() { return static_cast<uint32_t*>(target_.host_ptr()); }
  std::string fault_text() {
    // Raw submissions are not on the timeline: wait for the ring itself (a faulted queue drains what is left).
    EXPECT_TRUE(ring_->wait_consumed(ring_->write_pointer()));
    try {
      dev_->synchronize();
    } catch (const DeviceFault& e) {
      return e.what();
    }
    return {};
  }

  Allocation ring_mem_, target_;
  CpuSignalWake wake_;
  std::unique_ptr<CpuRing> ring_;
  std::unique_ptr<CpuWorker> worker_;
};

TEST_F(CpuRingTest, TruncatedCommandFaults) {
  start(16);
  const auto cmd = write32(target_.va, 1);
  ring_->submit(std::span<const uint32_t>(cmd.data(), 3));  // 3 of WRITE32's 4 dwords
  EXPECT_NE(fault_text().find("runs past the end"), std::string::npos);
  EXPECT_EQ(slots()[0], 0u);
}

TEST_F(CpuRingTest, WrapsWithSkip) {
  start(16);
  // A NOP of 3 dwords first, so the 4-dword writes do not divide the ring evenly: every wrap needs a SKIP.
  const uint32_t nop[3] = {make_header(Opcode::nop, 3), 0, 0};
  ring_->submit(nop);
  for (uint32_t i = 0; i < 200; ++i) {
    const auto cmd = write32(target_.va + 4 * (i % 1000), i + 1);
    ring_->submit(cmd);
  }
  ASSERT_TRUE(ring_->wait_consumed(ring_->write_pointer()));
  EXPECT_FALSE(dev_->has_error()) << dev_->describe_state();
  for (uint32_t i = 0; i < 200; ++i) ASSERT_EQ(slots()[i], i + 1) << i;
}

TEST_F(CpuRingTest, SubmissionLargerThanTheRing) {
  start(16);
  std::vector<uint32_t> words;
  for (uint32_t i = 0; i < 300; ++i) {
    const auto cmd = write32(target_.va + 4 * i, 1000 + i);
    words.insert(words.end(), cmd.begin(), cmd.end());
  }
  ring_->submit(words);
  ASSERT_TRUE(ring_->wait_consumed(ring_->write_pointer()));
  EXPECT_FALSE(dev_->has_error()) << dev_->describe_state();
  for (uint32_t i = 0; i < 300; ++i) ASSERT_EQ(slots()[i], 1000 + i) << i;
}

TEST_F(CpuRingTest, UnknownOpcodeFaults) {
  start(64);
  const uint32_t bad[2] = {0x7fu | (2u << 16), 0};
  ring_->submit(bad);
  const auto later = write32(target_.va, 5);
  ring_->submit(later);
  const std::string msg = fault_text();
  EXPECT_NE(msg.find("unknown opcode"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ring dword 0"), std::string::npos) << msg;
  ASSERT_TRUE(ring_->wait_consumed(ring_->write_pointer()));  // dropped, not stuck
  EXPECT_EQ(slots()[0], 0u);
  EXPECT_TRUE(worker_->faulted());
}

TEST_F(CpuRingTest, MalformedLengthFaults) {
  start(64);
  const auto ok = write32(target_.va, 1);
  ring_->submit(ok);
  uint32_t bad[5] = {make_header(Opcode::write32, 5), 0, 0, 0, 0};
  ring_->submit(bad);
  const std::string msg = fault_text();
  EXPECT_NE(msg.find("length does not match"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ring dword 4"), std::string::npos) << msg;
  EXPECT_EQ(slots()[0], 1u);
}

TEST_F(CpuRingTest, MisalignedAndUnmappedWritesFault) {
  start(64);
  const auto cmd = write32(target_.va + 2, 1);
  ring_->submit(cmd);
  EXPECT_NE(fault_text().find("aligned"), std::string::npos);
}

TEST_F(CpuRingTest, IndirectRunsBoundWordsButNotNestedIndirect) {
  start(64);
  Allocation ib = alloc(4096);
  auto* w = static_cast<uint32_t*>(ib.host_ptr());
  const auto a = write32(target_.va, 11), b = write32(target_.va + 4, 22);
  std::memcpy(w, a.data(), 16);
  std::memcpy(w + 4, b.data(), 16);
  const uint32_t ind[4] = {make_header(Opcode::indirect, 4), static_cast<uint32_t>(ib.va),
                           static_cast<uint32_t>(ib.va >> 32), 8};
  ring_->submit(ind);
  ASSERT_TRUE(ring_->wait_consumed(ring_->write_pointer()));
  EXPECT_EQ(slots()[0], 11u);
  EXPECT_EQ(slots()[1], 22u);
  EXPECT_FALSE(dev_->has_error());

  std::memcpy(w + 8, ind, sizeof ind);  // an INDIRECT that calls itself
  const uint32_t nested[4] = {make_header(Opcode::indirect, 4), static_cast<uint32_t>(ib.va + 32),
                              static_cast<uint32_t>((ib.va + 32) >> 32), 4};
  ring_->submit(nested);
  const std::string msg = fault_text();
  EXPECT_NE(msg.find("INDIRECT inside an INDIRECT"), std::string::npos) << msg;
  EXPECT_NE(msg.find(hex(ib.va + 32)), std::string::npos) << msg;
  dev_->free_memory(ib);
}

TEST(CpuRegistry, NamesAndInstances) {
  Device& a = open_device("CPU");
  EXPECT_EQ(&a, &open_device("CPU:0"));
  EXPECT_EQ(&a, &open_device("cpu:0"));
  EXPECT_EQ(a.name(), "CPU:0");
  Device& b = open_device("CPU:1");
  EXPECT_NE(&a, &b);
  EXPECT_EQ(b.info().interface, "cpu");
  EXPECT_EQ(b.info().compute_queues, 1u);
  EXPECT_EQ(b.info().copy_queues, 1u);
  EXPECT_GT(b.info().memory_bytes, 0u);

  EXPECT_THROW(open_device("AMD"), UnsupportedDriver);
  EXPECT_THROW(open_device("NV:1"), UnsupportedDriver);
  EXPECT_THROW(open_device("SIM-NV:volta"), InvalidArgument);  // not a simulated architecture
  EXPECT_THROW(open_device("CUDA"), UnsupportedDriver);
  for (const char* bad : {"TPU", "CPU:x", "CPU:", "CPU:-1", "SIM-NV", "SIM-AMD:", ""}) {
    if (std::string(bad).empty()) continue;  // empty is "the default device"
    try {
      open_device(bad);
      ADD_FAILURE() << bad << " opened";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find("SIM-AMD:<gfx target>"), std::string::npos) << e.what();
    }
  }
  bool cpu_listed = false;
  for (const auto& [pattern, reason] : probe_report())
    if (pattern == "CPU[:n]") cpu_listed = reason.empty();
  EXPECT_TRUE(cpu_listed);
}

}  // namespace
}  // namespace hcq::cpu
