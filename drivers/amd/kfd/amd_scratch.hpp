// Scratch (the private segment) of one hardware queue: the VRAM each wave's private memory lives in, and the
// COMPUTE_TMPRING_SIZE value that tells the GPU how it is cut into wave slots. Every target we support has
// architected flat scratch (LLVM's term): the kernel takes no scratch user SGPRs; the CP gives each wave its slot of
// the buffer from the scratch base (PM4: COMPUTE_DISPATCH_SCRATCH_BASE_LO/HI; AQL: the queue's amd_queue_t).
//
// Growth: a kernel needing more per work-item than the current buffer gets a new, larger buffer (at least twice
// the per-lane size); the old ones stay allocated until the queue is destroyed. Words already encoded (bound or
// replayed HWQueues) keep the base and TMPRING_SIZE they were encoded with, and those stay valid, so growing never
// waits for the queue to go idle. The doubling keeps the retired buffers smaller than the current one in total.
// Mesa (ac_get_scratch_tmpring_size) does the same: several scratch buffers may be in use at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "amd/kfd/kfd.hpp"
#include "amd/target.hpp"

namespace hcq::amd {

// How a scratch buffer is laid out for a per-work-item size.
struct ScratchLayout {
  uint32_t lane_bytes = 0;  // per work-item, as provisioned (wave_bytes / 64)
  uint32_t wave_bytes = 0;  // one wave's slot: TMPRING_SIZE.WAVESIZE in bytes (64 lanes, whole units)
  uint32_t waves = 0;       // TMPRING_SIZE.WAVES (per XCC on GC 9, per shader engine on GC 11/12)
  uint64_t bytes = 0;       // the whole buffer: every slot of every XCC
  uint32_t tmpring = 0;     // the COMPUTE_TMPRING_SIZE value
};

// The layout for `lane_bytes` per work-item on `t` with the node's CUs, shader arrays and XCCs: 32 scratch wave
// slots per CU (KFD's max_slots_scratch_cu), wave slots sized for wave64 (a wave32 kernel uses half). On GC 11/12
// WAVES counts per shader engine; KFD's node properties we read give the shader-array count, never fewer than the
// engines, so WAVES = slots / arrays is safe (at worst fewer scratch waves run at once). Throws InvalidArgument when
// the per-wave size does not fit TMPRING_SIZE.WAVESIZE.
ScratchLayout scratch_layout(const Target& t, uint32_t lane_bytes, uint32_t cu_count, uint32_t array_count,
                             uint32_t num_xcc);
// The most bytes per work-item `t` can give (WAVESIZE's largest value, over 64 lanes).
uint32_t max_scratch_lane_bytes(const Target& t);

class AmdScratch {
 public:
  // `amd_queue`: the AQL queue's amd_queue_t (written on growth), or null for a PM4 queue.
  AmdScratch(KfdGpu& gpu, const Target& t, std::byte* amd_queue, std::string what);

  struct Use {
    uint64_t base = 0;     // the buffer's VA (256-byte aligned)
    uint32_t tmpring = 0;  // COMPUTE_TMPRING_SIZE for it
  };
  // A buffer covering `lane_bytes` per work-item (allocated or grown now when needed). Thread-safe. Throws
  // InvalidArgument beyond max_scratch_lane_bytes(), or what KFD's allocation throws (OutOfMemory).
  Use ensure(uint32_t lane_bytes);
  // The current layout (lane_bytes 0 before the first ensure()).
  ScratchLayout layout() const;

 private:
  void publish_aql(const ScratchLayout& l, uint64_t va);
  KfdGpu& gpu_;
  const Target& t_;
  std::byte* amd_queue_;
  std::string what_;
  mutable std::mutex mu_;
  ScratchLayout cur_;
  std::vector<std::unique_ptr<KfdBuffer>> buffers_;  // the last is current; the others may still be encoded
};

}  // namespace hcq::amd
