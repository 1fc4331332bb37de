// The CUresult table (drivers/cuda/cuda_errors.cpp): names and values as cuda.h (CUDA 13.0) spells them, the hcq
// error type of each kind, which codes are sticky, and the exact message of a failed call.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "cuda/cuda_errors.hpp"
#include "hcq/error.hpp"

namespace hcq::cuda {
namespace {

TEST(CudaErrors, TableHasEveryCodeOfCudaH) {
  // cuda.h (CUDA 13.0) enumerates 101 CUresult values, CUDA_SUCCESS through CUDA_ERROR_UNKNOWN.
  EXPECT_EQ(cu_results().size(), 101u);
  std::set<std::string_view> names;
  int last = -1;
  for (const CuResultInfo& i : cu_results()) {
    EXPECT_GT(i.code, last) << i.name;
    last = i.code;
    EXPECT_TRUE(names.insert(i.name).second) << i.name;
    EXPECT_EQ(i.name.substr(0, 5), "CUDA_") << i.name;
  }
  EXPECT_EQ(cu_results().front().name, "CUDA_SUCCESS");
  EXPECT_EQ(cu_results().back().code, 999);
}

TEST(CudaErrors, NamesOfKnownCodes) {
  // Values read from cuda.h.
  const std::pair<int, const char*> expected[] = {
      {0, "CUDA_SUCCESS"},
      {1, "CUDA_ERROR_INVALID_VALUE"},
      {2, "CUDA_ERROR_OUT_OF_MEMORY"},
      {34, "CUDA_ERROR_STUB_LIBRARY"},
      {100, "CUDA_ERROR_NO_DEVICE"},
      {200, "CUDA_ERROR_INVALID_IMAGE"},
      {209, "CUDA_ERROR_NO_BINARY_FOR_GPU"},
      {600, "CUDA_ERROR_NOT_READY"},
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},
      {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE"},
      {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"},
      {719, "CUDA_ERROR_LAUNCH_FAILED"},
      {801, "CUDA_ERROR_NOT_SUPPORTED"},
      {909, "CUDA_ERROR_TIMEOUT"},
      {916, "CUDA_ERROR_KEY_ROTATION"},
      {999, "CUDA_ERROR_UNKNOWN"},
  };
  for (const auto& [code, name] : expected) {
    const CuResultInfo* i = cu_result_info(code);
    ASSERT_NE(i, nullptr) << code;
    EXPECT_EQ(i->name, name);
  }
  EXPECT_EQ(cu_result_info(35), nullptr);  // not in CUDA 13's driver enum
  EXPECT_EQ(cu_result_info(-1), nullptr);
  EXPECT_EQ(cu_result_info(1000), nullptr);
}

TEST(CudaErrors, StickyCodesAreThoseThatEndTheContext) {
  // The codes whose cuda.h documentation says the process is left inconsistent (or the context must be destroyed).
  const std::set<int> expected = {226, 700, 702, 710, 714, 715, 716, 717, 718, 719, 721, 810, 911};
  std::set<int> sticky;
  for (const CuResultInfo& i : cu_results())
    if (i.sticky) sticky.insert(i.code);
  EXPECT_EQ(sticky, expected);
}

// The exception cu_error makes, rethrown, caught as `E`, with its message.
template <class E>
std::string thrown_as(int code, const char* call, const char* text, const char* context) {
  try {
    std::rethrow_exception(cu_error(code, call, text, context));
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "code " << code << " threw another type: " << e.what();
  }
  return {};
}

TEST(CudaErrors, EachKindIsItsHcqType) {
  EXPECT_EQ(thrown_as<InvalidArgument>(1, "cuMemcpyAsync", "invalid argument", "CUDA:0"),
            "CUDA:0: cuMemcpyAsync failed: CUDA_ERROR_INVALID_VALUE (1): invalid argument");
  EXPECT_EQ(thrown_as<OutOfMemory>(2, "cuMemCreate", "out of memory", "CUDA:0"),
            "CUDA:0: cuMemCreate failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory");
  EXPECT_EQ(thrown_as<UnsupportedDriver>(100, "cuInit", "no CUDA-capable device is detected", ""),
            "cuInit failed: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected");
  EXPECT_EQ(thrown_as<CompileError>(209, "cuModuleLoadData", "no kernel image is available for execution on the device",
                                    "CUDA:1"),
            "CUDA:1: cuModuleLoadData failed: CUDA_ERROR_NO_BINARY_FOR_GPU (209): no kernel image is available for "
            "execution on the device");
  EXPECT_EQ(thrown_as<DeviceFault>(700, "cuStreamSynchronize", "an illegal memory access was encountered", "CUDA:0"),
            "CUDA:0: cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was "
            "encountered");
  EXPECT_EQ(thrown_as<TimeoutError>(909, "cuStreamWaitValue64", "timeout", "CUDA:0"),
            "CUDA:0: cuStreamWaitValue64 failed: CUDA_ERROR_TIMEOUT (909): timeout");
}

TEST(CudaErrors, UnknownCodesAndMissingTextsStillSayWhatFailed) {
  EXPECT_EQ(thrown_as<Error>(4242, "cuLaunchKernel", nullptr, "CUDA:0"),
            "CUDA:0: cuLaunchKernel failed: unknown CUresult (4242)");
  EXPECT_EQ(cu_error_message(999, "cuCtxSetCurrent", nullptr), "cuCtxSetCurrent failed: CUDA_ERROR_UNKNOWN (999)");
  // A plain Error, not one of the specific types: nothing is claimed about a code hcq does not know.
  try {
    std::rethrow_exception(cu_error(4242, "x", nullptr));
  } catch (const InvalidArgument&) {
    FAIL();
  } catch (const DeviceFault&) {
    FAIL();
  } catch (const Error&) {
  }
}

}  // namespace
}  // namespace hcq::cuda
