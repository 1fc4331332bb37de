// The GPU the framework's GPU-only tests run on: the default device (HCQ_DEVICE) when it is not the CPU device.
// scripts/test.sh runs the framework's tests in processes of their own with HCQ_DEVICE=SIM-AMD:gfx1100 and
// SIM-NV:hopper; in the main run (the CPU device) these tests skip. They do not open a simulated GPU by name in the
// main run because other suites there fault the registry's simulated GPUs on purpose, and a fault is sticky.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "hcq/device.hpp"
#include "hcq/registry.hpp"

namespace hcq::fwtest {

inline std::optional<std::string> gpu_under_test() {
  const char* d = std::getenv("HCQ_DEVICE");
  if (d == nullptr || *d == '\0' || open_device(d).info().interface == "cpu") return std::nullopt;
  return open_device(d).name();
}

}  // namespace hcq::fwtest

// Skips the test unless HCQ_DEVICE names a GPU; binds `gpu` to its canonical name.
#define FW_REQUIRE_GPU(gpu)                                                                                 \
  const std::optional<std::string> gpu##_opt = ::hcq::fwtest::gpu_under_test();                             \
  if (!gpu##_opt) GTEST_SKIP() << "runs on a GPU: HCQ_DEVICE=SIM-AMD:gfx1100 (scripts/test.sh runs it so)"; \
  const std::string gpu = *gpu##_opt
