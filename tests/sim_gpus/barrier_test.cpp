// Thread kernels (HCQ_THREAD_KERNEL, HCQ_SHARED, HCQ_BARRIER; issue 15) on the CPU device and the six simulated GPUs:
// a tree reduction over shared memory gives the sums a double loop gives; the same kernel with its barrier removed
// gives a wrong result (the host runs each thread in its own context and resumes them in a seeded order, so the
// missing barrier cannot pass by luck); two seeds give two interleavings; the GPU binaries carry the shared size to
// the dispatch (AMD: the code object's group_segment_fixed_size, the AQL packet or COMPUTE_PGM_RSRC2.LDS_SIZE; NV:
// the cubin's .nv.shared section, the QMD); a fault on a thread's own stack ends as the GPU's page fault.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../../drivers/cpu/cpu_device.hpp"
#include "amd/codeobj/code_object.hpp"
#include "amd/decode.hpp"
#include "amd/kfd/amd_program.hpp"
#include "amd/target.hpp"
#include "common/timeline.hpp"
#include "cpu/host_kernel.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "nv/decode.hpp"
#include "nv/rm/nv_device.hpp"
#include "nv/rm/nv_program.hpp"
#include "sim/common/guarded_run.hpp"
#include "sim_gpus/sim_gpus.hpp"

namespace hcq {
namespace {

// 128 threads sum 128 floats each into one output per workgroup. Every round reads what other threads wrote in the
// round before: only the barrier between rounds makes that safe.
constexpr const char* kTreeSum = R"(
HCQ_THREAD_KERNEL(tree_sum, 2, 0) {
  HCQ_SHARED(float, s, 128);
  uint32_t t = HCQ_LOCAL_ID(0);
  s[t] = HCQ_BUF(const float, 1)[HCQ_GLOBAL_ID(0, t)];
  for (uint32_t k = 64; k > 0; k >>= 1) {
    HCQ_BARRIER();
    if (t < k) s[t] += s[t + k];
  }
  if (t == 0) HCQ_BUF(float, 0)[HCQ_GROUP_ID(0)] = s[0];
}
)";
constexpr uint32_t kThreads = 128, kGroups = 6;
constexpr uint32_t kSharedBytes = 128 * 4;

// The mutant: kTreeSum without its barrier.
std::string without_barrier() {
  std::string s = kTreeSum;
  const std::string b = "HCQ_BARRIER();";
  s.replace(s.find(b), b.size(), "");
  return s;
}

// Each thread, after a barrier, takes the next slot of a counter in shared memory and writes its id there: the
// order the threads resumed in. (A race on a GPU; the host runs one thread at a time, which is what it shows.)
constexpr const char* kArrival = R"(
HCQ_THREAD_KERNEL(arrival, 1, 0) {
  HCQ_SHARED(uint32_t, next, 1);
  uint32_t t = HCQ_LOCAL_ID(0);
  if (t == 0) next[0] = 0;
  HCQ_BARRIER();
  uint32_t k = next[0];
  next[0] = k + 1;
  HCQ_BUF(uint32_t, 0)[k] = t;
}
)";

// Thread 3 writes to buffer 0 after the barrier, while the others wait at the second one.
constexpr const char* kFaultAfterBarrier = R"(
HCQ_THREAD_KERNEL(fault_after_barrier, 1, 0) {
  HCQ_SHARED(uint32_t, s, 64);
  uint32_t t = HCQ_LOCAL_ID(0);
  s[t] = t;
  HCQ_BARRIER();
  if (t == 3) HCQ_BUF(uint32_t, 0)[s[t]] = 1;
  HCQ_BARRIER();
}
)";

struct Target {
  std::string vendor;  // "CPU", "SIM-AMD", "SIM-NV"
  std::string target;  // gfx1100, hopper, ... ("" for CPU)
  bool cpu() const { return vendor == "CPU"; }
  test::SimGpu sim() const { return {vendor, target}; }
};
void PrintTo(const Target& t, std::ostream* os) { *os << t.vendor << ":" << t.target; }
std::string target_name(const ::testing::TestParamInfo<Target>& i) {
  if (i.param.cpu()) return "Cpu";
  return (i.param.vendor == "SIM-AMD" ? "SIM_AMD_" : "SIM_NV_") + i.param.target;
}

// Sets HCQ_SIM_THREAD_SEED for its lifetime.
class SeedScope {
 public:
  explicit SeedScope(const char* value) {
    if (const char* old = std::getenv("HCQ_SIM_THREAD_SEED")) old_ = old;
    if (value) setenv("HCQ_SIM_THREAD_SEED", value, 1);
    else unsetenv("HCQ_SIM_THREAD_SEED");
  }
  ~SeedScope() {
    if (old_) setenv("HCQ_SIM_THREAD_SEED", old_->c_str(), 1);
    else unsetenv("HCQ_SIM_THREAD_SEED");
  }

 private:
  std::optional<std::string> old_;
};

class Barriers : public ::testing::TestWithParam<Target> {
 protected:
  void SetUp() override {
    if (GetParam().cpu()) dev_ = std::make_unique<cpu::CpuDevice>("CPU:barriers");
    else dev_ = test::open_machine(GetParam().sim());
    if (dev_->compiler().identity().find("unavailable") != std::string::npos)
      GTEST_SKIP() << "no compiler for this device here: " << dev_->compiler().identity();
  }
  void TearDown() override {
    for (const Allocation& a : allocs_) dev_->free_memory(a);
    allocs_.clear();
  }
  Allocation mem(uint64_t bytes) {
    allocs_.push_back(dev_->alloc_memory(bytes, BufferSpec{.cpu_access = true, .zero = true}));
    return allocs_.back();
  }
  // Runs `name` over `groups` x `threads` and waits: the DeviceFault's message, or "".
  std::string run(Program& p, const LaunchArgs& args, uint32_t groups, uint32_t threads) {
    auto q = dev_->compute_queue();
    q->exec(p, args, Dims{groups, 1u, 1u}, Dims{threads, 1u, 1u});
    q->signal(dev_->timeline_signal(), test::take_timeline_value(*dev_));
    q->submit();
    try {
      dev_->synchronize();
    } catch (const DeviceFault& e) {
      return e.what();
    }
    return {};
  }
  // The tree sums of `src` over kGroups workgroups, and what a double loop gives.
  std::vector<float> sums(const std::string& src, std::vector<double>* want = nullptr) {
    const std::vector<uint8_t> bin = dev_->compiler().compile(src);
    auto p = dev_->load_program("tree_sum", bin);
    Allocation in = mem(kThreads * kGroups * 4), out = mem(kGroups * 4);
    auto* x = static_cast<float*>(in.host_ptr());
    for (uint32_t i = 0; i < kThreads * kGroups; ++i) x[i] = static_cast<float>(i % 17) * 0.25f - 1.0f;
    if (want) {
      want->assign(kGroups, 0.0);
      for (uint32_t g = 0; g < kGroups; ++g)
        for (uint32_t t = 0; t < kThreads; ++t) (*want)[g] += x[g * kThreads + t];
    }
    const std::string fault = run(*p, LaunchArgs{{out.va, in.va}, {}}, kGroups, kThreads);
    EXPECT_EQ(fault, "");
    const auto* o = static_cast<const float*>(out.host_ptr());
    return std::vector<float>(o, o + kGroups);
  }
  std::vector<uint32_t> arrival_order() {
    auto p = dev_->load_program("arrival", dev_->compiler().compile(kArrival));
    Allocation out = mem(64 * 4);
    EXPECT_EQ(run(*p, LaunchArgs{{out.va}, {}}, 1, 64), "");
    const auto* o = static_cast<const uint32_t*>(out.host_ptr());
    return std::vector<uint32_t>(o, o + 64);
  }

  std::unique_ptr<Device> dev_;
  std::vector<Allocation> allocs_;
};

TEST_P(Barriers, TreeReductionSumsLikeADoubleLoop) {
  std::vector<double> want;
  const std::vector<float> got = sums(kTreeSum, &want);
  for (uint32_t g = 0; g < kGroups; ++g) EXPECT_EQ(static_cast<double>(got[g]), want[g]) << "group " << g;
}

// The mutation test: without the barrier, threads read partial sums other threads have not written yet (poison,
// or a value one round early). Deterministic with the default seed.
TEST_P(Barriers, WithoutTheBarrierTheSumIsWrong) {
  SeedScope seed(nullptr);
  std::vector<double> want;
  const std::vector<float> got = sums(without_barrier(), &want);
  uint32_t wrong = 0;
  for (uint32_t g = 0; g < kGroups; ++g) wrong += !(static_cast<double>(got[g]) == want[g]);
  EXPECT_GT(wrong, 0u) << "the barrier-free reduction passed by luck";
}

TEST_P(Barriers, TheSeedPicksTheInterleaving) {
  std::vector<uint32_t> a, b, c;
  {
    SeedScope s("1");
    a = arrival_order();
    b = arrival_order();
  }
  {
    SeedScope s("2");
    c = arrival_order();
  }
  EXPECT_EQ(a, b) << "one seed, two orders";
  EXPECT_NE(a, c) << "two seeds, one order";
  std::vector<uint32_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(sorted[i], i) << "not every thread took one slot";
}

// How a device reports the reason a kernel faulted: the CPU device and SIM-NV put it in the DeviceFault; SIM-AMD
// reports what KFD reports (a hardware exception), the reason being in the simulated queue's record.
void expect_reason(const Target& t, const std::string& why, const std::string& reason) {
  EXPECT_NE(why, "") << "the kernel did not fault";
  if (t.vendor != "SIM-AMD") {
    EXPECT_NE(why.find(reason), std::string::npos) << why;
  }
}

TEST_P(Barriers, ABadSeedIsAClearError) {
  SeedScope s("-1");
  auto p = dev_->load_program("arrival", dev_->compiler().compile(kArrival));
  Allocation out = mem(64 * 4);
  expect_reason(GetParam(), run(*p, LaunchArgs{{out.va}, {}}, 1, 64), "HCQ_SIM_THREAD_SEED=\"-1\"");
}

// Thread 5 leaves before the barrier the others wait at: a hang or undefined on a GPU, a kernel fault here.
TEST_P(Barriers, ABarrierOnlySomeThreadsReachFaultsTheKernel) {
  auto p = dev_->load_program("partial_barrier", dev_->compiler().compile(R"(
HCQ_THREAD_KERNEL(partial_barrier, 1, 0) {
  uint32_t t = HCQ_LOCAL_ID(0);
  if (t == 5) return;
  HCQ_BARRIER();
  HCQ_BUF(uint32_t, 0)[t] = t;
}
)"));
  Allocation out = mem(64 * 4);
  expect_reason(GetParam(), run(*p, LaunchArgs{{out.va}, {}}, 1, 64),
                "thread (5,0,0) of group (0,0,0) ended while 63 of the workgroup's 64 threads wait at barrier 1");
}

// More shared memory than a workgroup has: the GPU compilers refuse it (and the GPU launches check the binary's size
// against the limit); the CPU compiler cannot know, so the runner faults the kernel.
TEST_P(Barriers, TooMuchSharedMemoryFaultsTheKernel) {
  if (!GetParam().cpu()) return;
  auto p = dev_->load_program("big_shared", dev_->compiler().compile(R"(
HCQ_THREAD_KERNEL(big_shared, 1, 0) {
  HCQ_SHARED(float, a, 16384);
  HCQ_SHARED(float, b, 1);
  a[HCQ_LOCAL_ID(0)] = 1.0f;
  b[0] = 2.0f;
  HCQ_BUF(float, 0)[0] = a[0] + b[0];
}
)"));
  Allocation out = mem(64);
  expect_reason(GetParam(), run(*p, LaunchArgs{{out.va}, {}}, 1, 32), "HCQ_SHARED arrays need 65540 bytes");
}

// The GPU binaries say how much shared memory the kernel has, and the launch passes it on.
TEST_P(Barriers, TheSharedSizeReachesTheDispatch) {
  const Target& t = GetParam();
  if (t.cpu()) GTEST_SKIP() << "the CPU device has no shared-memory setting";
  const std::vector<uint8_t> bin = dev_->compiler().compile(kTreeSum);
  auto p = dev_->load_program("tree_sum", bin);
  Allocation buf = mem(kThreads * kGroups * 4);
  auto q = dev_->compute_queue();
  q->exec(*p, LaunchArgs{{buf.va, buf.va}, {}}, Dims{1u, 1u, 1u}, Dims{kThreads, 1u, 1u});
  if (t.vendor == "SIM-AMD") {
    const amd::Target& target = amd::Target::from_gfx(t.target);
    const auto& ap = dynamic_cast<const amd::AmdProgram&>(*p);
    EXPECT_EQ(ap.info().group_segment_size, kSharedBytes);
    EXPECT_EQ(amd::CodeObject::parse(bin).kernel("tree_sum").descriptor.group_segment_fixed_size, kSharedBytes);
    if (target.aql_compute) {
      // The packet is built in side memory at submit; the AQL engine refuses one whose group_segment_size is below
      // the descriptor's fixed size (tests/amd_engine), so the reduction running here shows it arrived.
      EXPECT_EQ(run(*p, LaunchArgs{{buf.va, buf.va}, {}}, 1, kThreads), "");
    } else {
      uint64_t lds = ~0ull;
      for (const amd::DecodedPacket& d : amd::decode_pm4(q->words(), target))
        if (const amd::DecodedField* f = d.field("COMPUTE_PGM_RSRC2.lds_size")) lds = f->value;
      ASSERT_NE(lds, ~0ull);
      EXPECT_EQ(lds, (kSharedBytes + target.lds_granule_bytes - 1) / target.lds_granule_bytes);
    }
  } else {
    const auto& np = dynamic_cast<const nv::NvProgram&>(*p);
    auto& nvd = dynamic_cast<nv::NvDevice&>(*dev_);
    const uint32_t version = nvd.gpu().facts().arch->qmd_version;
    EXPECT_GE(np.kernel().shared_bytes, kSharedBytes);
    EXPECT_LE(np.kernel().shared_bytes, kSharedBytes + 2048) << "more than the system's and compiler's reserve";
    const nv::DecodedEntry qmd = nv::decode_qmd(np.qmd_template(), version);
    const nv::DecodedField* f = qmd.field(version == 5 ? "SHARED_MEMORY_SIZE_SHIFTED7" : "SHARED_MEMORY_SIZE");
    ASSERT_NE(f, nullptr) << "the QMD has no shared memory size";
    EXPECT_GE(version == 5 ? f->value << 7 : f->value, np.kernel().shared_bytes);
  }
}

// A page fault on a thread's own stack (thread 3, while the others wait at a barrier) is the GPU's page fault at
// the address, and the device's next machine runs thread kernels as before.
TEST_P(Barriers, AFaultInAThreadIsThePageFault) {
  const Target& t = GetParam();
  if (t.cpu()) GTEST_SKIP() << "the CPU device runs kernels natively: a wild store is not caught";
  auto p = dev_->load_program("fault_after_barrier", dev_->compiler().compile(kFaultAfterBarrier));
  const uint64_t bogus = 0xdead0000;
  const std::string why = run(*p, LaunchArgs{{bogus}, {}}, 2, 64);
  const std::string at = hex(bogus + 12);
  EXPECT_NE(why.find(at), std::string::npos) << why;
  p.reset();
  TearDown();
  dev_ = test::open_machine(t.sim());
  std::vector<double> want;
  const std::vector<float> got = sums(kTreeSum, &want);
  for (uint32_t g = 0; g < kGroups; ++g) EXPECT_EQ(static_cast<double>(got[g]), want[g]) << "group " << g;
}

INSTANTIATE_TEST_SUITE_P(All, Barriers,
                         ::testing::Values(Target{"CPU", ""}, Target{"SIM-AMD", "gfx942"}, Target{"SIM-AMD", "gfx1100"},
                                           Target{"SIM-AMD", "gfx1201"}, Target{"SIM-NV", "ampere"},
                                           Target{"SIM-NV", "hopper"}, Target{"SIM-NV", "blackwell"}),
                         target_name);

// The jump out of a fiber, without a device: a thread kernel whose thread faults in a guarded run (the twins' way
// of catching a kernel's wild access) ends that run with the fault, and the same OS thread then runs thread kernels
// again, many times over, on the pooled stacks.
void fault_in_thread(const hcq_dispatch* d, hcq_thread_* t) {
  d->barrier_(t);
  if (d->local_id[0] == 7) *reinterpret_cast<volatile uint32_t*>(reinterpret_cast<const uint64_t*>(d->kernargs)[0]) = 1;
  d->barrier_(t);
}
void count_threads(const hcq_dispatch* d, hcq_thread_* t) {
  d->barrier_(t);
  ++*reinterpret_cast<uint32_t*>(reinterpret_cast<const uint64_t*>(d->kernargs)[0]);
}
TEST(SimGuardedFibers, AFaultOnAFiberEndsTheRunAndLeavesTheRunnerUsable) {
  for (int round = 0; round < 50; ++round) {
    sim::GuardedRun guard(nullptr);
    std::byte* bad = guard.stand_in(0xbad000);
    ASSERT_NE(bad, nullptr);
    uint64_t arg = reinterpret_cast<uint64_t>(bad);
    hcq_dispatch d{};
    d.kernargs = reinterpret_cast<const unsigned char*>(&arg);
    for (int i = 0; i < 3; ++i) d.num_groups[i] = d.local_size[i] = 1;
    d.local_size[0] = 32;
    cpu::attach_workgroup_threads(d, round);
    struct Ctx {
      hcq_dispatch* d;
      void (*body)(const hcq_dispatch*, hcq_thread_*);
    } ctx{&d, fault_in_thread};
    auto run = [](void* c) {
      auto* x = static_cast<Ctx*>(c);
      x->d->run_threads_(x->d, x->body);
    };
    const std::optional<sim::GuestFault> f = guard.run(run, &ctx);
    ASSERT_TRUE(f.has_value()) << "round " << round;
    EXPECT_EQ(f->va, 0xbad000u);
    EXPECT_EQ(f->access, sim::GuestAccess::write);

    uint32_t count = 0;
    arg = reinterpret_cast<uint64_t>(&count);
    ctx.body = count_threads;
    EXPECT_FALSE(guard.run(run, &ctx).has_value());
    EXPECT_EQ(count, 32u);
    EXPECT_EQ(cpu::take_workgroup_error(), "");
  }
}

}  // namespace
}  // namespace hcq
