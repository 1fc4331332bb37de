// Scratch (private segment) on SIM-AMD: a C kernel with a dynamically indexed local array, compiled by the AMD
// compiler, runs through the PM4 (gfx1100, gfx1201) or AQL (gfx942) engine, which checks the scratch setup the
// queue gave it; the encoded COMPUTE_TMPRING_SIZE / scratch base are what the facts say; growth and the limit.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "amd/decode.hpp"
#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/amd_program.hpp"
#include "amd/kfd/amd_scratch.hpp"
#include "amd/target.hpp"
#include "hcq/compiler.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "sim/kfd/sim_amd_device.hpp"

namespace hcq::amd {
namespace {

using namespace std::chrono_literals;

// out[i] = sum over k of (tmp[(7k + i) & 63] ^ k), tmp[k] = in[i] * 64 + k: the index depends on the thread, so
// the array cannot live in registers and goes to the private segment.
constexpr char kScratchSource[] = R"(
HCQ_KERNEL(scratch_mix, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) {
      volatile uint32_t tmp[64];
      uint32_t v = HCQ_BUF(const uint32_t, 1)[i];
      for (uint32_t k = 0; k < 64; ++k) tmp[k] = v * 64u + k;
      uint32_t s = 0;
      for (uint32_t k = 0; k < 64; ++k) s += tmp[(k * 7u + i) & 63u] ^ k;
      HCQ_BUF(uint32_t, 0)[i] = s;
    }
  }
}
)";

uint32_t expected(uint32_t v, uint32_t i) {
  uint32_t s = 0;
  for (uint32_t k = 0; k < 64; ++k) s += (v * 64u + ((k * 7u + i) & 63u)) ^ k;
  return s;
}

class AmdScratchTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_amd_gpu(cat("SIM-AMD:", GetParam()), GetParam());
    amd_ = dynamic_cast<AmdDevice*>(dev_.get());
    ASSERT_NE(amd_, nullptr);
  }
  void TearDown() override {
    for (const Allocation& a : allocs_) dev_->free_memory(a);
    if (amd_) {
      EXPECT_FALSE(dev_->has_error()) << dev_->describe_state();
    }
  }
  Allocation host_mem(uint64_t size) {
    BufferSpec s;
    s.cpu_access = true;
    s.zero = true;
    allocs_.push_back(dev_->alloc_memory(size, s));
    return allocs_.back();
  }
  const Target& target() const { return Target::from_gfx(GetParam()); }
  std::unique_ptr<Program> load() {
    return dev_->load_program("scratch_mix", dev_->compiler().compile_cached(kScratchSource));
  }
  ScratchLayout layout_for(uint32_t lane_bytes) {
    const KfdNode& n = amd_->gpu().node();
    return scratch_layout(target(), lane_bytes, n.cu_count(), n.array_count, n.num_xcc);
  }

  std::unique_ptr<Device> dev_;
  AmdDevice* amd_ = nullptr;
  std::vector<Allocation> allocs_;
};

TEST_P(AmdScratchTest, KernelWithPrivateSegmentRuns) {
  std::unique_ptr<Program> p = load();
  const auto* ap = dynamic_cast<const AmdProgram*>(p.get());
  ASSERT_NE(ap, nullptr);
  EXPECT_GE(ap->info().private_segment_size, 64u * 4) << "the local array is in the private segment";
  EXPECT_TRUE(ap->needs_scratch(target()));

  const uint32_t n = 300;
  Allocation in = host_mem(n * 4), out = host_mem(n * 4);
  auto* vi = static_cast<uint32_t*>(in.host_ptr());
  for (uint32_t i = 0; i < n; ++i) vi[i] = i * 3 + 1;
  OwnedSignal done(0, "scratch done");
  auto q = dev_->compute_queue();
  q->exec(*p, LaunchArgs{{out.va, in.va}, {n}}, Dims{5u, 1u, 1u}, Dims{64u, 1u, 1u});
  q->signal(done, 1u);
  q->submit();
  dev_->wait_signal(done, 1, 10s);
  const auto* vo = static_cast<const uint32_t*>(out.host_ptr());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(vo[i], expected(vi[i], i)) << i;
}

TEST_P(AmdScratchTest, EncodedRegistersAreTheFacts) {
  if (target().aql_compute) GTEST_SKIP() << GetParam() << " dispatches through AQL: the registers are the CP's";
  std::unique_ptr<Program> p = load();
  const auto* ap = dynamic_cast<const AmdProgram*>(p.get());
  Allocation buf = host_mem(256);
  auto q = dev_->compute_queue();
  q->exec(*p, LaunchArgs{{buf.va, buf.va}, {0u}}, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
  const std::vector<DecodedPacket> pkts = decode_pm4(q->words(), target());
  uint64_t tmpring = ~0ull, lo = ~0ull, hi = ~0ull;
  for (const DecodedPacket& d : pkts) {
    ASSERT_TRUE(d.ok()) << d.op << ": " << d.error;
    if (const DecodedField* f = d.field("COMPUTE_TMPRING_SIZE")) tmpring = f->value;
    if (const DecodedField* f = d.field("COMPUTE_DISPATCH_SCRATCH_BASE_LO")) lo = f->value;
    if (const DecodedField* f = d.field("COMPUTE_DISPATCH_SCRATCH_BASE_HI")) hi = f->value;
  }
  ASSERT_NE(tmpring, ~0ull);
  ASSERT_NE(lo, ~0ull);
  ASSERT_NE(hi, ~0ull);
  // The ring starts at twice nothing: the kernel's own per-lane size, in whole WAVESIZE units for wave64.
  const ScratchLayout want = layout_for(ap->info().private_segment_size);
  EXPECT_EQ(tmpring, want.tmpring);
  const Register& r = *target().regs->find("COMPUTE_TMPRING_SIZE");
  uint64_t waves = 0, units = 0;
  for (const Field& f : r.fields) {
    if (f.name == "waves") waves = f.get(static_cast<uint32_t>(tmpring));
    if (f.name == "wavesize") units = f.get(static_cast<uint32_t>(tmpring));
  }
  EXPECT_GT(waves, 0u);
  EXPECT_GE(units << target().regs->scratch_wave_shift, uint64_t{ap->info().private_segment_size} * 64);
  const uint64_t base = ((hi << 32) | lo) << 8;
  EXPECT_NE(base, 0u);
  EXPECT_EQ(base % 256, 0u);
  // An ordinary kernel gets no scratch: TMPRING_SIZE 0, base 0.
  auto plain = dev_->load_program("axpb", dev_->compiler().compile_cached(R"(
HCQ_KERNEL(axpb, 2, 3) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(float, 0)[i] = HCQ_BUF(const float, 1)[i] * (float)HCQ_VAL(1) + (float)HCQ_VAL(2);
  }
}
)"));
  auto q2 = dev_->compute_queue();
  q2->exec(*plain, LaunchArgs{{buf.va, buf.va}, {0u, 1u, 1u}}, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
  for (const DecodedPacket& d : decode_pm4(q2->words(), target()))
    if (const DecodedField* f = d.field("COMPUTE_TMPRING_SIZE")) {
      EXPECT_EQ(f->value, 0u);
    }
}

TEST_P(AmdScratchTest, LayoutFollowsTheGeneration) {
  const bool gc9 = target().family == GfxFamily::gc9_4;
  const ScratchLayout l = layout_for(260);
  EXPECT_EQ(l.wave_bytes % (gc9 ? 1024u : 256u), 0u) << "WAVESIZE units: 1 KiB on GC 9, 256 bytes on GC 11/12";
  EXPECT_GE(l.lane_bytes, 260u);
  EXPECT_EQ(l.wave_bytes, l.lane_bytes * 64);
  const KfdNode& n = amd_->gpu().node();
  // Every slot the TMPRING value describes has memory: WAVES per XCC (GC 9) or per shader engine (GC 11/12).
  const uint64_t groups = gc9 ? n.num_xcc : n.array_count;
  EXPECT_GE(l.bytes, uint64_t{l.waves} * l.wave_bytes * groups);
  EXPECT_LE(uint64_t{l.waves} * groups, 32ull * n.cu_count()) << "no more waves than scratch slots";
}

TEST_P(AmdScratchTest, TooMuchScratchIsAClearError) {
  const uint32_t max = max_scratch_lane_bytes(target());
  EXPECT_NO_THROW(layout_for(max));
  try {
    layout_for(max + 1);
    ADD_FAILURE() << "accepted " << max + 1 << " bytes per work-item";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(std::to_string(max + 1)), std::string::npos) << m;
    EXPECT_NE(m.find(std::to_string(max)), std::string::npos) << m;
    EXPECT_NE(m.find(GetParam()), std::string::npos) << m;
  }
  AmdScratch s(amd_->gpu(), target(), nullptr, "test queue");
  EXPECT_THROW(s.ensure(max + 1), InvalidArgument);
  EXPECT_EQ(s.layout().lane_bytes, 0u) << "a refused size allocates nothing";
}

TEST_P(AmdScratchTest, GrowsAndOlderQueuesStillRun) {
  AmdScratch s(amd_->gpu(), target(), nullptr, "test queue");
  const AmdScratch::Use a = s.ensure(16);
  EXPECT_EQ(s.ensure(16).base, a.base) << "covered: no new buffer";
  const AmdScratch::Use b = s.ensure(s.layout().lane_bytes + 1);
  EXPECT_NE(b.base, a.base);
  EXPECT_GE(s.layout().lane_bytes, 2 * layout_for(16).lane_bytes) << "growth at least doubles";

  // A bound queue keeps the scratch it was encoded with after the ring grows for a larger kernel.
  std::unique_ptr<Program> p = load();
  const uint32_t n = 64;
  Allocation in = host_mem(n * 4), out = host_mem(n * 4);
  auto* vi = static_cast<uint32_t*>(in.host_ptr());
  for (uint32_t i = 0; i < n; ++i) vi[i] = i + 5;
  OwnedSignal done(0, "scratch done");
  auto q = dev_->compute_queue();
  q->exec(*p, LaunchArgs{{out.va, in.va}, {n}}, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
  q->signal(done, Var{0});
  q->bind();
  const uint64_t v1[] = {1}, v3[] = {3};
  q->submit(v1);
  dev_->wait_signal(done, 1, 10s);
  // A kernel needing more scratch per lane grows the ring's buffer (what a larger C kernel would do).
  std::unique_ptr<Program> big = dev_->load_program("scratch_big", dev_->compiler().compile_cached(R"(
HCQ_KERNEL(scratch_big, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) {
      volatile uint32_t tmp[256];
      for (uint32_t k = 0; k < 256; ++k) tmp[k] = HCQ_BUF(const uint32_t, 1)[i] + k;
      HCQ_BUF(uint32_t, 0)[i] = tmp[(i * 13u) & 255u];
    }
  }
}
)"));
  auto g = dev_->compute_queue();
  g->exec(*big, LaunchArgs{{out.va, in.va}, {n}}, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
  g->signal(done, 2u);
  g->submit();
  dev_->wait_signal(done, 2, 10s);
  const auto* vo = static_cast<const uint32_t*>(out.host_ptr());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(vo[i], vi[i] + ((i * 13u) & 255u)) << i;
  q->submit(v3);
  dev_->wait_signal(done, 3, 10s);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(vo[i], expected(vi[i], i)) << i;
}

INSTANTIATE_TEST_SUITE_P(Targets, AmdScratchTest, ::testing::Values("gfx1100", "gfx942", "gfx1201"));

}  // namespace
}  // namespace hcq::amd
