// The schedule cache (the same graph on new buffers hits, a new shape misses) and compile-once (a second process
// under HCQ_ASSERT_COMPILE=1 runs from the disk cache).
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

#include "hcq/tensor.hpp"

extern char** environ;

namespace hcq {
namespace {

Tensor mlp_layer(const Tensor& x, const Tensor& w, const Tensor& b) { return (x.matmul(w) + b).relu(); }

Tensor input(Shape s, float seed) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t k = 0; k < v.size(); ++k) v[k] = seed + 0.01f * static_cast<float>(k % 101);
  return Tensor(v, s);
}

TEST(FrameworkScheduleCache, SameGraphOnNewBuffersHitsNewShapeMisses) {
  auto run = [](Shape xs) {
    Tensor x = input(xs, 0.5f), w = input({xs[1], 7}, -0.25f), b = input({7}, 0.1f);
    mlp_layer(x, w, b).realize();
  };
  run({3, 5});  // builds (and compiles) once
  FrameworkCounters before = framework_counters();
  run({3, 5});  // new buffers, same structure
  FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.schedule_hits - before.schedule_hits, 1u);
  EXPECT_EQ(after.schedule_misses - before.schedule_misses, 0u);
  EXPECT_EQ(after.compiles - before.compiles, 0u);
  run({4, 5});  // a new shape: a new schedule
  FrameworkCounters later = framework_counters();
  EXPECT_EQ(later.schedule_misses - after.schedule_misses, 1u);
  EXPECT_EQ(later.schedule_hits - after.schedule_hits, 0u);
}

// A cache hit binds the new buffers: the values are the new inputs', not the first call's.
TEST(FrameworkScheduleCache, AHitComputesOnItsOwnBuffers) {
  for (float seed : {1.0f, 2.0f, 3.0f}) {
    Tensor x = Tensor(std::vector<float>{seed, seed + 1}, {2});
    EXPECT_EQ((x * 2 + 1).data<float>(), (std::vector<float>{2 * seed + 1, 2 * seed + 3}));
  }
}

// The child half of CompileOnce: runs only when the parent starts this binary with HCQ_FRAMEWORK_CHILD=1.
TEST(FrameworkCompileOnce, ChildRunsFromTheDiskCache) {
  if (!std::getenv("HCQ_FRAMEWORK_CHILD")) GTEST_SKIP() << "the second process of FrameworkCompileOnce.SecondProcess";
  Tensor x = input({9, 11}, 0.75f);
  const std::vector<float> got = (x.exp() * 3 - x).sum(1).data<float>();
  const std::vector<float> xv = x.data<float>();
  for (size_t i = 0; i < 9; ++i) {
    double want = 0;
    for (size_t j = 0; j < 11; ++j) want += std::exp(double(xv[i * 11 + j])) * 3 - xv[i * 11 + j];
    EXPECT_NEAR(got[i], want, 1e-3 * std::abs(want));
  }
}

TEST(FrameworkCompileOnce, SecondProcessRunsFromTheDiskCacheOnly) {
  // This process compiles the kernels (or finds them in the disk cache already) ...
  Tensor x = input({9, 11}, 0.75f);
  (x.exp() * 3 - x).sum(1).realize();
  x.data<float>();
  // ... and a second process, where any real compile throws, must run the same expressions.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  std::vector<std::string> env_text;
  // Not gtest's own variables: under scripts/test.sh's sharding the child would run a shard without its test.
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).substr(0, 6) != "GTEST_") env_text.push_back(*e);
  env_text.push_back("HCQ_ASSERT_COMPILE=1");
  env_text.push_back("HCQ_FRAMEWORK_CHILD=1");
  std::vector<char*> envp;
  for (std::string& s : env_text) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=FrameworkCompileOnce.ChildRunsFromTheDiskCache";
  char* argv[] = {const_cast<char*>(self.c_str()), filter.data(), nullptr};
  pid_t pid;
  ASSERT_EQ(::posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, envp.data()), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child failed (status " << status << ")";
}

}  // namespace
}  // namespace hcq
