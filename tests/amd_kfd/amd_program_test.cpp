// AMD programs on SIM-AMD: AmdDevice::compiler()/load_program(), the facts AmdProgram gives a queue, and a kernel
// run through the simulated GPU (PM4 engine -> host twin) from a hand-built PM4 stream on a raw KFD queue.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "amd/codeobj/code_object.hpp"
#include "amd/encode.hpp"
#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/amd_program.hpp"
#include "amd/target.hpp"
#include "amd_codeobj/kernels.hpp"
#include "hcq/compiler.hpp"
#include "hcq/error.hpp"
#include "sim/kfd/sim_amd_device.hpp"

namespace hcq::amd {
namespace {

class AmdProgramTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    dev_ = sim::open_sim_amd_gpu(cat("SIM-AMD:", GetParam()), GetParam());
    amd_ = dynamic_cast<AmdDevice*>(dev_.get());
    ASSERT_NE(amd_, nullptr);
  }
  std::unique_ptr<AmdProgram> load(const std::string& name, std::span<const uint8_t> bin) {
    std::unique_ptr<Program> p = dev_->load_program(name, bin);
    auto* ap = dynamic_cast<AmdProgram*>(p.get());
    if (!ap) return nullptr;
    p.release();
    return std::unique_ptr<AmdProgram>(ap);
  }
  Allocation host_mem(uint64_t size) {
    BufferSpec s;
    s.cpu_access = true;
    s.zero = true;
    return dev_->alloc_memory(size, s);
  }
  std::unique_ptr<Device> dev_;
  AmdDevice* amd_ = nullptr;
};

TEST_P(AmdProgramTest, CompilerIsTheDevicesTarget) {
  Compiler& c = dev_->compiler();
  EXPECT_EQ(&c, &dev_->compiler()) << "one compiler per device";
  EXPECT_EQ(c.target(), GetParam());
  const std::vector<uint8_t> bin = c.compile_cached(test::kAxpbSource);
  EXPECT_EQ(CodeObject::parse(bin).gfx(), GetParam());
  auto p = load("axpb", bin);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->name(), "axpb");
}

TEST_P(AmdProgramTest, KernelFacts) {
  const std::vector<uint8_t>& bin = test::axpb_code_object(GetParam());
  const CodeObject co = CodeObject::parse(bin);
  auto p = load("axpb", bin);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->num_bufs(), 2u);
  EXPECT_EQ(p->num_vals(), 3u);
  EXPECT_EQ(p->limits().max_threads_per_group, 1024u);
  EXPECT_EQ(p->code_va() % 256, 0u);
  EXPECT_EQ(p->descriptor_va() % 64, 0u);
  const AmdProgram::Facts& f = p->facts();
  EXPECT_EQ(f.code_object_id, co.identity());
  EXPECT_GE(f.kernarg_segment_size, 8u * 2 + 4u * 3);
  EXPECT_GE(p->kernarg_bytes(), f.kernarg_segment_size);
  EXPECT_EQ(p->launch_block_offset(), 8u * 2 + 4u * 3);
  EXPECT_GE(p->kernarg_bytes(), p->launch_block_offset() + AmdProgram::kLaunchBlockBytes);
  EXPECT_EQ(p->kernarg_bytes() % 16, 0u);
  // The info is what the code object says for this target.
  const KernelInfo want = co.info("axpb", Target::from_gfx(GetParam()));
  EXPECT_EQ(p->info().rsrc1, want.rsrc1);
  EXPECT_EQ(p->info().rsrc2, want.rsrc2);
  EXPECT_EQ(p->info().rsrc3, want.rsrc3);
  EXPECT_EQ(p->wants_dispatch_ptr(), want.dispatch_ptr);
  EXPECT_FALSE(p->wants_dispatch_ptr()) << "HCQ kernels read their dims from the launch block, not the dispatch packet";
  if (std::string(GetParam()) == "gfx942") {
    EXPECT_FALSE(p->info().wave32);
  }
  // The uploaded image is on the GPU at those addresses: the descriptor there points at the code.
  const auto* kd_bytes = reinterpret_cast<const std::byte*>(p->descriptor_va());
  const KernelDescriptor kd = KernelDescriptor::parse(std::span<const std::byte>(kd_bytes, 64));
  EXPECT_EQ(static_cast<int64_t>(p->descriptor_va()) + kd.kernel_code_entry_byte_offset,
            static_cast<int64_t>(p->code_va()));
  EXPECT_EQ(std::memcmp(reinterpret_cast<const void*>(f.image_va), co.image_at(f.image_va).data(), f.image_size), 0);
}

TEST_P(AmdProgramTest, KernargLayout) {
  auto p = load("axpb", test::axpb_code_object(GetParam()));
  ASSERT_NE(p, nullptr);
  std::vector<uint8_t> ka(p->kernarg_bytes(), 0xff);
  const uint64_t bufs[2] = {0x1111222233334444ull, 0x5555666677778888ull};
  const uint32_t vals[3] = {1, 2, 3};
  p->write_kernargs(ka.data(), bufs, 2, vals, 3, {5, 6, 7}, {64, 2, 1});
  uint64_t b[2];
  uint32_t v[3], launch[6];
  std::memcpy(b, ka.data(), 16);
  std::memcpy(v, ka.data() + 16, 12);
  std::memcpy(launch, ka.data() + 28, 24);
  EXPECT_EQ(b[1], bufs[1]);
  EXPECT_EQ(v[2], 3u);
  const uint32_t want_launch[6] = {5, 6, 7, 64, 2, 1};  // num_groups[3], local_size[3]
  for (int i = 0; i < 6; ++i) EXPECT_EQ(launch[i], want_launch[i]) << i;
  EXPECT_EQ(ka.back(), 0u) << "the rest of the segment is zeroed";
  EXPECT_THROW(p->write_kernargs(ka.data(), bufs, 1, vals, 3, {1, 1, 1}, {1, 1, 1}), InvalidArgument);
}

TEST_P(AmdProgramTest, UnknownKernelNamesWhatIsThere) {
  try {
    load("nope", test::axpb_code_object(GetParam()));
    ADD_FAILURE() << "loaded a kernel that is not there";
  } catch (const InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'nope'"), std::string::npos) << m;
    EXPECT_NE(m.find("axpb"), std::string::npos) << m;
    EXPECT_NE(m.find(dev_->name()), std::string::npos) << m;
  }
}

TEST_P(AmdProgramTest, GarbageBinaryIsACompileError) {
  const std::vector<uint8_t> junk(300, 0x42);
  EXPECT_THROW(dev_->load_program("axpb", junk), CompileError);
  EXPECT_THROW(dev_->load_program("axpb", std::span<const uint8_t>()), CompileError);
  // A truncated code object.
  const std::vector<uint8_t>& bin = test::axpb_code_object(GetParam());
  EXPECT_THROW(dev_->load_program("axpb", std::span<const uint8_t>(bin.data(), bin.size() / 2)), CompileError);
}

TEST_P(AmdProgramTest, OtherTargetsCodeObjectIsRefused) {
  const char* other = std::string(GetParam()) == "gfx1100" ? "gfx942" : "gfx1100";
  try {
    load("axpb", test::axpb_code_object(other));
    ADD_FAILURE() << "loaded a " << other << " code object on " << GetParam();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("axpb"), std::string::npos) << e.what();
  }
}

// The signal word as the host reads it: an acquire load, which orders the kernel's results the GPU wrote before it.
uint32_t load_signal(const void* p) { return __atomic_load_n(static_cast<const uint32_t*>(p), __ATOMIC_ACQUIRE); }

// Writes `words` at the start of the ring of a fresh PM4 queue and waits until *done == value (or 10 s).
bool run_pm4(KfdQueue& q, const std::vector<uint32_t>& words, const void* done, uint32_t value) {
  EXPECT_LE(words.size() * 4, q.ring_bytes());
  std::memcpy(q.ring(), words.data(), words.size() * 4);
  q.submit(words.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (load_signal(done) != value) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

TEST_P(AmdProgramTest, TwinRunsAHandBuiltPm4Dispatch) {
  auto p = load("axpb", test::axpb_code_object(GetParam()));
  ASSERT_NE(p, nullptr);
  const uint32_t n = 1000, local = 64, groups = (n + local - 1) / local;
  Allocation in = host_mem(n * 4), out = host_mem(n * 4), ka = host_mem(p->kernarg_bytes()), sig = host_mem(64);
  for (uint32_t i = 0; i < n; ++i) static_cast<float*>(in.host_ptr())[i] = static_cast<float>(i);
  const uint64_t bufs[2] = {out.va, in.va};
  const uint32_t vals[3] = {n, 3, 7};
  // The kernel reads its group counts and workgroup size from the launch block after the values.
  p->write_kernargs(ka.host_ptr(), bufs, 2, vals, 3, {groups, 1, 1}, {local, 1, 1});

  const Target& t = Target::from_gfx(GetParam());
  std::vector<uint32_t> words;
  Pm4Encoder e(t, words);
  DispatchArgs a;
  a.code_addr = p->code_va();
  a.kernarg_addr = ka.va;
  a.scratch_addr = 0u;
  a.groups = {Sym(groups), Sym(1u), Sym(1u)};
  a.local = {Sym(local), Sym(1u), Sym(1u)};
  e.exec(p->info(), a);
  e.signal(sig.va, 42u);
  auto q = amd_->gpu().create_queue(KfdQueue::Type::compute_pm4, 1 << 14);
  ASSERT_TRUE(run_pm4(*q, words, sig.host_ptr(), 42)) << dev_->describe_state();
  const float* o = static_cast<const float*>(out.host_ptr());
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(o[i], static_cast<float>(i) * 3 + 7) << i;
  EXPECT_FALSE(dev_->has_error());

  // Once the program is gone its twin is unmapped: the same dispatch faults the queue, KFD says so, and the
  // device turns that into its sticky error.
  const uint64_t code = p->code_va();
  p.reset();
  a.code_addr = code;
  auto q2 = amd_->gpu().create_queue(KfdQueue::Type::compute_pm4, 1 << 14);
  std::vector<uint32_t> w2;
  Pm4Encoder e2(t, w2);
  e2.exec(KernelInfo{}, a);
  e2.signal(sig.va, 43u);
  std::memcpy(q2->ring(), w2.data(), w2.size() * 4);
  q2->submit(w2.size());
  for (int i = 0; i < 10000 && !dev_->has_error(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(dev_->has_error()) << "the faulted dispatch raised no KFD exception event";
  EXPECT_THROW(dev_->synchronize(), DeviceFault);
  EXPECT_NE(load_signal(sig.host_ptr()), 43u) << "the signal after a faulted dispatch ran";
  for (const Allocation& m : {in, out, ka, sig}) dev_->free_memory(m);
}

INSTANTIATE_TEST_SUITE_P(SimAmd, AmdProgramTest, ::testing::Values("gfx1100", "gfx942", "gfx1201"));

}  // namespace
}  // namespace hcq::amd
