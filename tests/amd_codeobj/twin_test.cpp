// Host twins: a code object compiled from C runs as its CPU build over a grid, its arguments read from a kernarg
// segment laid out as the GPU ABI says; a kernel without a twin, an unknown address, unmapped kernargs or buffers
// give a DeviceFault that says what happened.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "../common/message_of.hpp"
#include "../common/twin_memory.hpp"
#include "amd/codeobj/code_object.hpp"
#include "cpu/cpu_compiler.hpp"
#include "hcq/backend/os.hpp"
#include "hcq/error.hpp"
#include "kernels.hpp"
#include "twins/twin_registry.hpp"

namespace hcq::sim {
namespace {

using amd::CodeObject;

using test::Memory;

// The GPU ABI kernarg segment of axpb: out, in (8 bytes each), then n, scale, bias (4 bytes each).
struct alignas(8) AxpbArgs {
  uint64_t out, in;
  uint32_t n, scale, bias;
};
static_assert(sizeof(AxpbArgs) == 32 && offsetof(AxpbArgs, n) == 16 && offsetof(AxpbArgs, bias) == 24);

constexpr auto fault_of = hcq::test::message_of<DeviceFault>;

class Twins : public ::testing::Test {
 protected:
  void SetUp() override {
    co_.emplace(CodeObject::parse(amd::test::axpb_code_object("gfx1100")));
    cpu::CpuCompiler cc(real_os());
    ASSERT_EQ(reg_.add_from_source(*co_, cc), 1u);
    reg_.map_image(kBase, *co_);
    mem_.place(kBase, co_->relocations().empty() ? co_->image() : co_->image_at(kBase));
    in_.resize(1000);
    out_.assign(1000, -1.0f);
    for (size_t i = 0; i < in_.size(); ++i) in_[i] = static_cast<float>(i);
    args_ = {reinterpret_cast<uint64_t>(out_.data()), reinterpret_cast<uint64_t>(in_.data()), 1000, 3, 7};
    mem_.ranges = {{&args_, sizeof args_}, {in_.data(), in_.size() * 4}, {out_.data(), out_.size() * 4}};
  }
  std::vector<uint8_t>& uploaded() { return mem_.images.front().second; }
  TwinDispatch dispatch(KernelRef by) const {
    const amd::CodeObjectKernel& k = co_->kernel("axpb");
    TwinDispatch d;
    d.by = by;
    d.address = kBase + (by == KernelRef::code_address ? k.code_offset : k.descriptor_offset);
    d.kernarg_va = reinterpret_cast<uint64_t>(&args_);
    d.groups = {8, 1, 1};  // 8 x 128 = 1024 threads for 1000 elements
    d.local = {128, 1, 1};
    return d;
  }
  void expect_result() const {
    for (size_t i = 0; i < out_.size(); ++i) ASSERT_EQ(out_[i], in_[i] * 3.0f + 7.0f) << i;
  }

  static constexpr uint64_t kBase = 0x7f0000000000ull;
  std::optional<CodeObject> co_;
  TwinRegistry reg_;
  std::vector<float> in_, out_;
  AxpbArgs args_{};
  Memory mem_;
};

TEST_F(Twins, RunsOverTheGridByCodeAddress) {
  reg_.run(dispatch(KernelRef::code_address), mem_.twin());
  expect_result();
}

TEST_F(Twins, RunsByKernelObject) {
  reg_.run(dispatch(KernelRef::kernel_object), mem_.twin());
  expect_result();
}

TEST_F(Twins, ResolveNamesTheKernel) {
  const auto r = reg_.resolve(KernelRef::kernel_object, dispatch(KernelRef::kernel_object).address);
  EXPECT_EQ(r.kernel, "axpb");
  EXPECT_EQ(r.code_object_id, co_->identity());
  EXPECT_EQ(r.image_base, kBase);
  EXPECT_EQ(r.twin.entry.nbufs, 2u);
  EXPECT_EQ(r.twin.entry.nvals, 3u);
}

TEST_F(Twins, MissingTwinIsAClearFault) {
  const CodeObject lds = CodeObject::parse(amd::test::lds_code_object("gfx1100"));
  cpu::CpuCompiler cc(real_os());
  EXPECT_EQ(reg_.add_from_source(lds, cc), 0u);  // IR: no source to build a twin from
  const uint64_t base = kBase + 0x100000;
  reg_.map_image(base, lds);
  mem_.place(base, lds.relocations().empty() ? lds.image() : lds.image_at(base));
  TwinDispatch d = dispatch(KernelRef::code_address);
  d.address = base + lds.kernel("lds_reverse").code_offset;
  const std::string m = fault_of([&] { reg_.run(d, mem_.twin()); });
  EXPECT_NE(m.find("no host twin"), std::string::npos) << m;
  EXPECT_NE(m.find("lds_reverse"), std::string::npos) << m;
  EXPECT_NE(m.find(lds.identity()), std::string::npos) << m;
}

TEST_F(Twins, AddressesThatAreNotKernels) {
  TwinDispatch d = dispatch(KernelRef::code_address);
  d.address = 0x1000;
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("no code object is loaded"), std::string::npos);
  d.address = kBase + co_->kernel("axpb").code_offset + 4;
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("not a kernel entry"), std::string::npos);
  reg_.unmap_image(kBase);
  d = dispatch(KernelRef::code_address);
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("no code object is loaded"), std::string::npos);
}

TEST_F(Twins, UnmappedKernargsFaultAtTheirAddress) {
  TwinDispatch d = dispatch(KernelRef::code_address);
  mem_.ranges.erase(mem_.ranges.begin());  // the kernargs
  try {
    reg_.run(d, mem_.twin());
    ADD_FAILURE() << "ran without its kernargs";
  } catch (const FetchFault& f) {
    EXPECT_EQ(f.address(), d.kernarg_va);
    EXPECT_FALSE(f.no_execute());
    EXPECT_NE(std::string(f.what()).find("kernarg segment"), std::string::npos) << f.what();
  }
}

// A buffer the GPU does not map is handed to the twin as a stand-in: the kernel runs, and its first access there is
// the fault, with its address and kind (here axpb's first load of in[0]).
TEST_F(Twins, AnUnmappedBufferFaultsAtTheKernelsFirstAccess) {
  TwinDispatch d = dispatch(KernelRef::code_address);
  mem_.ranges = {{&args_, sizeof args_}, {out_.data(), out_.size() * 4}};  // `in` unmapped
  const std::optional<GuestFault> f = reg_.run(d, mem_.twin());
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->va, reinterpret_cast<uint64_t>(in_.data()));
  EXPECT_EQ(f->access, GuestAccess::read);
  EXPECT_EQ(out_[0], -1.0f);  // the kernel stopped at the fault: nothing was written before it
}

// The code is fetched from GPU memory: an upload that differs from the loaded code object in one byte faults, and
// the message names where.
TEST_F(Twins, ACorruptUploadFaults) {
  const size_t at = co_->kernel("axpb").code_offset + 4;
  uploaded()[at] ^= 0x5a;
  const std::string m = fault_of([&] { reg_.run(dispatch(KernelRef::code_address), mem_.twin()); });
  EXPECT_NE(m.find(cat("the code in GPU memory differs from the code object loaded at ", hex(kBase), " (first at byte ",
                       at, ":")),
            std::string::npos)
      << m;
  EXPECT_EQ(out_[0], -1.0f);
  mem_.images.clear();  // not uploaded at all
  try {
    reg_.run(dispatch(KernelRef::code_address), mem_.twin());
    ADD_FAILURE() << "ran without its code";
  } catch (const FetchFault& f) {
    EXPECT_EQ(f.address(), kBase);
  }
}

TEST_F(Twins, AnEmptyGridFaults) {
  TwinDispatch d = dispatch(KernelRef::code_address);
  d.groups = {0, 1, 1};
  EXPECT_NE(fault_of([&] { reg_.run(d, mem_.twin()); }).find("empty grid"), std::string::npos);
}

TEST_F(Twins, OverlappingImagesAreRefused) {
  EXPECT_THROW(reg_.map_image(kBase + 64, *co_), InvalidArgument);
  EXPECT_THROW(reg_.map_image(kBase - 64, *co_), InvalidArgument);
}

}  // namespace
}  // namespace hcq::sim
