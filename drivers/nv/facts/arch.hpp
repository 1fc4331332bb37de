// NVIDIA GPU generations as data: class ids, QMD version, the constant bank 0 driver prefix and launch limits per SM
// version. Everything that differs between Ampere, Ada, Hopper and Blackwell is a column of this table, so code asks
// the table instead of comparing architectures.
//
// Sources: class ids from open-gpu-kernel-modules src/common/sdk/nvidia/inc/class/cl*.h (verified there); the
// parameter offset in constant bank 0 from EIATTR_PARAM_CBANK of cubins built by CUDA 13 for each SM; limits from
// the CUDA programming guide's compute-capability table.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "hcq/matrix_unit.hpp"

namespace hcq::nv {

enum class NvArch : uint8_t { ampere, ada, hopper, blackwell };

// Class ids of one GPU variant. usermode lists the doorbell classes in order of preference: RM exposes several and
// the backend takes the first one the GPU reports.
struct NvClasses {
  uint32_t gpfifo;   // e.g. 0xc56f AMPERE_CHANNEL_GPFIFO_A
  uint32_t compute;  // e.g. 0xc6c0 AMPERE_COMPUTE_A
  uint32_t copy;     // e.g. 0xc7b5 AMPERE_DMA_COPY_B
  std::span<const uint32_t> usermode;
  uint32_t channel_group;  // 0xa06c KEPLER_CHANNEL_GROUP_A
  uint32_t context_share;  // 0x9067 FERMI_CONTEXT_SHARE_A
  uint32_t va_space;       // 0x90f1 FERMI_VASPACE_A
};

// CUDA's kernel ABI keeps the top kCudaLocalReserve bytes of each thread's 16 MiB local window for itself: the stack
// starts below them (the stack top the driver puts in constant bank 0), so every kernel needs that much shader local
// memory per thread besides its own stack (as tinygrad sizes it).
inline constexpr uint32_t kLocalWindowBytes = 1u << 24;
inline constexpr uint32_t kCudaLocalReserve = 0x240;
inline constexpr uint32_t kCudaStackTop = kLocalWindowBytes - kCudaLocalReserve;  // 0xfffdc0

// Threads per warp: 32 on every NVIDIA compute capability (CUDA programming guide, "SIMT Architecture" and its
// technical specifications table), so not a column of the table.
inline constexpr uint32_t kWarpSize = 32;

struct NvArchInfo {
  NvArch arch;
  std::string_view arch_name;  // "ampere", "ada", "hopper", "blackwell"
  uint32_t sm;                 // 80, 86, 89, 90, 100, 120
  NvClasses classes;
  uint8_t qmd_version;  // QMD major version the compute class takes: 3 or 5
  // Where the kernel parameters start in constant bank 0; below it is the driver's prefix (shared/local memory
  // windows and the like). A cubin states its own offset (EIATTR_PARAM_CBANK); this is what CUDA 13 emits.
  uint32_t cbank0_param_offset;
  uint32_t max_threads_per_block;
  uint32_t max_shared_per_block;       // bytes a block may use, opted in (CUDA's sharedMemPerBlockOptin)
  uint32_t reserved_shared_per_block;  // bytes the system takes from each block's shared memory (1 KiB since sm_80)
  uint32_t registers_per_sm;
  uint32_t max_registers_per_thread;
  // The L1/shared split an SM can be configured to, in KiB, ascending. The QMD's MIN/MAX/TARGET_SM_CONFIG_SHARED_
  // MEM_SIZE fields take one of these as (KiB / 4 + 1).
  std::span<const uint16_t> shared_carveouts_kib;
  // The driver's words in constant bank 0 that CUDA's SASS reads (tinygrad writes them the same way): the shared
  // and local memory windows (two 64-bit addresses from this 32-bit word on) and the top of a thread's stack in the
  // local window (one 32-bit word). Words 6 and 10 before Blackwell, 188 and 223 on it.
  uint16_t cbank0_windows_word = 6;
  uint16_t cbank0_stack_top_word = 10;
  // The matrix instruction generated kernels use: PTX's mma.sync.aligned.m16n8k16 with f16 and bf16 operands, which
  // every variant here has (it needs sm_80; PTX ISA, "Warp-level matrix instructions").
  MatrixUnit matrix_unit = MatrixUnit::mma_sm80;

  // The SASS_VERSION a QMD carries: major in the high nibble, minor in the low one (sm_86 -> 0x86, sm_100 -> 0xa0).
  constexpr uint8_t sass_version() const { return static_cast<uint8_t>(((sm / 10) << 4) | (sm % 10)); }
};

// Every supported variant, ampere first.
std::span<const NvArchInfo> nv_arch_table();
// The variant a simulated device of that generation is: ampere sm_86, ada sm_89, hopper sm_90, blackwell sm_100.
const NvArchInfo& arch_info(NvArch arch);
// "ampere", "ada", "hopper", "blackwell" or "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120" (also "sm80").
// Throws InvalidArgument naming the accepted spellings.
const NvArchInfo& arch_from_name(std::string_view name);
// By SM version (86) or by compute class id (0xc9c0); nullptr when unknown.
const NvArchInfo* find_arch_by_sm(uint32_t sm);
const NvArchInfo* find_arch_by_compute_class(uint32_t compute_class);
std::string_view to_string(NvArch arch);

}  // namespace hcq::nv
