// QMD launches on the compute engine: a kernel compiled for the CPU and registered as the host twin of a program
// address runs over the QMD's grid, reading its parameters from constant bank 0; QMD release semaphores; a chained
// (dependent) QMD; the report semaphore; and the faults of bad QMDs. QMDs and pushbuffers come from drivers/nv's
// encoders (QmdBuilder, PushbufferEncoder), so this is also their end-to-end check. Ampere and Hopper (QMD V3) and
// Blackwell (QMD V5).
#include <cstring>
#include <optional>

#include "cpu/cpu_compiler.hpp"
#include "engine_fixture.hpp"
#include "hcq/backend/os.hpp"
#include "hcq/error.hpp"
#include "nv/encode.hpp"
#include "nv/facts/qmd.hpp"
#include "sim/nv_engine/twin_launch.hpp"
#include "twins/twin_registry.hpp"

namespace hcq::sim::nv_engine::testing {
namespace {

using nv::NvArch;

constexpr const char* kAddOneSource = R"(
HCQ_KERNEL(add_one, 2, 1) {
  HCQ_FOR_EACH_THREAD(x, y, z) {
    uint32_t i = HCQ_GLOBAL_ID(0, x);
    if (i < HCQ_VAL(0)) HCQ_BUF(uint32_t, 0)[i] = HCQ_BUF(const uint32_t, 1)[i] + 1;
  }
}
)";

constexpr uint64_t kProgVa = 0x30000000, kCbankVa = 0x31000000, kQmdVa = 0x32000000, kInVa = 0x33000000,
                   kOutVa = 0x34000000, kOut2Va = 0x35000000;
constexpr uint32_t kCbankBytes = 0x1000, kN = 100;

// One CPU build of the kernel for the whole test binary.
TwinRegistry& registry() {
  static TwinRegistry* reg = [] {
    auto* r = new TwinRegistry;
    cpu::CpuCompiler cc(real_os());
    r->add_from_source("nv-engine-test-image", "test image", kAddOneSource, {SourceKernel{"add_one", 2u, 1u, 0}}, cc);
    return r;
  }();
  return *reg;
}

class NvEngineLaunch : public ::testing::TestWithParam<NvArch> {
 protected:
  void SetUp() override {
    arch_ = &nv::arch_info(GetParam());
    TwinRegistry& reg = registry();
    reg.unmap_image(kProgVa);
    // The "code" the host maps at kProgVa: a zero-filled page, as the image says (the registry checks it).
    reg.map_image(kProgVa, ImageDesc{"nv-engine-test-image",
                                     std::vector<uint8_t>(4096, 0),
                                     {ImageKernel{"add_one", 0, std::nullopt, arch_->cbank0_param_offset, 64, {}}}});
    options_.launch = [this, twin = twin_launcher(reg)](const Launch& l, ChannelHost& h) {
      launches_.push_back(l);
      return twin(l, h);
    };
    group_ = std::make_unique<EngineGroup>(options_);
    host_.allow_classes({arch_->classes.compute, arch_->classes.copy});
    host_.map(kDataVa, 4096);
    host_.map(kProgVa, 4096);
    host_.map(kCbankVa, 4 * kCbankBytes);
    host_.map(kQmdVa, 4096);
    auto* in = reinterpret_cast<uint32_t*>(host_.map(kInVa, kN * 4));
    for (uint32_t i = 0; i < kN; ++i) in[i] = i * 3;
    host_.map(kOutVa, kN * 4);
    host_.map(kOut2Va, kN * 4);
    ch_ = std::make_unique<TestChannel>(host_, *group_, GetParam(), NvEngineKind::compute);
  }
  void TearDown() override { ch_.reset(); }

  // A QMD at `qmd_va` for add_one(out, in, n) with its parameters in constant bank `bank`.
  std::vector<uint32_t> qmd(uint64_t out, uint64_t in, int bank, std::array<uint32_t, 3> block = {32, 1, 1}) {
    const uint64_t cb = kCbankVa + uint64_t(bank) * kCbankBytes;
    host_.set<uint64_t>(cb + arch_->cbank0_param_offset, out);
    host_.set<uint64_t>(cb + arch_->cbank0_param_offset + 8, in);
    host_.set<uint32_t>(cb + arch_->cbank0_param_offset + 16, kN);
    nv::QmdBuilder b(*arch_);
    std::vector<uint32_t> q(b.layout().size_words);
    nv::QmdProgram p;
    p.code_address = kProgVa;
    p.code_size = 256;
    p.registers = 16;
    b.program(q, p);
    b.launch(q, cb, kCbankBytes, {(kN + 31) / 32, 1, 1}, {block[0], block[1], block[2]});
    return q;
  }
  void put(uint64_t va, const std::vector<uint32_t>& q) { host_.write(va, q); }
  std::vector<uint32_t> launch_push(uint64_t qmd_va) {
    std::vector<uint32_t> w;
    nv::PushbufferEncoder e(*arch_, w);
    e.set_object(nv::pb::kComputeSubchannel, arch_->classes.compute);
    e.memory_barrier();
    e.launch(qmd_va);
    e.signal(kDataVa + 0x80, 11);
    return w;
  }
  std::string only_fault() {
    const auto f = host_.faults();
    EXPECT_EQ(f.size(), 1u);
    return f.empty() ? std::string() : f[0].reason;
  }

  const nv::NvArchInfo* arch_ = nullptr;
  TestHost host_;
  EngineOptions options_;
  std::vector<Launch> launches_;
  std::unique_ptr<EngineGroup> group_;
  std::unique_ptr<TestChannel> ch_;
};

TEST_P(NvEngineLaunch, KernelRunsAsItsTwinAndReleases) {
  std::vector<uint32_t> q = qmd(kOutVa, kInVa, 0);
  nv::QmdBuilder(*arch_).release(q, 0, kDataVa, 0x1234567890ull);
  put(kQmdVa, q);
  ch_->submit(launch_push(kQmdVa));
  ASSERT_EQ(ch_->settle(), RunnerState::idle) << ch_->runner().describe();
  ASSERT_EQ(launches_.size(), 1u);
  const Launch& l = launches_[0];
  EXPECT_EQ(l.program_va, kProgVa);
  EXPECT_EQ(l.cbank0_va, kCbankVa);
  EXPECT_EQ(l.param_va, kCbankVa + arch_->cbank0_param_offset);
  EXPECT_EQ(l.groups, (std::array<uint32_t, 3>{4, 1, 1}));
  EXPECT_EQ(l.local, (std::array<uint32_t, 3>{32, 1, 1}));
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(host_.get<uint32_t>(kOutVa + i * 4), i * 3 + 1) << i;
  EXPECT_EQ(host_.get<uint64_t>(kDataVa), 0x1234567890ull) << "QMD release: 64-bit payload";
  EXPECT_GE(host_.get<uint64_t>(kDataVa + 8), 1000u) << "QMD release: timestamp at +8";
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x80), 11u) << "the host signal after the launch";
}

// The cache actions of a launch as drivers/nv builds it: the memory barrier and the QMD's own data-cache invalidate
// before the grid; the release's FE_SYSMEMBAR after it, before the release's payload lands (so the host, which sees
// the payload, sees the grid's writes); the host's semaphore release after it asks for none.
TEST_P(NvEngineLaunch, LaunchInvalidatesBeforeAndReleaseWritesBackAfter) {
  std::vector<std::string> events;
  host_.recorder.on_caches = [&](uint8_t ops) {
    events.push_back(std::string(ops == kCacheWriteback ? "writeback" : "invalidate") + " (out[0] " +
                     std::to_string(host_.get<uint32_t>(kOutVa)) + ", release " +
                     std::to_string(host_.get<uint64_t>(kDataVa)) + ")");
  };
  std::vector<uint32_t> q = qmd(kOutVa, kInVa, 0);
  nv::QmdBuilder(*arch_).release(q, 0, kDataVa, 7);
  put(kQmdVa, q);
  ch_->submit(launch_push(kQmdVa));
  ASSERT_EQ(ch_->settle(), RunnerState::idle) << ch_->runner().describe();
  EXPECT_EQ(events, (std::vector<std::string>{"invalidate (out[0] 0, release 0)", "invalidate (out[0] 0, release 0)",
                                              "writeback (out[0] 1, release 0)"}));
  EXPECT_EQ(host_.get<uint64_t>(kDataVa), 7u);
}

TEST_P(NvEngineLaunch, ReleaseWithoutTheMembarWritesNothingBack) {
  std::vector<uint32_t> q = qmd(kOutVa, kInVa, 0);
  nv::QmdBuilder(*arch_).release(q, 0, kDataVa, 7);
  nv::qmd::set(q, *nv::qmd::layout(arch_->qmd_version).roles.release[0].membar_type, 0);  // FE_NONE
  put(kQmdVa, q);
  ch_->submit(launch_push(kQmdVa));
  ASSERT_EQ(ch_->settle(), RunnerState::idle) << ch_->runner().describe();
  EXPECT_EQ(host_.cache_ops(), (std::vector<uint8_t>{kCacheInvalidate, kCacheInvalidate}));
}

TEST_P(NvEngineLaunch, ChainedQmdRunsAfterItsParent) {
  std::vector<uint32_t> first = qmd(kOutVa, kInVa, 0);
  std::vector<uint32_t> second = qmd(kOut2Va, kOutVa, 1);  // reads what the first wrote
  nv::QmdBuilder b(*arch_);
  b.chain(first, kQmdVa + 0x400);
  b.release(second, 0, kDataVa + 0x40, 2);
  put(kQmdVa, first);
  put(kQmdVa + 0x400, second);
  ch_->submit(launch_push(kQmdVa));
  ASSERT_EQ(ch_->settle(), RunnerState::idle) << ch_->runner().describe();
  ASSERT_EQ(launches_.size(), 2u);
  EXPECT_EQ(launches_[1].qmd_va, kQmdVa + 0x400);
  for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(host_.get<uint32_t>(kOut2Va + i * 4), i * 3 + 2) << i;
  EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x40), 2u);
}

TEST_P(NvEngineLaunch, ReportSemaphore) {
  const auto& c = ch_->compute_class();
  Push p;
  p.set_object(1, c.class_id);
  p.inc(1, c, "SET_REPORT_SEMAPHORE_A",
        {0, static_cast<uint32_t>(kDataVa + 0x100), 42,
         field(c, "SET_REPORT_SEMAPHORE_D", "OPERATION", std::string_view("RELEASE")) |
             field(c, "SET_REPORT_SEMAPHORE_D", "STRUCTURE_SIZE", std::string_view("ONE_WORD"))});
  ch_->submit(p.w);
  ASSERT_EQ(ch_->settle(), RunnerState::idle) << ch_->runner().describe();
  EXPECT_EQ(host_.get<uint32_t>(kDataVa + 0x100), 42u);
}

// A bad QMD faults the channel (gr_exception or an MMU fault) with a reason naming the QMD field and address;
// nothing after it in the stream runs.
struct BadQmd {
  const char* name;
  std::function<void(const nv::qmd::QmdLayout&, std::vector<uint32_t>&)> spoil;
  ChannelFaultKind kind;
  const char* expect;
};

TEST_P(NvEngineLaunch, BadQmdsFault) {
  namespace q = nv::qmd;
  auto address = [](const q::QmdLayout& l, std::vector<uint32_t>& w, const nv::BitField& lo, const nv::BitField& hi,
                    uint8_t shift, uint64_t va) {
    q::set(w, lo, (va >> shift) & 0xffffffffu);
    q::set(w, hi, (va >> shift) >> 32);
    (void)l;
  };
  const std::vector<BadQmd> cases = {
      {"version", [](const q::QmdLayout& l, auto& w) { q::set(w, *l.roles.major_version, 1); },
       ChannelFaultKind::gr_exception, "QMD_MAJOR_VERSION"},
      {"empty grid", [](const q::QmdLayout& l, auto& w) { q::set(w, *l.roles.grid[1], 0); },
       ChannelFaultKind::gr_exception, "empty grid"},
      {"empty block", [](const q::QmdLayout& l, auto& w) { q::set(w, *l.roles.block[0], 0); },
       ChannelFaultKind::gr_exception, "empty grid"},
      {"too many threads",
       [](const q::QmdLayout& l, auto& w) {
         q::set(w, *l.roles.block[0], 1024);
         q::set(w, *l.roles.block[1], 2);
       },
       ChannelFaultKind::gr_exception, "threads per block"},
      {"program unmapped",
       [&](const q::QmdLayout& l, auto& w) {
         address(l, w, *l.roles.program_address_lower, *l.roles.program_address_upper, l.roles.program_address_shift,
                 0x7000000);
       },
       ChannelFaultKind::mmu_fault, "PROGRAM_ADDRESS 0x7000000"},
      {"no twin there",
       [&](const q::QmdLayout& l, auto& w) {
         address(l, w, *l.roles.program_address_lower, *l.roles.program_address_upper, l.roles.program_address_shift,
                 kCbankVa + 2 * kCbankBytes);
       },
       ChannelFaultKind::gr_exception, "failed"},
      {"cbank0 invalid", [](const q::QmdLayout& l, auto& w) { q::set(w, *l.roles.cbuf[0].valid, 0); },
       ChannelFaultKind::gr_exception, "CONSTANT_BUFFER_VALID_0"},
      {"cbank0 unmapped",
       [&](const q::QmdLayout& l, auto& w) {
         address(l, w, *l.roles.cbuf[0].address_lower, *l.roles.cbuf[0].address_upper, l.roles.cbuf_address_shift,
                 0x6000000);
       },
       ChannelFaultKind::mmu_fault, "constant bank 0"},
      {"bank 2 without a size",
       [](const q::QmdLayout& l, auto& w) {
         q::set(w, *l.roles.cbuf[2].valid, 1);
         q::set(w, *l.roles.cbuf[2].size_shifted4, 0);
       },
       ChannelFaultKind::gr_exception, "CONSTANT_BUFFER_VALID_2 is set and CONSTANT_BUFFER_SIZE_SHIFTED4_2 is 0"},
      {"bank 2 unmapped",
       [&](const q::QmdLayout& l, auto& w) {
         address(l, w, *l.roles.cbuf[2].address_lower, *l.roles.cbuf[2].address_upper, l.roles.cbuf_address_shift,
                 0x6000000);
         q::set(w, *l.roles.cbuf[2].size_shifted4, 1);
         q::set(w, *l.roles.cbuf[2].valid, 1);
       },
       ChannelFaultKind::mmu_fault, "constant bank 2 (0x6000000, 16 bytes) is not mapped"},
      {"release unmapped",
       [&](const q::QmdLayout& l, auto& w) {
         nv::QmdBuilder(*arch_).release(w, 0, 0x5000000, 1);
         (void)l;
       },
       ChannelFaultKind::mmu_fault, "RELEASE0"},
  };
  for (const BadQmd& c : cases) {
    SCOPED_TRACE(c.name);
    ch_.reset();
    const size_t faults_before = host_.faults().size();
    std::vector<uint32_t> w = qmd(kOutVa, kInVa, 0);
    c.spoil(nv::qmd::layout(arch_->qmd_version), w);
    put(kQmdVa, w);
    host_.set<uint64_t>(kDataVa + 0x80, 0);
    ch_ = std::make_unique<TestChannel>(host_, *group_, GetParam(), NvEngineKind::compute);
    ch_->submit(launch_push(kQmdVa));
    ASSERT_EQ(ch_->settle(), RunnerState::faulted) << ch_->runner().describe();
    const auto faults = host_.faults();
    ASSERT_EQ(faults.size(), faults_before + 1);
    const ChannelFault& f = faults.back();
    EXPECT_EQ(f.kind, c.kind) << f.reason;
    EXPECT_NE(f.reason.find(c.expect), std::string::npos) << f.reason;
    EXPECT_NE(f.reason.find("QMD at " + hex(kQmdVa)), std::string::npos) << f.reason;
    EXPECT_NE(f.reason.find("GPFIFO entry 0"), std::string::npos) << f.reason;
    EXPECT_EQ(f.gpfifo_position, 0u);
    EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x80), 0u) << "the signal after the bad launch must not run";
    EXPECT_EQ(ch_->runner().fault().reason, f.reason);
  }
}

// A kernel whose code reads constant bank 2 (as NVRTC compiles sm_86's literal tables: .nv.constant2.<kernel>, in
// the image): the QMD must bind bank 2 to memory holding the image's bytes, big enough. The twin reads its constants
// from its own build, so without this check a QMD missing the bank would pass here and fail on the GPU.
TEST_P(NvEngineLaunch, ConstantBank2MustBeBoundToTheImagesBytes) {
  constexpr uint64_t kBankOffset = 0x100;
  constexpr uint32_t kBankBytes = 48;
  std::vector<uint8_t> image(4096, 0);
  for (uint32_t i = 0; i < kBankBytes; ++i) image[kBankOffset + i] = static_cast<uint8_t>(0xa0 + i);
  TwinRegistry& reg = registry();
  reg.unmap_image(kProgVa);
  reg.map_image(kProgVa, ImageDesc{"nv-engine-test-image",
                                   image,
                                   {ImageKernel{"add_one",
                                                0,
                                                std::nullopt,
                                                arch_->cbank0_param_offset,
                                                64,
                                                {ImageKernel::Bank{2, kBankOffset, kBankBytes}}}}});
  std::memcpy(host_.must(kProgVa, image.size()), image.data(), image.size());
  // A copy of the bank's bytes elsewhere, and memory holding other bytes.
  std::memcpy(host_.must(kCbankVa + 3 * kCbankBytes, kBankBytes), image.data() + kBankOffset, kBankBytes);
  host_.set<uint8_t>(kCbankVa + 2 * kCbankBytes + 5, 0x77);

  struct Case {
    const char* name;
    std::optional<uint64_t> va;  // nullopt: bank 2 not bound
    uint32_t size;
    const char* fault;  // nullptr: runs
  };
  const Case cases[] = {
      {"in the image", kProgVa + kBankOffset, kBankBytes, nullptr},
      {"a copy elsewhere", kCbankVa + 3 * kCbankBytes, kBankBytes, nullptr},
      {"not bound", std::nullopt, 0, "its code reads constant bank 2 (48 bytes), which the launch does not bind"},
      {"too small", kProgVa + kBankOffset, 32, "its code reads 48 bytes of constant bank 2, the launch binds 32"},
      {"other bytes", kCbankVa + 2 * kCbankBytes, kBankBytes, "differs from the image's bank at"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ch_.reset();
    launches_.clear();
    host_.set<uint64_t>(kDataVa + 0x80, 0);
    for (uint32_t i = 0; i < kN; ++i) host_.set<uint32_t>(kOutVa + i * 4, 0);
    std::vector<uint32_t> q = qmd(kOutVa, kInVa, 0);
    if (c.va) {
      // What QmdBuilder::program writes for a bank the loader binds: address, size in 16-byte units, valid.
      nv::QmdBuilder b(*arch_);
      nv::QmdProgram p;
      p.code_address = kProgVa;
      p.code_size = 256;
      p.registers = 16;
      p.banks[2] = {*c.va, c.size};
      std::vector<uint32_t> with_bank(b.layout().size_words);
      b.program(with_bank, p);
      const auto& cb = nv::qmd::layout(arch_->qmd_version).roles.cbuf[2];
      for (const nv::BitField* f : {cb.address_lower, cb.address_upper, cb.size_shifted4, cb.valid})
        nv::qmd::set(q, *f, nv::qmd::get(with_bank, *f));
    }
    put(kQmdVa, q);
    const size_t faults_before = host_.faults().size();
    ch_ = std::make_unique<TestChannel>(host_, *group_, GetParam(), NvEngineKind::compute);
    ch_->submit(launch_push(kQmdVa));
    if (!c.fault) {
      ASSERT_EQ(ch_->settle(), RunnerState::idle) << ch_->runner().describe();
      ASSERT_EQ(launches_.size(), 1u);
      ASSERT_EQ(launches_[0].banks.size(), 1u);
      EXPECT_EQ(launches_[0].banks[0].bank, 2u);
      EXPECT_EQ(launches_[0].banks[0].va, *c.va);
      EXPECT_EQ(launches_[0].banks[0].size, c.size);
      for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(host_.get<uint32_t>(kOutVa + i * 4), i * 3 + 1) << i;
      EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x80), 11u);
      continue;
    }
    ASSERT_EQ(ch_->settle(), RunnerState::faulted) << ch_->runner().describe();
    const auto faults = host_.faults();
    ASSERT_EQ(faults.size(), faults_before + 1);
    EXPECT_EQ(faults.back().kind, ChannelFaultKind::gr_exception) << faults.back().reason;
    EXPECT_NE(faults.back().reason.find(c.fault), std::string::npos) << faults.back().reason;
    EXPECT_EQ(host_.get<uint32_t>(kOutVa + 4), 0u) << "the kernel must not run";
    EXPECT_EQ(host_.get<uint64_t>(kDataVa + 0x80), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, NvEngineLaunch, ::testing::Values(NvArch::ampere, NvArch::hopper, NvArch::blackwell),
                         [](const auto& i) { return std::string(nv::to_string(i.param)); });

}  // namespace
}  // namespace hcq::sim::nv_engine::testing
