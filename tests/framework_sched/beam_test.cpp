// HCQ_BEAM (framework/engine/beam.hpp): render_c's choices (the heuristics' rendering, every other register tile
// that fits, the plain loops), and the search on the CPU device: it times the first N distinct renderings, keeps the
// fastest of those that compute the heuristics' values (a deliberately wrong one is dropped, never used), stores the
// winner on disk and reuses it without timing. CPU devices only (the suite is named Cpu*, so the simulated GPUs' runs
// leave it out).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "common/message_of.hpp"
#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/beam.hpp"
#include "framework/engine/realize.hpp"
#include "framework_sched/render_inputs.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {
namespace {

TargetFacts avx512_facts(unsigned workers, bool optimize = true) { return avx512_cpu_facts(workers, optimize); }

TEST(CpuBeam, ChoicesAreTheHeuristicsThenEveryTileThenThePlainLoops) {
  const Node k = matmul_kernel(48, 173, 128);
  const TargetFacts facts = avx512_facts(2);
  const size_t n = render_choices(k, facts);
  // 48 x 128 divides many broadcast shapes (both operand orders) but no dot tile (173 is no multiple of 16).
  ASSERT_GE(n, 6u);
  EXPECT_EQ(render_c(k, facts, 0).opts, render_c(k, facts).opts);
  EXPECT_EQ(render_c(k, facts, 0).opts, "THREAD(0,2) UPCAST(0,6) UPCAST(1,64) PACK(1)");
  // Choice 1 is the best-ranked tile, the heuristics' own pick here; the last is no tile at all.
  EXPECT_EQ(render_c(k, facts, 1).opts, "THREAD(0,2) UPCAST(0,6) UPCAST(1,64) PACK(1)");
  const RenderedKernel plain = render_c(k, facts, n - 1);
  EXPECT_EQ(plain.name, "r_48_128_173_up16");
  EXPECT_EQ(plain.opts, "THREAD(0,2) UPCAST(1,16)");
  EXPECT_EQ(test::message_of<InvalidArgument>([&] { render_c(k, facts, n); }),
            cat("render_c: choice ", n, " of a kernel with ", n, " renderings (0 to ", n - 1, ")"));
  // Nothing to choose on a GPU or without optimisation.
  DeviceInfo gpu;
  gpu.name = "hand-made";
  gpu.interface = "kfd";
  gpu.arch = "gfx1100";
  EXPECT_EQ(render_choices(k, target_facts(gpu, 1, true)), 1u);
  EXPECT_EQ(render_choices(k, avx512_facts(2, false)), 1u);
}

// Opts as data: the rendering with given opts, or a refusal that says why (render_with_opts, opts.cpp).
TEST(CpuBeam, OptsRenderTheirChoiceOrAreRefusedWithTheReason) {
  const Node k = matmul_kernel(48, 173, 128);
  const TargetFacts facts = avx512_facts(2);
  for (const std::string opts : {"THREAD(0,2) UPCAST(0,6) UPCAST(1,64) PACK(1)", "THREAD(0,2) UPCAST(1,16)"})
    EXPECT_EQ(render_with_opts(k, facts, opts).opts, opts);
  auto refusal = [&](const std::string& opts) {
    return test::message_of<InvalidArgument>([&] { render_with_opts(k, facts, opts); });
  };
  EXPECT_EQ(
      refusal("UPCAST(0,5) UPCAST(1,64)"),
      "opts \"UPCAST(0,5) UPCAST(1,64)\" for r_48_128_173_up6x64: UPCAST(0,5) does not apply: 5 does not divide axis 0 "
      "(48)");
  EXPECT_EQ(
      refusal("UPCAST(2,4)"),
      "opts \"UPCAST(2,4)\" for r_48_128_173_up6x64: UPCAST(2,4) does not apply: the kernel has output axes 0 to 1");
  EXPECT_EQ(
      refusal("THREAD(0,8) UPCAST(1,16)"),
      "opts \"THREAD(0,8) UPCAST(1,16)\" for r_48_128_173_up6x64: THREAD(0,8) does not apply: the device has 2 workers");
  EXPECT_EQ(
      refusal("UPCAST(0,4) UPCAST(1,16) TC(amx)"),
      "opts \"UPCAST(0,4) UPCAST(1,16) TC(amx)\" for r_48_128_173_up6x64: TC(amx) does not apply: the device's bf16 "
      "path is scalar");
  EXPECT_EQ(refusal("DOT(8)"),
            "opts \"DOT(8)\" for r_48_128_173_up6x64: DOT(8) does not apply: the device's vectors are 16 floats");
  EXPECT_EQ(
      refusal("SPLIT(0,2)"),
      "opts \"SPLIT(0,2)\" for r_48_128_173_up6x64: SPLIT(0,2) does not apply: not an opt (THREAD, UPCAST, PACK, DOT, TC, "
      "MERGE)");
  EXPECT_EQ(refusal("UPCAST 0"), "opts \"UPCAST 0\": \"UPCAST\" is not NAME(arguments)");
  // Each opt applies on its own, but no rendering has them together: the renderings are listed.
  const std::string together = refusal("UPCAST(0,48) UPCAST(1,16)");
  EXPECT_EQ(
      together.rfind("opts \"UPCAST(0,48) UPCAST(1,16)\" for r_48_128_173_up6x64: no rendering has them together; its "
                     "renderings: THREAD(0,2) UPCAST(0,6) UPCAST(1,64) PACK(1) | ",
                     0),
      0u)
      << together;
}

// The search, in a cache directory of its own (the winner is stored under it), on the CPU device.
class CpuBeamSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("hcq-beam-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    ::setenv("HCQ_CACHE_DIR", dir_.c_str(), 1);
    ::setenv("HCQ_BEAM", "3", 1);
    clear_schedule_cache();
  }
  void TearDown() override {
    set_render_hook({});
    ::unsetenv("HCQ_BEAM");
    ::setenv("HCQ_CACHE_DIR", saved_.c_str(), 1);
    if (saved_.empty()) ::unsetenv("HCQ_CACHE_DIR");
    clear_schedule_cache();
    std::filesystem::remove_all(dir_);
  }

  // a @ b on the CPU device against a double loop.
  static void check_product(int64_t M, int64_t K, int64_t N) {
    std::vector<float> av(static_cast<size_t>(M * K)), bv(static_cast<size_t>(K * N));
    for (size_t x = 0; x < av.size(); ++x) av[x] = static_cast<float>((x * 7 + 3) % 19) / 9.0f - 1.0f;
    for (size_t x = 0; x < bv.size(); ++x) bv[x] = static_cast<float>((x * 5 + 1) % 17) / 8.0f - 1.0f;
    const std::vector<float> got = Tensor(av, {M, K}, "CPU").matmul(Tensor(bv, {K, N}, "CPU")).data<float>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double want = 0;
        for (int64_t k = 0; k < K; ++k)
          want += double(av[static_cast<size_t>(i * K + k)]) * bv[static_cast<size_t>(k * N + j)];
        ASSERT_NEAR(got[static_cast<size_t>(i * N + j)], want, 1e-4 * (1 + std::abs(want))) << i << ", " << j;
      }
  }

  static size_t entries(const std::filesystem::path& d) {
    if (!std::filesystem::exists(d)) return 0;
    return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(d), {}));
  }

  std::filesystem::path dir_;
  std::string saved_ = std::getenv("HCQ_CACHE_DIR") ? std::getenv("HCQ_CACHE_DIR") : "";
};

TEST_F(CpuBeamSearch, TimesCandidatesStoresTheWinnerAndReusesIt) {
  const BeamStats before = beam_stats();
  check_product(64, 96, 128);
  const BeamStats searched = beam_stats();
  EXPECT_EQ(searched.searches - before.searches, 1u);  // the product; the copies in and out are no kernels
  EXPECT_EQ(searched.timed - before.timed, 3u);
  EXPECT_EQ(searched.rejected - before.rejected, 0u);
  EXPECT_EQ(entries(dir_ / "beam"), 1u);

  // A new schedule of the same product: the winner comes from the disk, nothing is timed.
  clear_schedule_cache();
  check_product(64, 96, 128);
  const BeamStats reused = beam_stats();
  EXPECT_EQ(reused.searches, searched.searches);
  EXPECT_EQ(reused.timed, searched.timed);
  EXPECT_EQ(reused.cache_hits - searched.cache_hits, 1u);
}

TEST_F(CpuBeamSearch, ARenderingThatComputesOtherValuesIsDroppedNotUsed) {
  // The second distinct rendering of the product's kernel adds 1 to its first output: the search must drop it.
  Device& cpu = open_device("CPU");
  const TargetFacts facts = target_facts(cpu.info(), cpu.info().compute_units, true);
  const Node k = matmul_kernel(64, 96, 128);
  const std::string heuristics = render_c(k, facts).opts;
  std::string wrong;
  for (size_t c = 1; c < render_choices(k, facts) && wrong.empty(); ++c)
    if (render_c(k, facts, c).opts != heuristics) wrong = render_c(k, facts, c).opts;
  ASSERT_FALSE(wrong.empty());
  std::vector<std::string> used;
  set_render_hook([&](RenderedKernel& rk) {
    if (rk.opts == wrong) rk.source.insert(rk.source.rfind('}'), "  b0[0] = b0[0] + 1.0f;\n");
  });

  const BeamStats before = beam_stats();
  check_product(64, 96, 128);  // values right: the wrong rendering was never used
  const BeamStats after = beam_stats();
  EXPECT_EQ(after.searches - before.searches, 1u);
  EXPECT_EQ(after.rejected - before.rejected, 1u);
  EXPECT_EQ(after.timed - before.timed, 2u);
}

}  // namespace
}  // namespace hcq::fw
