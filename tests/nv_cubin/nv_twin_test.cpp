// Host twins of NV kernels: a cubin compiled from C with NVRTC carries its source; the twin registry builds the CPU
// twin from it and runs it over a grid, reading the parameters from a constant-bank-0-shaped buffer (driver prefix,
// then the parameter block at the kernel's param offset), as the simulated GPU does for a QMD launch.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../common/message_of.hpp"
#include "../common/twin_memory.hpp"
#include "cpu/cpu_compiler.hpp"
#include "hcq/backend/os.hpp"
#include "hcq/error.hpp"
#include "nv/cubin/cubin.hpp"
#include "nv_kernels.hpp"
#include "twins/nv_twins.hpp"
#include "twins/twin_registry.hpp"

namespace hcq::sim {
namespace {

constexpr auto fault_of = hcq::test::message_of<DeviceFault>;

using test::Memory;

class NvTwins : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    REQUIRE_NVRTC();
    cubin_.emplace(nv::Cubin::parse(nv::test::cubin_for(GetParam(), nv::test::kAxpbSource)));
    cpu::CpuCompiler cc(real_os());
    ASSERT_EQ(add_from_source(reg_, *cubin_, cc), 1u);
    reg_.map_image(kBase, image_of(*cubin_, kBase));
    mem_.place(kBase, image_of(*cubin_, kBase).bytes);
    in_.resize(1000);
    out_.assign(1000, -1.0f);
    for (size_t i = 0; i < in_.size(); ++i) in_[i] = static_cast<float>(i);
    // cbank0: the driver prefix (garbage the twin must not read as arguments), then out, in, n, scale, bias.
    const nv::CubinKernel& k = cubin_->kernel("axpb");
    cbank0_.assign((k.cbank0_size + 7) / 8, 0xdeadbeefdeadbeefull);
    auto* p = reinterpret_cast<uint8_t*>(cbank0_.data()) + k.param_offset;
    const uint64_t bufs[2] = {reinterpret_cast<uint64_t>(out_.data()), reinterpret_cast<uint64_t>(in_.data())};
    const uint32_t vals[3] = {1000, 3, 7};
    std::memcpy(p, bufs, sizeof bufs);
    std::memcpy(p + sizeof bufs, vals, sizeof vals);
    mem_.ranges = {{cbank0_.data(), cbank0_.size() * 8}, {in_.data(), in_.size() * 4}, {out_.data(), out_.size() * 4}};
  }
  TwinDispatch dispatch() const {
    TwinDispatch d;
    d.by = KernelRef::code_address;  // the QMD's program address
    d.address = kBase + cubin_->kernel("axpb").code_offset;
    d.kernarg_va = reinterpret_cast<uint64_t>(cbank0_.data());
    d.groups = {8, 1, 1};
    d.local = {128, 1, 1};
    // The constant banks the loader binds (the module's bank 4 holds the descriptor's address), in the image.
    for (const nv::CubinConstantBank& b : cubin_->banks_of(cubin_->kernel("axpb")))
      d.banks.push_back({b.bank, kBase + b.offset, b.size});
    return d;
  }
  static constexpr uint64_t kBase = 0x7e0000000000ull;
  std::optional<nv::Cubin> cubin_;
  TwinRegistry reg_;
  std::vector<float> in_, out_;
  std::vector<uint64_t> cbank0_;
  Memory mem_;
};

TEST_P(NvTwins, RunsOverTheGridReadingCbank0) {
  reg_.run(dispatch(), mem_.twin());
  for (size_t i = 0; i < out_.size(); ++i) ASSERT_EQ(out_[i], in_[i] * 3.0f + 7.0f) << i;
}

TEST_P(NvTwins, ResolveNamesTheKernelAndItsParameterWindow) {
  const auto r = reg_.resolve(KernelRef::code_address, dispatch().address);
  EXPECT_EQ(r.kernel, "axpb");
  EXPECT_EQ(r.code_object_id, cubin_->identity());
  EXPECT_EQ(r.kernarg_offset, cubin_->kernel("axpb").param_offset);
  EXPECT_EQ(r.kernarg_segment_size, 32u);
  EXPECT_EQ(r.twin.entry.nbufs, 2u);
  EXPECT_EQ(r.twin.entry.nvals, 3u);
}

TEST_P(NvTwins, FaultsSayWhatHappened) {
  TwinDispatch d = dispatch();
  d.address += 16;
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("not a kernel entry"), std::string::npos);
  d = dispatch();
  d.by = KernelRef::kernel_object;  // cubins have no kernel descriptors
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("not a kernel descriptor"), std::string::npos);
  // A bank the kernel's code reads (the module's bank 4) left unbound, or bound to other bytes.
  d = dispatch();
  ASSERT_FALSE(d.banks.empty());
  const uint32_t bank = d.banks[0].bank;
  d.banks.erase(d.banks.begin());
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find(cat("reads constant bank ", bank)), std::string::npos);
  d = dispatch();
  d.banks[0].va = reinterpret_cast<uint64_t>(in_.data()) + 4;
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("differs from the image's bank"), std::string::npos);
  d = dispatch();
  mem_.ranges.erase(mem_.ranges.begin());  // cbank0 unmapped
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("kernarg segment"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Archs, NvTwins, ::testing::Values("sm_80", "sm_90", "sm_100"));

TEST(NvTwinsSource, ACubinWithoutSourceHasNoTwinsAndSaysSoAtDispatch) {
  REQUIRE_NVRTC();
  // The loader tests' CUDA-only source: its cubin carries that source, which the CPU compiler cannot build.
  const nv::Cubin c = nv::Cubin::parse(nv::test::cubin_for("sm_90", nv::test::kSharedGlobalSource));
  TwinRegistry reg;
  cpu::CpuCompiler cc(real_os());
  EXPECT_THROW(add_from_source(reg, c, cc), CompileError);
  reg.map_image(0x100000, image_of(c, 0x100000));
  TwinDispatch d;
  d.address = 0x100000 + c.kernel("bounded").code_offset;
  const std::string m =
      fault_of([&] { reg.run(d, TwinMemory{[](uint64_t, uint64_t) -> std::byte* { return nullptr; }}); });
  EXPECT_NE(m.find("no host twin"), std::string::npos) << m;
  EXPECT_NE(m.find("bounded"), std::string::npos) << m;
}

}  // namespace
}  // namespace hcq::sim
