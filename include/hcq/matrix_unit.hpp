// The matrix instruction a GPU's kernels may use: a wave's 16 x 16 x 16 product of float16 or bfloat16 operands into
// float32 sums (tinygrad's tensor cores). Each unit is one instruction family with its own operand and result
// layouts, which the kernel ABI spells out (include/hcq/kernel_abi.h, "Matrix instructions") for the GPU and for the
// simulated GPUs' host twins alike. The backend reports it from its own per-generation data (DeviceInfo).
#pragma once

#include <cstdint>
#include <string_view>

namespace hcq {

enum class MatrixUnit : uint8_t {
  none,        // no matrix instruction the code generator uses (the CPU device)
  wmma_gfx11,  // AMD RDNA3 (GC 11): V_WMMA_F32_16X16X16_F16 / _BF16, wave32
  wmma_gfx12,  // AMD RDNA4 (GC 12): the same instructions with other operand and result layouts, wave32
  mfma_cdna3,  // AMD CDNA3 (GC 9.4): V_MFMA_F32_16X16X16_F16 / _BF16, wave64
  mma_sm80,    // NVIDIA sm_80 and later: PTX mma.sync.aligned.m16n8k16 .f16 / .bf16, two per 16 x 16
};

inline constexpr std::string_view to_string(MatrixUnit u) {
  switch (u) {
    case MatrixUnit::none: return "none";
    case MatrixUnit::wmma_gfx11: return "wmma_gfx11";
    case MatrixUnit::wmma_gfx12: return "wmma_gfx12";
    case MatrixUnit::mfma_cdna3: return "mfma_cdna3";
    case MatrixUnit::mma_sm80: return "mma_sm80";
  }
  return "?";
}

}  // namespace hcq
