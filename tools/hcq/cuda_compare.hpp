// CUDA's launch latency beside hcq's, for `hcq bench` on a real NVIDIA GPU: the same empty kernel launched through
// cuLaunchKernel in the same run, so the two numbers share a machine, a clock and a moment.
//
// libcuda.so.1 is opened with dlopen here and only here: hcq has no link dependency on CUDA, and a machine without
// it loses this one comparison, nothing else. On the GPU hcq measured (matched by UUID), the primary context is
// retained with spin-waiting (hcq's wait spins first too), the very cubin hcq's bench launched is loaded with
// cuModuleLoadData, and the empty kernel is timed exactly as launch_us times hcq's eager launch: one 1x1x1 launch,
// then wait for it, clock read around both; median and p99 after the same warm-up.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hcq {
class Device;
}

namespace hcq::tool {

struct CudaLaunchResult {
  double median_us = 0;
  double p99_us = 0;
  std::string device;  // "NVIDIA H200, CUDA driver API 13.0 (libcuda.so.1)"
};

// Either a measurement, or why none could be made. "Unavailable" is not an error: no libcuda, a device that is not
// a real NVIDIA GPU, CUDA seeing no such GPU. Once CUDA is up, a failing call is an error (thrown).
struct CudaComparison {
  std::optional<CudaLaunchResult> measured;
  std::string unavailable;  // set exactly when !measured
};

struct CudaLaunchRequest {
  std::array<uint8_t, 16> gpu_uuid{};  // the GPU as RM names it (NV2080_CTRL_CMD_GPU_GET_GID_INFO, binary)
  std::span<const uint8_t> cubin;      // an image cuModuleLoadData takes
  std::string kernel;                  // the symbol to launch; it must take one parameter block of <= 256 bytes
  int warmup = 500;
  int runs = 20000;
  // Where to look for the CUDA driver library, in order. Tests pass paths that do not load.
  std::vector<std::string> libcuda_candidates = {"libcuda.so.1"};
};

// Measures `request`. Returns unavailable (with the reason) when libcuda cannot be loaded or lacks an entry point,
// cuInit fails, or no CUDA device has the UUID. Throws hcq::Error naming the call, the CUresult's name and CUDA's
// text when a later call fails (context, module, kernel, launch, synchronize).
CudaComparison compare_cuda_launch(const CudaLaunchRequest& request);

// For `hcq bench`: the comparison on `dev`, launching `kernel` of `cubin` (the binary hcq just launched on it).
// Unavailable for anything but a real NVIDIA GPU (interface "rm"), with the reason.
CudaComparison compare_cuda_launch(Device& dev, std::span<const uint8_t> cubin, const std::string& kernel, int warmup,
                                   int runs);

}  // namespace hcq::tool
