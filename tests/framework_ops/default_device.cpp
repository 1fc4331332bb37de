// The framework's suites run on the CPU device, or on the device HCQ_DEVICE names: scripts/test.sh runs them again
// with HCQ_DEVICE=SIM-AMD:gfx1100 and SIM-NV:hopper, the same tests on each simulated GPU. A device whose kernel
// compiler is not installed (NVRTC, which NVIDIA kernels need and which is optional) cannot run a single tensor op,
// so then every test is skipped with the reason, as the NV tests skip without NVRTC.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"

namespace hcq::optest {
namespace {

class DefaultDeviceCompiles : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* device = std::getenv("HCQ_DEVICE");
    if (device == nullptr || *device == '\0') return;
    const std::string compiler = open_device(device).compiler().identity();
    if (compiler.find("unavailable") != std::string::npos)
      GTEST_SKIP() << "HCQ_DEVICE=" << device << ": its kernel compiler is not installed (" << compiler << ")";
  }
};

// gtest owns the environment; registered before main runs the tests.
[[maybe_unused]] ::testing::Environment* const kRegistered =
    ::testing::AddGlobalTestEnvironment(new DefaultDeviceCompiles);

}  // namespace
}  // namespace hcq::optest
