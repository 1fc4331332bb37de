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

// Whether NVRTC can be loaded here; tests that need it skip otherwise (REQUIRE_NVRTC()).
bool nvrtc_available();
#define REQUIRE_NVRTC() \
  if (!::hcq::nv::test::nvrtc_available()) GTEST_SKIP() << "NVRTC (libnvrtc.so.13) is not installed"
// Compiled once per (arch, source) and kept for the process. Throws CompileError.
const std::vector<uint8_t>& cubin_for(const std::string& arch, const char* source);

}  // namespace hcq::nv::test
