// GPU codegen chosen per device (issue 15): vector loads and stores in elementwise kernels, and launch shapes and
// thresholds that follow the device's wave size, shared memory and compute units (DeviceInfo). The values are checked
// against plain double loops over the same host data; the rendered sources (through the renderer's hook) show where
// the vectors are. Tests that run kernels need a GPU (HCQ_DEVICE, gpu_under_test.hpp); the render-only ones run
// everywhere, for a device described by hand.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/realize.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "framework_sched/row_sum_kernel.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {
namespace {

std::vector<float> wavy(size_t n, double phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + phase) * 3.0);
  return v;
}

// The sources of the kernels the next realizes render, kept while it lives.
class RenderedSources {
 public:
  RenderedSources() {
    clear_schedule_cache();
    set_render_hook([this](RenderedKernel& k) { kernels_.push_back(k); });
  }
  ~RenderedSources() {
    set_render_hook({});
    clear_schedule_cache();
  }
  const std::vector<RenderedKernel>& kernels() const { return kernels_; }
  std::string all() const {
    std::string s;
    for (const RenderedKernel& k : kernels_) s += k.source;
    return s;
  }

 private:
  std::vector<RenderedKernel> kernels_;
};

// A device described by hand, as a backend would report it.
DeviceInfo gpu_info(const char* interface, uint32_t wave, uint32_t units, uint32_t shared) {
  DeviceInfo i;
  i.name = "hand-made";
  i.interface = interface;
  i.arch = "test";
  i.wave_size = wave;
  i.compute_units = units;
  i.shared_memory_bytes = shared;
  return i;
}

// out[i] = in[i] * 2 over n elements of `t`, built as the lowering would.
Node scale_kernel(int64_t n, DType t, int64_t offset = 0) {
  const Node out = make_node(Op::PARAM, t, {}, {0, n});
  const Node in = make_node(Op::PARAM, t, {}, {1, n + offset});
  const Node r = make_node(Op::RANGE, kIndex, {}, {0, n, 0});
  const Node at = offset ? make_node(Op::ADD, kIndex, {r, const_node(kIndex, offset)}) : r;
  const Node v = make_node(Op::MUL, t, {make_node(Op::LOAD, t, {in, at}), const_node(t, 2.0)});
  return make_node(Op::KERNEL, t, {make_node(Op::STORE, t, {out, r, v})});
}

constexpr const char* kVectorLoad = "*(const hcq_f32x4*)&b1[";
constexpr const char* kVectorStore = "*(hcq_f32x4*)&b0[";

// ---- render only: every build runs these

// The facts a GPU's report leads to: 4 waves per workgroup, grouped reduces below one wave per compute unit, splits
// below one output per unit, 16-byte vectors. gfx942's figures (wave64, 304 CUs, 64 KiB LDS) and an RTX 3090's
// (warp 32, 82 SMs, 99 KiB).
TEST(FrameworkGpuFacts, FollowTheDevicesReport) {
  const TargetFacts cdna = target_facts(gpu_info("sim-kfd", 64, 304, 64 * 1024), 1, true);
  EXPECT_EQ(cdna.target, Target::amdgpu);
  EXPECT_EQ(cdna.threads_per_group, 256u);
  EXPECT_EQ(cdna.group_max_outputs, 304 * 64);
  EXPECT_EQ(cdna.group_min_reduce, 256);
  ASSERT_TRUE(cdna.split.has_value());
  EXPECT_EQ(cdna.split->min_reduce, 304 * 256);
  EXPECT_EQ(cdna.split->max_outputs, 303);
  EXPECT_EQ(cdna.split->max_parts, 304);
  EXPECT_EQ(cdna.vector_bytes, 16u);

  const TargetFacts ampere = target_facts(gpu_info("sim-rm", 32, 82, 99 * 1024), 1, true);
  EXPECT_EQ(ampere.target, Target::cuda);
  EXPECT_EQ(ampere.threads_per_group, 128u);
  EXPECT_EQ(ampere.group_max_outputs, 82 * 32);
  EXPECT_EQ(ampere.split->min_reduce, 82 * 128);
  EXPECT_EQ(ampere.split->max_parts, 82);

  // Without optimisation nothing splits. The CPU device splits a reduce of a million elements or more with fewer
  // outputs than workers into at least 8 parts, when it has more than one worker.
  EXPECT_FALSE(target_facts(gpu_info("sim-rm", 32, 82, 99 * 1024), 1, false).split.has_value());
  const TargetFacts cpu = target_facts(gpu_info("cpu", 1, 2, 64 * 1024), 2, true);
  ASSERT_TRUE(cpu.split.has_value());
  EXPECT_EQ(cpu.split->min_reduce, 1 << 20);
  EXPECT_EQ(cpu.split->max_outputs, 1);
  EXPECT_EQ(cpu.split->max_parts, 8);
  EXPECT_EQ(target_facts(gpu_info("cpu", 1, 2, 64 * 1024), 16, true).split->max_parts, 16);
  EXPECT_FALSE(target_facts(gpu_info("cpu", 1, 2, 64 * 1024), 1, true).split.has_value());
  EXPECT_FALSE(target_facts(gpu_info("cpu", 1, 2, 64 * 1024), 2, false).split.has_value());
}

// A grouped reduce's workgroup is four waves: 256 threads on a wave64 device, 128 on a wave32 one; a device with too
// little shared memory for the tree gets one thread per output instead.
TEST(FrameworkGpuFacts, GroupedReduceWorkgroupIsFourWaves) {
  constexpr int64_t outs = 3, len = 5000;
  const Node kernel = row_sum_kernel(outs, len);

  const RenderedKernel w64 = render_c(kernel, target_facts(gpu_info("sim-kfd", 64, 304, 64 * 1024), 1, true));
  EXPECT_EQ(w64.local, (std::array<uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(w64.global, (std::array<uint32_t, 3>{3, 1, 1}));
  EXPECT_NE(w64.source.find("HCQ_SHARED(float, red"), std::string::npos) << w64.source;
  EXPECT_NE(w64.source.find(", 256);"), std::string::npos) << w64.source;

  const RenderedKernel w32 = render_c(kernel, target_facts(gpu_info("sim-kfd", 32, 96, 64 * 1024), 1, true));
  EXPECT_EQ(w32.local, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_NE(w32.source.find(", 128);"), std::string::npos) << w32.source;

  // 512 bytes of shared memory cannot hold 128 partials of 8 bytes: no grouping, one thread per output.
  const RenderedKernel small = render_c(kernel, target_facts(gpu_info("sim-rm", 32, 82, 512), 1, true));
  EXPECT_EQ(small.source.find("HCQ_SHARED"), std::string::npos) << small.source;
}

// Vectors where the count and alignment allow: 1024 floats are 256 runs of 4, one vector load and one store each
// (128 threads, 2 workgroups); 1023 add a guarded partial run; 3 are too few for one vector; an index offset by one
// element is not 16-byte aligned, so that load stays scalar (the store, at the output's own index, is a vector).
TEST(FrameworkGpuFacts, VectorsWhereCountAndAlignmentAllow) {
  const TargetFacts f = target_facts(gpu_info("sim-kfd", 32, 96, 64 * 1024), 1, true);
  const RenderedKernel k1024 = render_c(scale_kernel(1024, DType::float32), f);
  EXPECT_EQ(k1024.name, "E_1024");
  EXPECT_EQ(k1024.global, (std::array<uint32_t, 3>{2, 1, 1}));
  EXPECT_EQ(k1024.local, (std::array<uint32_t, 3>{128, 1, 1}));
  EXPECT_NE(k1024.source.find(kVectorLoad), std::string::npos) << k1024.source;
  EXPECT_NE(k1024.source.find(kVectorStore), std::string::npos) << k1024.source;
  EXPECT_NE(k1024.source.find("gi < 256;"), std::string::npos) << k1024.source;
  EXPECT_EQ(k1024.source.find("full"), std::string::npos) << k1024.source;

  const RenderedKernel k1023 = render_c(scale_kernel(1023, DType::float32), f);
  EXPECT_NE(k1023.source.find(kVectorLoad), std::string::npos) << k1023.source;
  EXPECT_NE(k1023.source.find("const hcq_bool full = r0 + 4 <= 1023;"), std::string::npos) << k1023.source;
  EXPECT_NE(k1023.source.find("if (r0 + u < 1023) b0["), std::string::npos) << k1023.source;

  const RenderedKernel k3 = render_c(scale_kernel(3, DType::float32), f);
  EXPECT_EQ(k3.source.find("hcq_f32x4"), std::string::npos) << k3.source;

  const RenderedKernel shifted = render_c(scale_kernel(1024, DType::float32, 1), f);
  EXPECT_EQ(shifted.source.find(kVectorLoad), std::string::npos) << shifted.source;
  EXPECT_NE(shifted.source.find(kVectorStore), std::string::npos) << shifted.source;

  // Halves: 8 per 16 bytes.
  const RenderedKernel half = render_c(scale_kernel(64, DType::float16), f);
  EXPECT_NE(half.source.find("*(const hcq_u16x8*)&b1["), std::string::npos) << half.source;
  EXPECT_NE(half.source.find("gi < 8;"), std::string::npos) << half.source;

  // The CPU device has no GPU vectors (clang vectorises its loops), and neither has an unoptimised GPU kernel.
  EXPECT_EQ(render_c(scale_kernel(1024, DType::float32), target_facts(gpu_info("cpu", 1, 2, 65536), 2, true))
                .source.find("hcq_f32x4"),
            std::string::npos);
  EXPECT_EQ(render_c(scale_kernel(1024, DType::float32), target_facts(gpu_info("sim-kfd", 32, 96, 65536), 1, false))
                .source.find("hcq_f32x4"),
            std::string::npos);
}

// ---- on the GPU under test

// The GPU's own report drives its kernels: a grouped whole sum runs four of its waves per workgroup.
TEST(FrameworkGpuVectors, GroupedReduceLaunchFollowsTheWaveSize) {
  FW_REQUIRE_GPU(gpu);
  const DeviceInfo info = open_device(gpu).info();
  const std::vector<float> x = wavy(3000, 0.5);
  double want = 0;
  for (float v : x) want += v;
  Tensor t(x, {3000}, gpu);
  t.realize();
  RenderedSources seen;
  const double got = t.sum().item();
  ASSERT_EQ(seen.kernels().size(), 1u);
  EXPECT_EQ(seen.kernels()[0].local[0], 4 * info.wave_size);
  EXPECT_EQ(seen.kernels()[0].local[0] % info.wave_size, 0u);
  EXPECT_NEAR(got, want, 1e-3);
}

// c = a * b + 1 over float32 for counts around the vector width: equal to a double loop (one rounding of each float
// op, so within a few ulps), vectors in the source exactly where the count allows one.
TEST(FrameworkGpuVectors, ElementwiseCountsMatchADoubleLoop) {
  FW_REQUIRE_GPU(gpu);
  for (int64_t n : {1, 3, 4, 5, 1023, 1024, 4097}) {
    const std::vector<float> av = wavy(static_cast<size_t>(n), 0.1), bv = wavy(static_cast<size_t>(n), 1.3);
    Tensor a(av, {n}, gpu), b(bv, {n}, gpu);
    a.realize();
    b.realize();
    RenderedSources seen;
    const std::vector<float> got = (a * b + 1.0f).data<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double want = double(av[static_cast<size_t>(i)]) * bv[static_cast<size_t>(i)] + 1.0;
      ASSERT_NEAR(got[static_cast<size_t>(i)], want, 1e-5 * (1 + std::abs(want))) << "n " << n << ", element " << i;
    }
    const std::string src = seen.all();
    EXPECT_EQ(src.find(kVectorLoad) != std::string::npos, n >= 4) << "n " << n << "\n" << src;
    EXPECT_EQ(src.find(kVectorStore) != std::string::npos, n >= 4) << "n " << n << "\n" << src;
    EXPECT_EQ(src.find("if (full)") != std::string::npos, n >= 4 && n % 4 != 0) << "n " << n << "\n" << src;
  }
}

// Views: a transposed operand reads across rows (scalar loads); a slice that starts one element in is contiguous but
// not aligned (scalar loads, and a vector store at the output's own index). Values as loops over the host data.
TEST(FrameworkGpuVectors, ViewsFallBackToScalarLoads) {
  FW_REQUIRE_GPU(gpu);
  constexpr int64_t R = 33, C = 64;
  const std::vector<float> xv = wavy(R * C, 0.7);
  Tensor x(xv, {R, C}, gpu);
  x.realize();
  {
    RenderedSources seen;
    const std::vector<float> got = (x.transpose() + 1.0f).data<float>();  // (C, R)
    for (int64_t i = 0; i < C; ++i)
      for (int64_t j = 0; j < R; ++j)
        ASSERT_EQ(got[static_cast<size_t>(i * R + j)], xv[static_cast<size_t>(j * C + i)] + 1.0f) << i << ", " << j;
    EXPECT_EQ(seen.all().find(kVectorLoad), std::string::npos) << seen.all();
  }
  {
    RenderedSources seen;
    const std::vector<float> got = (x.reshape({R * C}).slice(0, 1, R * C) * 3.0f).data<float>();
    for (int64_t i = 0; i + 1 < R * C; ++i)
      ASSERT_EQ(got[static_cast<size_t>(i)], xv[static_cast<size_t>(i + 1)] * 3.0f) << i;
    EXPECT_EQ(seen.all().find(kVectorLoad), std::string::npos) << seen.all();
    EXPECT_NE(seen.all().find(kVectorStore), std::string::npos) << seen.all();
  }
}

// float16 and bfloat16: 8 elements per vector. Values chosen exact in both (quarters below 16, small integers), so
// the double loop's sums are the exact answers.
TEST(FrameworkGpuVectors, HalfTypesUseEightWideVectors) {
  FW_REQUIRE_GPU(gpu);
  constexpr int64_t n = 1027;
  std::vector<float> av(n), bv(n);
  for (int64_t i = 0; i < n; ++i) {
    av[static_cast<size_t>(i)] = static_cast<float>(i % 61) * 0.25f;
    bv[static_cast<size_t>(i)] = static_cast<float>(i % 7) - 3.0f;
  }
  for (DType t : {DType::float16, DType::bfloat16}) {
    Tensor a = Tensor(av, {n}, gpu).cast(t), b = Tensor(bv, {n}, gpu).cast(t);
    a.realize();
    b.realize();
    RenderedSources seen;
    Tensor c = a + b;
    c.realize();
    EXPECT_NE(seen.all().find("*(const hcq_u16x8*)&b1["), std::string::npos) << seen.all();
    EXPECT_NE(seen.all().find("*(hcq_u16x8*)&b0["), std::string::npos) << seen.all();
    const std::vector<float> got = c.cast(DType::float32).data<float>();
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(got[static_cast<size_t>(i)], double(av[static_cast<size_t>(i)]) + bv[static_cast<size_t>(i)])
          << dtype_name(t) << " element " << i;
  }
}

}  // namespace
}  // namespace hcq::fw
