// NV programs (drivers/nv/rm/nv_program.cpp) on the whole simulated GPU: cubins from NvCompiler loaded and launched
// through QMDs, with symbolic dims and values, signals riding on the QMD's release semaphore, back-to-back kernels
// chained through the QMD, and the load-time refusals.
#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/signal.hpp"
#include "nv/decode.hpp"
#include "nv/rm/nv_device.hpp"
#include "nv/rm/nv_program.hpp"
#include "nv/rm/nv_queue.hpp"
#include "sim/nv/sim_nv_device.hpp"
#include "sim/nv/sim_nv_gpus.hpp"

namespace hcq::nv {
namespace {

using namespace std::chrono_literals;

constexpr const char* kAddValue = R"(
HCQ_KERNEL(add_value_u32, 2, 2) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[i] = HCQ_BUF(uint32_t, 1)[i] + HCQ_VAL(1);
  }
}
)";

class Mem {
 public:
  Mem(Device& dev, uint64_t size) : dev_(dev), a_(dev.alloc_memory(size, BufferSpec{.cpu_access = true})) {
    std::memset(host(), 0, size);
  }
  ~Mem() { dev_.free_memory(a_); }
  uint64_t va() const { return a_.va; }
  uint32_t* host() const { return static_cast<uint32_t*>(a_.host_ptr()); }

 private:
  Device& dev_;
  Allocation a_;
};

class NvProgramOnSim : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_nv_gpu(cat("SIM-NV:", GetParam()), GetParam());
    if (dev_->compiler().identity().find("unavailable") != std::string::npos)
      GTEST_SKIP() << "no NVRTC here: " << dev_->compiler().identity();
    cubin_ = dev_->compiler().compile(kAddValue);
    prog_ = dev_->load_program("add_value_u32", cubin_);
  }
  void TearDown() override {
    prog_.reset();
    dev_.reset();
  }
  Device& dev() { return *dev_; }
  const NvArchInfo& arch() { return *static_cast<NvDevice&>(dev()).gpu().facts().arch; }
  size_t count(std::span<const uint32_t> words, std::string_view op) {
    size_t n = 0;
    for (const DecodedEntry& e : decode_pushbuffer(words, arch())) n += e.op == op;
    return n;
  }
  std::unique_ptr<Device> dev_;
  std::vector<uint8_t> cubin_;
  std::unique_ptr<Program> prog_;
};

TEST_P(NvProgramOnSim, LoadReportsTheKernel) {
  EXPECT_EQ(prog_->num_bufs(), 2u);
  EXPECT_EQ(prog_->num_vals(), 2u);
  const auto& p = static_cast<const NvProgram&>(*prog_);
  EXPECT_EQ(p.code_va() % 128, 0u);
  EXPECT_GE(p.cbank0_template().size(), p.param_offset() + 16u);
  EXPECT_GE(prog_->limits().max_threads_per_group, 32u);
  EXPECT_LE(prog_->limits().max_threads_per_group, arch().max_threads_per_block);
  // The QMD template decodes as the architecture's version with the program address set.
  const DecodedEntry q = decode_qmd(p.qmd_template(), arch().qmd_version);
  EXPECT_TRUE(q.ok()) << q.error;
}

TEST_P(NvProgramOnSim, LoadRefusesUnknownKernelsAndBadBytes) {
  EXPECT_THROW(dev().load_program("nope", cubin_), InvalidArgument);
  std::vector<uint8_t> junk(256, 0x5a);
  EXPECT_THROW(dev().load_program("add_value_u32", junk), CompileError);
  // A stack the 16 MiB local window cannot hold (the cubin's EIATTR_MIN_STACK_SIZE or FRAME_SIZE, format SVAL:
  // 04 <attr> 08 00, symbol, value) is refused at load, not wrapped into a small size.
  std::vector<uint8_t> big = cubin_;
  size_t patched = 0;
  for (size_t i = 0; i + 12 <= big.size(); ++i) {
    if (big[i] != 0x04 || (big[i + 1] != 0x11 && big[i + 1] != 0x12) || big[i + 2] != 8 || big[i + 3] != 0) continue;
    const uint32_t huge = 0xfffffff0u;
    std::memcpy(big.data() + i + 8, &huge, 4);
    ++patched;
  }
  if (patched == 0) GTEST_SKIP() << "this cubin states no stack or frame size";
  try {
    dev().load_program("add_value_u32", big);
    ADD_FAILURE() << "a 4 GiB stack was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("bytes of stack per thread"), std::string::npos) << e.what();
  }
}

TEST_P(NvProgramOnSim, ExecWithSymbolicDimsAndValues) {
  const uint32_t n = 1000;
  Mem in(dev(), 4 * 1024), out(dev(), 4 * 1024);
  for (uint32_t i = 0; i < 1024; ++i) in.host()[i] = i;
  OwnedSignal done(0, "nv done");
  auto q = dev().compute_queue();
  q->exec(*prog_, LaunchArgs{{Var{0}, in.va()}, {Var{1}, Var{2}}}, Dims{Var{3}, 1u, 1u}, Dims{Var{4}, 1u, 1u});
  q->signal(done, Var{5});
  for (uint64_t round = 1; round <= 3; ++round) {
    const uint64_t local = 32 * round;
    std::vector<uint64_t> vars{out.va(), n, 100 * round, (n + local - 1) / local, local, round};
    q->submit(vars);
    dev().wait_signal(done, round, 10s);
    for (uint32_t i = 0; i < 1024; ++i)
      ASSERT_EQ(out.host()[i], i < n ? i + 100 * round : 0u) << "round " << round << " i " << i;
  }
  // Patched dims outside the limits are refused at submit, before anything is patched.
  std::vector<uint64_t> bad{out.va(), n, 1, 1, uint64_t{prog_->limits().max_local[0]} + 1, 9};
  EXPECT_THROW(q->submit(bad), InvalidArgument);
}

TEST_P(NvProgramOnSim, SignalAfterExecRidesTheQmd) {
  Mem in(dev(), 256), out(dev(), 256);
  for (uint32_t i = 0; i < 64; ++i) in.host()[i] = i;
  OwnedSignal done(0, "nv done");
  auto q = dev().compute_queue();
  q->exec(*prog_, LaunchArgs{{out.va(), in.va()}, {64u, 7u}}, Dims{2u, 1u, 1u}, Dims{32u, 1u, 1u});
  const size_t after_exec = q->words().size();
  q->signal(done, 0x3'0000'0001ull);
  EXPECT_EQ(q->words().size(), after_exec) << "the signal added pushbuffer methods";
  EXPECT_EQ(count(q->words(), "SEND_PCAS_A"), 1u);
  q->submit();
  dev().wait_signal(done, 0x3'0000'0001ull, 10s);
  EXPECT_NE(done->timestamp(), 0u);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(out.host()[i], i + 7);
}

TEST_P(NvProgramOnSim, BackToBackKernelsAreChainedThroughTheQmd) {
  Mem a(dev(), 256), b(dev(), 256), c(dev(), 256);
  for (uint32_t i = 0; i < 64; ++i) a.host()[i] = i;
  OwnedSignal mid(0, "nv mid"), done(0, "nv done");
  auto q = dev().compute_queue();
  q->exec(*prog_, LaunchArgs{{b.va(), a.va()}, {64u, 1u}}, Dims{2u, 1u, 1u}, Dims{32u, 1u, 1u});
  q->signal(mid, 1);  // rides the first QMD
  q->exec(*prog_, LaunchArgs{{c.va(), b.va()}, {64u, 10u}}, Dims{1u, 1u, 1u}, Dims{64u, 1u, 1u});
  q->exec(*prog_, LaunchArgs{{a.va(), c.va()}, {64u, 100u}}, Dims{4u, 1u, 1u}, Dims{16u, 1u, 1u});
  q->signal(done, 1);
  // One launch from the pushbuffer; the other two start from their predecessor's DEPENDENT_QMD0.
  EXPECT_EQ(count(q->words(), "SEND_PCAS_A"), 1u);
  q->submit();
  dev().wait_signal(done, 1, 10s);
  EXPECT_EQ(mid->value(), 1u);
  for (uint32_t i = 0; i < 64; ++i) {
    ASSERT_EQ(b.host()[i], i + 1);
    ASSERT_EQ(c.host()[i], i + 11);
    ASSERT_EQ(a.host()[i], i + 111);
  }
}

TEST_P(NvProgramOnSim, KernelsSeparatedByABarrierAreLaunchedEach) {
  Mem a(dev(), 256), b(dev(), 256);
  for (uint32_t i = 0; i < 64; ++i) a.host()[i] = i;
  auto q = dev().compute_queue();
  OwnedSignal done(0, "nv done");
  q->exec(*prog_, LaunchArgs{{b.va(), a.va()}, {64u, 1u}}, Dims{2u, 1u, 1u}, Dims{32u, 1u, 1u});
  q->memory_barrier();
  q->exec(*prog_, LaunchArgs{{a.va(), b.va()}, {64u, 1u}}, Dims{2u, 1u, 1u}, Dims{32u, 1u, 1u});
  q->signal(done, 1);
  EXPECT_EQ(count(q->words(), "SEND_PCAS_A"), 2u);
  EXPECT_EQ(count(q->words(), "INVALIDATE_SHADER_CACHES_NO_WFI"), 1u);
  q->submit();
  dev().wait_signal(done, 1, 10s);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(a.host()[i], i + 2);
}

TEST_P(NvProgramOnSim, ExecOnTheCopyQueueIsRefused) {
  auto q = dev().copy_queue();
  EXPECT_THROW(q->exec(*prog_, LaunchArgs{{0x1000u, 0x2000u}, {1u, 1u}}, Dims{1u, 1u, 1u}, Dims{1u, 1u, 1u}),
               InvalidArgument);
}

TEST_P(NvProgramOnSim, EagerLaunchIsTimed) {
  Mem in(dev(), 256), out(dev(), 256);
  for (uint32_t i = 0; i < 64; ++i) in.host()[i] = i;
  std::array<uint64_t, 2> bufs{out.va(), in.va()};
  std::array<uint32_t, 2> vals{64, 5};
  const std::optional<double> t = (*prog_)(bufs, vals, {2, 1, 1}, {32, 1, 1}, /*wait=*/true);
  ASSERT_TRUE(t.has_value());
  EXPECT_GE(*t, 0.0);
  for (uint32_t i = 0; i < 64; ++i) ASSERT_EQ(out.host()[i], i + 5);
}

// Eager launches on one thread reuse the QMD of the last launch of the same program with the same dims, rewriting
// only constant bank 0's address: each launch must still run its own kernel, dims and arguments.
TEST_P(NvProgramOnSim, RepeatedEagerLaunchesRunTheirOwnKernelDimsAndArguments) {
  constexpr const char* kMulValue = R"(
HCQ_KERNEL(mul_value_u32, 2, 2) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[i] = HCQ_BUF(uint32_t, 1)[i] * HCQ_VAL(1);
  }
}
)";
  auto mul = dev().load_program("mul_value_u32", dev().compiler().compile(kMulValue));
  Mem in(dev(), 256), out(dev(), 256);
  for (uint32_t i = 0; i < 64; ++i) in.host()[i] = i;
  struct Launch {
    const Program* program;
    uint32_t value;
    Dims global, local;
    uint32_t covered;  // threads launched
  };
  const Dims two{2u, 1u, 1u}, warp{32u, 1u, 1u};
  const std::vector<Launch> launches = {
      {prog_.get(), 1, two, warp, 64},
      {prog_.get(), 2, two, warp, 64},                            // same launch: served from the memo
      {prog_.get(), 3, Dims{1u, 1u, 1u}, Dims{16u, 1u, 1u}, 16},  // other dims
      {prog_.get(), 4, two, warp, 64},
      {mul.get(), 5, two, warp, 64},  // same dims, other kernel
      {prog_.get(), 6, two, warp, 64},
      {prog_.get(), 7, two, warp, 64},
  };
  OwnedSignal done(0, "nv done");
  for (size_t k = 0; k < launches.size(); ++k) {
    const Launch& l = launches[k];
    std::memset(out.host(), 0xff, 256);
    auto q = dev().compute_queue();
    q->exec(*l.program, LaunchArgs{{out.va(), in.va()}, {64u, l.value}}, l.global, l.local);
    q->signal(done, k + 1);
    q->submit();
    dev().wait_signal(done, k + 1, 10s);
    for (uint32_t i = 0; i < 64; ++i) {
      const uint32_t want = i >= l.covered ? 0xffffffffu : l.program == mul.get() ? i * l.value : i + l.value;
      ASSERT_EQ(out.host()[i], want) << "launch " << k << " i " << i;
    }
  }
}

// A kernel with a dynamically indexed local array keeps it in local memory: the program asks for shader local
// memory per thread (QMD) and the device backs it before the launch (SET_SHADER_LOCAL_MEMORY on the channel).
TEST_P(NvProgramOnSim, KernelWithLocalMemoryRuns) {
  constexpr const char* kLocal = R"(
HCQ_KERNEL(local_table, 1, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    (void)y; (void)z;
    uint32_t table[256];
    for (uint32_t k = 0; k < 256; ++k) table[(k * HCQ_VAL(0)) % 256u] = k * 3u + x;
    HCQ_BUF(uint32_t, 0)[x] = table[(x + HCQ_VAL(0)) % 256u];
  }
}
)";
  const std::vector<uint8_t> bin = dev().compiler().compile(kLocal);
  auto p = dev().load_program("local_table", bin);
  const auto& nvp = static_cast<const NvProgram&>(*p);
  ASSERT_GT(nvp.kernel().stack_bytes, 0u) << "the compiler kept the table in registers (frame "
                                          << nvp.kernel().frame_bytes << "); the test needs local memory";
  const DecodedEntry q = decode_qmd(nvp.qmd_template(), arch().qmd_version);
  const DecodedField* slm =
      q.field(arch().qmd_version == 5 ? "SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4" : "SHADER_LOCAL_MEMORY_HIGH_SIZE");
  ASSERT_NE(slm, nullptr);
  EXPECT_NE(slm->value, 0u);
  Mem out(dev(), 256);
  OwnedSignal done(0, "nv done");
  auto qu = dev().compute_queue();
  qu->exec(*p, LaunchArgs{{out.va()}, {5u}}, Dims{1u, 1u, 1u}, Dims{32u, 1u, 1u});
  qu->signal(done, 1);
  qu->submit();
  dev().wait_signal(done, 1, 10s);
  // table[(k * 5) % 256] = 3k + x: slot s holds k = s * 205 % 256 (205 = 5^-1 mod 256).
  for (uint32_t x = 0; x < 32; ++x) ASSERT_EQ(out.host()[x], ((x + 5) * 205u % 256u) * 3u + x);
}

// Every kernel, with a stack or not, gets CUDA's reserved top of the local window (0x240 bytes per thread) in its
// QMD and in the channel's backing, which is sized for every TPC the chip was designed with (the GPU picks a TPC's
// share by its physical number), not only the enabled ones.
TEST_P(NvProgramOnSim, EveryKernelGetsTheReservedLocalMemoryForEveryTpc) {
  const auto& nvp = static_cast<const NvProgram&>(*prog_);
  const uint32_t want = nvp.kernel().stack_bytes + kCudaLocalReserve;
  const DecodedEntry q = decode_qmd(nvp.qmd_template(), arch().qmd_version);
  const bool v5 = arch().qmd_version == 5;
  const DecodedField* slm = q.field(v5 ? "SHADER_LOCAL_MEMORY_HIGH_SIZE_SHIFTED4" : "SHADER_LOCAL_MEMORY_HIGH_SIZE");
  ASSERT_NE(slm, nullptr);
  EXPECT_EQ(slm->value, v5 ? (want + 15) / 16 : (want + 15) / 16 * 16);
  auto& nv = static_cast<NvDevice&>(dev());
  const NvGpuFacts& f = nv.gpu().facts();
  const sim::SimNvGpuSpec& spec = sim::SimNvGpuSpec::of(GetParam());
  EXPECT_EQ(f.max_tpcs, spec.gpcs * spec.tpcs_per_gpc);
  EXPECT_LT(f.sm_count / f.sms_per_tpc, f.max_tpcs) << "the simulated chips are floorswept";
  const NvDevice::LocalMemory lm = nv.local_memory();
  EXPECT_EQ(lm.per_thread, (want + 31) / 32 * 32);
  const uint64_t warp = (uint64_t{lm.per_thread} * 32 + 0x1ff) / 0x200 * 0x200;
  EXPECT_EQ(lm.per_tpc, (warp * f.max_warps_per_sm * f.sms_per_tpc + 0x7fff) / 0x8000 * 0x8000);
  EXPECT_GE(lm.total, lm.per_tpc * f.max_tpcs);
}

// The driver's words in constant bank 0: the shared and local windows and the stack top, where each architecture's
// SASS reads them (words 6..11 up to Hopper, 188..191 and 223 on Blackwell).
TEST(NvCbank0Prefix, WindowsAndStackTopWhereTheArchitectureReadsThem) {
  for (const NvArchInfo& a : nv_arch_table()) {
    SCOPED_TRACE(a.sm);
    CubinKernel k;
    k.param_offset = a.cbank0_param_offset;
    k.param_size = 16;
    const std::vector<uint8_t> cb = cbank0_prefix(a, k);
    ASSERT_GE(cb.size(), a.cbank0_param_offset + 16u);
    auto u64 = [&](uint32_t word) {
      uint64_t v;
      std::memcpy(&v, cb.data() + word * 4, 8);
      return v;
    };
    auto u32 = [&](uint32_t word) {
      uint32_t v;
      std::memcpy(&v, cb.data() + word * 4, 4);
      return v;
    };
    const bool blackwell = a.arch == NvArch::blackwell;
    const uint32_t windows = blackwell ? 188 : 6, top = blackwell ? 223 : 10;
    EXPECT_EQ(u64(windows), kSharedWindow);
    EXPECT_EQ(u64(windows + 2), kLocalWindow);
    EXPECT_EQ(u32(top), 0xfffdc0u);
    // Nothing else is written.
    size_t nonzero = 0;
    for (uint8_t b : cb) nonzero += b != 0;
    size_t expected = 0;
    for (uint64_t v : {kSharedWindow, kLocalWindow, uint64_t{0xfffdc0}})
      for (; v; v >>= 8) expected += (v & 0xff) != 0;
    EXPECT_EQ(nonzero, expected);
  }
  // A bank whose parameters start inside the prefix is taken as the cubin lays it out: nothing written.
  CubinKernel low;
  low.param_offset = 0x20;
  low.param_size = 8;
  for (uint8_t b : cbank0_prefix(arch_info(NvArch::hopper), low)) EXPECT_EQ(b, 0);
}

INSTANTIATE_TEST_SUITE_P(Gpus, NvProgramOnSim, ::testing::Values("ampere", "hopper", "blackwell"));

}  // namespace
}  // namespace hcq::nv
