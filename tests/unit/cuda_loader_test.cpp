// The CUDA adapter's loader (drivers/cuda/cuda_api.cpp) and opening a device without a GPU: every refusal is
// UnsupportedDriver naming what was looked for. The fake libraries are tests/fake_libcuda (built beside hcq-tests).
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <string>

#include "cuda/cuda_api.hpp"
#include "cuda/cuda_device.hpp"
#include "hcq/error.hpp"
#include "hcq/registry.hpp"

namespace hcq::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// <build>/tests/fake_libcuda/libfake_cuda_<name>.so, found from hcq-tests' own path (<build>/tests/hcq-tests).
std::string fake(const std::string& name) {
  char exe[PATH_MAX] = {};
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = n > 0 ? std::string(exe, static_cast<size_t>(n)) : std::string();
  dir = dir.substr(0, dir.rfind('/'));
  const std::string path = dir + "/fake_libcuda/libfake_cuda_" + name + ".so";
  if (access(path.c_str(), R_OK) != 0)
    ADD_FAILURE() << path << " is missing: build it (ninja -C <build> tests/fake_libcuda/libfake_cuda_" << name
                  << ".so, or meson test, which builds it for hcq-tests)";
  return path;
}

// What load_cuda_api threw, or "" when it loaded.
std::string refusal(const LoadOptions& o) {
  try {
    load_cuda_api(o);
  } catch (const UnsupportedDriver& e) {
    return e.what();
  }
  return {};
}

TEST(CudaLoader, NoLibraryNamesThePathAndDlerror) {
  const std::string m = refusal(LoadOptions{{"/nonexistent/libcuda.so.1"}});
  EXPECT_THAT(m, StartsWith("the CUDA driver library could not be used (/nonexistent/libcuda.so.1: "));
  EXPECT_THAT(m, HasSubstr("cannot open shared object file"));
}

TEST(CudaLoader, TheOpenSeamIsUsed) {
  LoadOptions o{{"libcuda.so.1"}};
  o.open = [](const char*, int) -> void* { return nullptr; };
  EXPECT_EQ(refusal(o), "the CUDA driver library could not be used (libcuda.so.1: not loadable)");
}

TEST(CudaLoader, NoCandidates) {
  EXPECT_EQ(refusal(LoadOptions{{}}), "the CUDA driver library could not be used (no library to try)");
}

TEST(CudaLoader, ALibraryThatIsNotCuda) {
  EXPECT_EQ(refusal(LoadOptions{{"libm.so.6"}}),
            "the CUDA driver library could not be used (libm.so.6: loaded, but it has no cuDriverGetVersion (not a "
            "CUDA driver library))");
}

TEST(CudaLoader, AnOldDriverIsNamedWithBothVersions) {
  const std::string lib = fake("old_driver");
  EXPECT_EQ(refusal(LoadOptions{{lib}}),
            "the CUDA driver library could not be used (" + lib +
                ": CUDA driver 11.0 (11000) is too old: hcq needs 12.0 (12000) or newer, whose stream memory "
                "operations are on by default)");
}

TEST(CudaLoader, MissingEntryPointsAreListed) {
  // partial_driver has cuDriverGetVersion (12080), cuInit, cuGetErrorName and cuGetErrorString: the rest of what
  // the adapter resolves, in the loader's order, is missing.
  const std::string lib = fake("partial_driver");
  EXPECT_EQ(
      refusal(LoadOptions{{lib}}),
      "the CUDA driver library could not be used (" + lib +
          ": CUDA driver 12.8 lacks cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetUuid_v2, "
          "cuDeviceGetAttribute, cuDeviceTotalMem_v2, cuDevicePrimaryCtxSetFlags_v2, cuDevicePrimaryCtxRetain, "
          "cuDevicePrimaryCtxRelease_v2, cuCtxSetCurrent, cuModuleLoadData, cuModuleGetFunction, "
          "cuModuleUnload, cuFuncGetAttribute, cuStreamCreate, cuStreamDestroy_v2, cuStreamQuery, "
          "cuStreamSynchronize, cuStreamWriteValue32_v2, cuStreamWriteValue64_v2, cuStreamWaitValue32_v2, "
          "cuStreamWaitValue64_v2, cuLaunchKernel, cuLaunchHostFunc, cuMemcpyAsync, cuMemsetD8_v2, cuMemHostRegister_v2, "
          "cuMemHostUnregister, cuMemHostGetDevicePointer_v2, cuMemGetAllocationGranularity, "
          "cuMemAddressReserve, cuMemAddressFree, cuMemCreate, cuMemRelease, cuMemMap, cuMemUnmap, "
          "cuMemSetAccess)");
}

TEST(CudaLoader, EveryCandidateTriedIsReportedInOrder) {
  const std::string old_lib = fake("old_driver"), partial = fake("partial_driver");
  const std::string m = refusal(LoadOptions{{"/nonexistent/libcuda.so.1", old_lib, partial}});
  const size_t a = m.find("/nonexistent/libcuda.so.1: "), b = m.find(old_lib + ": CUDA driver 11.0"),
               c = m.find(partial + ": CUDA driver 12.8 lacks");
  ASSERT_NE(a, std::string::npos) << m;
  ASSERT_NE(b, std::string::npos) << m;
  ASSERT_NE(c, std::string::npos) << m;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
}

TEST(CudaLoader, TheFirstUsableCandidateWins) {
  const std::string lib = fake("no_device");
  const auto api = load_cuda_api(LoadOptions{{fake("old_driver"), lib}});
  EXPECT_EQ(api->path, lib);
  EXPECT_EQ(api->version, 12080);
  EXPECT_STREQ(api->error_text(100), "no CUDA-capable device is detected");
  EXPECT_EQ(api->error_text(4242), nullptr);  // the driver has no text for it
}

TEST(CudaLoader, NoDeviceIsUnsupportedDriverWithCudasText) {
  const auto api = load_cuda_api(LoadOptions{{fake("no_device")}});
  try {
    open_cuda_device("CUDA:0", 0, api);
    FAIL() << "opened a device on a driver without one";
  } catch (const UnsupportedDriver& e) {
    EXPECT_STREQ(e.what(), "CUDA:0: cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected");
  }
}

TEST(CudaLoader, ApiCheckThrowsTheTypedErrorWithTheDriversText) {
  const auto api = load_cuda_api(LoadOptions{{fake("no_device")}});
  EXPECT_NO_THROW(api->check(0, "cuInit"));
  try {
    api->check(3, "cuDeviceGetCount", "CUDA:1");
    FAIL();
  } catch (const UnsupportedDriver& e) {
    EXPECT_STREQ(e.what(), "CUDA:1: cuDeviceGetCount failed: CUDA_ERROR_NOT_INITIALIZED (3): initialization error");
  }
  try {
    api->check(1, "cuMemCreate");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "cuMemCreate failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument");
  }
}

bool libcuda_installed() {
  if (void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(h);
    return true;
  }
  return false;
}

TEST(CudaLoader, TheRegistrySaysWhyCudaIsUnavailable) {
  if (libcuda_installed()) GTEST_SKIP() << "libcuda.so.1 is installed here";
  try {
    open_device("CUDA:0");
    FAIL() << "CUDA:0 opened without libcuda";
  } catch (const UnsupportedDriver& e) {
    EXPECT_THAT(e.what(), StartsWith("CUDA:0: the CUDA driver library could not be used (libcuda.so.1: "));
  }
  bool listed = false;
  for (const auto& [pattern, reason] : probe_report()) {
    if (pattern != "CUDA[:n]") continue;
    listed = true;
    EXPECT_THAT(reason, HasSubstr("libcuda.so.1")) << reason;
  }
  EXPECT_TRUE(listed);
}

}  // namespace
}  // namespace hcq::cuda
