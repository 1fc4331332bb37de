// A kernel loaded on an AMD GPU: the code object image uploaded to device memory (relocated for its base), and
// what a queue needs to encode a dispatch of it — the register values (amd::KernelInfo: RSRC1/2/3, LDS, scratch
// per work-item, which the queue's ring provides: amd_scratch.hpp,
// whether the kernel wants the dispatch packet pointer in its user SGPRs: HCQ C kernels do not, hand-written IR
// may), the code entry VA (COMPUTE_PGM_LO/HI), the kernel descriptor VA (AQL kernel_object) and the kernarg
// segment size/alignment.
//
// Kernarg layout (the AMD compiler's ABI): num_bufs() 8-byte buffer addresses, then num_vals() 32-bit values, then
// the launch block (u32 num_groups[3], u32 local_size[3]: what HCQ_NUM_GROUPS / HCQ_LOCAL_SIZE read, see
// hcq/kernel_abi.h), in a segment of kernarg_bytes() bytes, kernarg_segment_align() aligned. The code
// object's kernarg_segment_size covers the explicit arguments (and any hidden ones of hand-written IR kernels).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "amd/encode.hpp"
#include "amd/target.hpp"
#include "hcq/program.hpp"

namespace hcq::amd {

class AmdDevice;
class CodeObject;
class KfdBuffer;

class AmdProgram final : public Program {
 public:
  struct Facts {
    KernelInfo info;             // register values for the device's target
    uint64_t code_va = 0;        // first instruction (256-byte aligned)
    uint64_t descriptor_va = 0;  // the 64-byte kernel descriptor (64-byte aligned)
    uint64_t image_va = 0, image_size = 0;
    uint32_t kernarg_segment_size = 0;  // the metadata's: explicit (and hidden) arguments, not the launch block
    uint32_t kernarg_segment_align = 16;
    uint32_t num_bufs = 0, num_vals = 0;
    std::string code_object_id;  // amd::CodeObject::identity()
  };

  // `image` is the device memory holding the code object; `on_unload` (may be empty) runs at destruction, after the
  // device has drained, before the image memory is freed.
  AmdProgram(AmdDevice& dev, std::string name, Facts facts, std::unique_ptr<KfdBuffer> image,
             std::function<void()> on_unload);
  // Waits for the device (errors ignored), runs on_unload, then frees the image.
  ~AmdProgram() override;

  const KernelInfo& info() const { return facts_.info; }
  uint64_t code_va() const { return facts_.code_va; }
  uint64_t descriptor_va() const { return facts_.descriptor_va; }
  uint32_t kernarg_segment_size() const { return facts_.kernarg_segment_size; }
  uint32_t kernarg_segment_align() const { return facts_.kernarg_segment_align; }
  bool wants_dispatch_ptr() const { return facts_.info.dispatch_ptr; }
  // Whether a launch needs scratch: a private segment (the descriptor's private_segment_fixed_size) or
  // COMPUTE_PGM_RSRC2.SCRATCH_EN (AMDHSA's ENABLE_PRIVATE_SEGMENT) set for target `t`.
  bool needs_scratch(const Target& t) const;
  const Facts& facts() const { return facts_; }

  // Byte offset of the launch block in the kernarg segment: right after the explicit arguments.
  uint32_t launch_block_offset() const { return 8 * num_bufs() + 4 * num_vals(); }
  static constexpr uint32_t kLaunchBlockBytes = 24;  // u32 num_groups[3], u32 local_size[3]
  // Bytes of kernarg a launch needs: max(kernarg_segment_size, launch block end), rounded up to 16.
  uint32_t kernarg_bytes() const;
  // Writes a whole kernarg segment into `dst` (kernarg_bytes() long; the rest zeroed): buffer addresses, values,
  // then the launch block from `groups` (workgroup counts) and `local` (work-items per workgroup).
  void write_kernargs(void* dst, const uint64_t* bufs, size_t nbufs, const uint32_t* vals, size_t nvals,
                      const std::array<uint32_t, 3>& groups, const std::array<uint32_t, 3>& local) const;

 private:
  Facts facts_;
  std::unique_ptr<KfdBuffer> image_;
  std::function<void()> on_unload_;
};

// Launch limits of every AMD target we support.
LaunchLimits amd_launch_limits();

}  // namespace hcq::amd
