// `hcq bench`'s CUDA comparison (tools/hcq/cuda_compare): every way it can be unavailable says why, and none of them
// is an error. The measuring path needs libcuda and a real NVIDIA GPU: hw-tests/nv/run.sh exercises it.
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cuda_compare.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"

namespace hcq::tool {
namespace {

using ::testing::HasSubstr;

CudaLaunchRequest request_with(std::vector<std::string> candidates) {
  static const std::vector<uint8_t> kNotACubin(64, 0);
  CudaLaunchRequest r;
  r.cubin = kNotACubin;  // never reaches CUDA in these tests
  r.kernel = "empty";
  r.runs = 1;
  r.warmup = 0;
  r.libcuda_candidates = std::move(candidates);
  return r;
}

TEST(CudaCompare, MissingLibraryIsUnavailableAndNamesThePath) {
  const CudaComparison c = compare_cuda_launch(request_with({"/nonexistent/libcuda.so.1"}));
  EXPECT_FALSE(c.measured);
  EXPECT_THAT(c.unavailable, HasSubstr("could not be used"));
  EXPECT_THAT(c.unavailable, HasSubstr("/nonexistent/libcuda.so.1"));
}

TEST(CudaCompare, LibraryWithoutTheDriverApiIsUnavailable) {
  // libm loads, but is not libcuda: it has no cuDriverGetVersion, the first entry point the loader looks for.
  const CudaComparison c = compare_cuda_launch(request_with({"/nonexistent/libcuda.so.1", "libm.so.6"}));
  EXPECT_FALSE(c.measured);
  EXPECT_THAT(c.unavailable, HasSubstr("libm.so.6: loaded, but it has no cuDriverGetVersion"));
  EXPECT_THAT(c.unavailable, HasSubstr("/nonexistent/libcuda.so.1"));  // every candidate tried is reported
}

TEST(CudaCompare, DefaultCandidatesOnAMachineWithoutCuda) {
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
    GTEST_SKIP() << "libcuda.so.1 is installed here: the unavailable path cannot be seen with the default candidates";
  }
  CudaLaunchRequest r = request_with({});
  r.libcuda_candidates = CudaLaunchRequest{}.libcuda_candidates;
  const CudaComparison c = compare_cuda_launch(r);
  EXPECT_FALSE(c.measured);
  EXPECT_THAT(c.unavailable, HasSubstr("libcuda.so.1"));
}

TEST(CudaCompare, BadRequestIsInvalidArgument) {
  CudaLaunchRequest r = request_with({"/nonexistent/libcuda.so.1"});
  r.cubin = {};
  EXPECT_THROW(compare_cuda_launch(r), InvalidArgument);
  r = request_with({"/nonexistent/libcuda.so.1"});
  r.runs = 0;
  EXPECT_THROW(compare_cuda_launch(r), InvalidArgument);
}

TEST(CudaCompare, OnlyRealNvidiaGpusAreCompared) {
  const std::vector<uint8_t> cubin(64, 0);
  const CudaComparison cpu = compare_cuda_launch(open_device("CPU:0"), cubin, "empty", 0, 1);
  EXPECT_FALSE(cpu.measured);
  EXPECT_THAT(cpu.unavailable, HasSubstr("CPU:0 is not an NVIDIA GPU"));

  const CudaComparison sim = compare_cuda_launch(open_device("SIM-NV:hopper"), cubin, "empty", 0, 1);
  EXPECT_FALSE(sim.measured);
  EXPECT_THAT(sim.unavailable, HasSubstr("SIM-NV:hopper is a simulated GPU"));
}

}  // namespace
}  // namespace hcq::tool
