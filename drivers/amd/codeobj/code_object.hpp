// An AMDHSA code object (the ELF64 shared object LLVM's AMDGPU backend + lld produce), parsed for loading: the image
// to upload (the PT_LOAD segments laid out by p_vaddr), and per kernel its descriptor (`<name>.kd`, 64 bytes), the
// code entry, and from the AMDGPU metadata note the kernarg segment size and the arguments.
//
// The bytes are untrusted (a cache file, a user, a fuzzer): every offset, size and index is checked before it is
// used, and anything malformed throws hcq::CompileError("bad code object: <what>") instead of reading out of bounds.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "amd/encode.hpp"
#include "amd/target.hpp"

namespace hcq::amd {

struct CodeObjectKernel {
  std::string name;                // "add1" (the descriptor symbol is name + ".kd")
  uint64_t descriptor_offset = 0;  // of the 64-byte kernel descriptor, from the image base (64-byte aligned)
  uint64_t code_offset = 0;        // of the first instruction, from the image base (256-byte aligned, executable)
  KernelDescriptor descriptor;
  // From the metadata note.
  uint32_t kernarg_segment_size = 0;
  uint32_t kernarg_segment_align = 0;
  uint32_t arg_count = 0;    // explicit arguments (.args entries whose .value_kind is not hidden_*)
  uint32_t num_buffers = 0;  // .value_kind global_buffer
  uint32_t num_values = 0;   // .value_kind by_value
};

// Ownership: a value type holding its own copy of the image; nothing points into the input after parse().
class CodeObject {
 public:
  // Parses and validates `elf`. Throws CompileError("bad code object: ...").
  static CodeObject parse(std::span<const uint8_t> elf);

  // "gfx1100", from e_flags (EF_AMDGPU_MACH).
  const std::string& gfx() const { return gfx_; }
  // Code object version (4, 5 or 6), from EI_ABIVERSION.
  uint32_t version() const { return version_; }
  // Identity of the code object: a 128-bit digest of all its bytes, as 32 hex digits. The simulator registers and
  // finds host twins under it.
  const std::string& identity() const { return identity_; }

  // The bytes to upload: every PT_LOAD segment at its p_vaddr, zero between and past p_filesz. Load it at a base
  // aligned to image_alignment(); where relocations() is not empty, upload image_at(base) instead.
  const std::vector<uint8_t>& image() const { return image_; }
  uint64_t image_alignment() const { return align_; }
  // R_AMDGPU_RELATIVE64 sites: the 64-bit word at `offset` becomes base + addend.
  struct Relocation {
    uint64_t offset;
    int64_t addend;
  };
  const std::vector<Relocation>& relocations() const { return relocs_; }
  // The image relocated for loading at `base` (image_alignment()-aligned, else InvalidArgument).
  std::vector<uint8_t> image_at(uint64_t base) const;

  const std::vector<CodeObjectKernel>& kernels() const { return kernels_; }
  // nullptr when the object has no kernel of that name.
  const CodeObjectKernel* find(std::string_view name) const;
  // The kernel, or InvalidArgument naming the kernels it has.
  const CodeObjectKernel& kernel(std::string_view name) const;
  // The kernel whose descriptor (AQL kernel_object) or first instruction (COMPUTE_PGM_LO/HI) is `offset` bytes from
  // the image base; nullptr when none is.
  const CodeObjectKernel* kernel_at_descriptor(uint64_t offset) const;
  const CodeObjectKernel* kernel_at_code(uint64_t offset) const;

  // What the dispatch registers need for `name` on `t` (RSRC1/2/3, LDS, scratch, user SGPRs). Throws
  // InvalidArgument when the object was built for another target than t, or the kernel wants what we do not set up.
  KernelInfo info(std::string_view name, const Target& t, uint32_t dynamic_lds_bytes = 0) const;

  // The bytes of a non-allocated section whose name starts with ".hcq" (e.g. ".hcq.source", which the AMD compiler
  // adds for host twins); empty if absent. Other non-allocated sections are not kept.
  std::span<const uint8_t> section(std::string_view name) const;

 private:
  std::string gfx_;
  uint32_t version_ = 0;
  std::string identity_;
  std::vector<uint8_t> image_;
  uint64_t align_ = 1;
  std::vector<Relocation> relocs_;
  std::vector<CodeObjectKernel> kernels_;
  struct Extra {
    std::string name;
    std::vector<uint8_t> bytes;
  };
  std::vector<Extra> extra_sections_;
};

// A 128-bit digest of `bytes` as 32 hex digits (two FNV-1a 64 lanes): the identity of a code object.
std::string code_object_identity(std::span<const uint8_t> bytes);

}  // namespace hcq::amd
