// Shared by the nv_cubin tests: kernel sources and cubins compiled once per process with NVRTC.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../common/axpb_source.hpp"

namespace hcq::nv::test {

// The same C source the CPU and AMD devices run (tests/common/axpb_source.hpp).
using hcq::test::kAxpbSource;
// CUDA C that only NVRTC takes: 1 KiB of static shared memory and a __device__ table read through a pointer (so the
// cubin has .nv.global.init and relocations), plus a __launch_bounds__ kernel.
extern const char* const kSharedGlobalSource;

// A framework-style kernel (three [2, 3] tensors stacked along a new last axis, as the framework renders
// Tensor::stack) for which NVRTC 13 for sm_86 puts a small lookup table in the kernel's own constant bank 2
// (.nv.constant2.stack3), which the loader lays out and a launch binds.
extern const char* const kConstantBank2Source;

// Whether NVRTC can be loaded here; tests that need it skip otherwise (REQUIRE_NVRTC()).
bool nvrtc_available();
#define REQUIRE_NVRTC() \
  if (!::hcq::nv::test::nvrtc_available()) GTEST_SKIP() << "NVRTC (libnvrtc.so.13) is not installed"
// Compiled once per (arch, source) and kept for the process. Throws CompileError.
const std::vector<uint8_t>& cubin_for(const std::string& arch, const char* source);

}  // namespace hcq::nv::test
