// An NVIDIA cubin (the ELF64 EM_CUDA executable NVRTC / ptxas produce), parsed for loading by hcq itself: the image
// to upload (code, constant banks 1..N, global data, laid out and aligned), the relocations to apply at the load
// address, and per kernel what a QMD needs: code offset, registers, shared and stack bytes, and where the parameters
// sit in constant bank 0.
//
// The bytes are untrusted (a cache file, a user, a fuzzer): every offset, size and index is checked before use, and
// anything malformed or unknown throws hcq::CompileError("bad cubin: <what>") instead of reading out of bounds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcq::nv {

struct CubinParam {
  uint32_t ordinal = 0;
  uint32_t offset = 0;  // from the start of the parameters in cbank0
  uint32_t size = 0;
};

// A constant bank other than 0, stored in the image: the QMD binds bank `bank` at base + offset.
struct CubinConstantBank {
  uint32_t bank = 0;
  uint64_t offset = 0;
  uint32_t size = 0;
};

struct CubinKernel {
  std::string name;
  uint64_t code_offset = 0;  // first instruction, from the image base (128-byte aligned)
  uint64_t code_size = 0;
  uint32_t registers = 0;  // EIATTR_REGCOUNT
  // Static shared memory a block needs: .nv.shared.<kernel> + Cubin::reserved_shared_bytes(). From sm_90 on, the
  // compiler places the kernel's variables after a 1 KiB system window at the start of that section, so it counts.
  uint32_t shared_bytes = 0;
  uint32_t stack_bytes = 0;      // per-thread stack, callees included (EIATTR_MIN_STACK_SIZE, else FRAME_SIZE)
  uint32_t frame_bytes = 0;      // EIATTR_FRAME_SIZE
  uint32_t max_stack_bytes = 0;  // EIATTR_MAX_STACK_SIZE when present
  uint32_t param_offset = 0;     // EIATTR_PARAM_CBANK: where the parameters start in cbank0 (the driver prefix size)
  uint32_t param_size = 0;       // EIATTR_CBANK_PARAM_SIZE
  uint32_t cbank0_size = 0;      // .nv.constant0.<kernel>: prefix + parameters
  std::optional<std::array<uint32_t, 3>> max_threads;  // EIATTR_MAX_THREADS (__launch_bounds__)
  std::optional<std::array<uint32_t, 3>> reqntid;      // EIATTR_REQNTID
  std::vector<uint32_t> exit_offsets;                  // EIATTR_EXIT_INSTR_OFFSETS, from code_offset
  std::vector<CubinParam> params;                      // EIATTR_KPARAM_INFO, by ordinal
  // The kernel's own constant banks, .nv.constant<N>.<kernel> (N >= 1), by bank: data the compiler reads as
  // c[N][...] in this kernel only (NVRTC 13 puts sm_86's literal tables in bank 2). Laid out in the image like the
  // module's banks; a launch binds each beside those of constant_banks().
  std::vector<CubinConstantBank> banks;
  // From `<name>_hcq_desc` when the kernel was built from hcq's kernel ABI (drivers/nv/compiler).
  std::optional<uint32_t> num_buffers, num_values;
};

// Per-block limits of an architecture (nv-facts' arch table carries the numbers per SM version).
struct LaunchLimits {
  uint32_t max_threads_per_block = 1024;
  uint32_t max_registers_per_thread = 255;
  uint32_t registers_per_block = 65536;
  uint32_t register_alloc_unit = 256;  // registers are given to a warp in units of this many
  uint32_t warp_size = 32;
  uint32_t max_shared_bytes_per_block = 48 * 1024;
};

struct NvArchInfo;
// The limits of an architecture of nv-facts' table (drivers/nv/facts/arch.hpp).
LaunchLimits launch_limits(const NvArchInfo& arch);

// Ownership: a value type holding its own copies; nothing points into the input after parse().
class Cubin {
 public:
  // Throws CompileError("bad cubin: ...").
  static Cubin parse(std::span<const uint8_t> elf);

  uint32_t sm() const { return sm_; }  // 80, 86, 89, 90, 100, 120, ...
  std::string arch() const { return "sm_" + std::to_string(sm_); }
  // A 128-bit digest of all the bytes, as 32 hex digits: the simulator registers and finds host twins under it.
  const std::string& identity() const { return identity_; }

  // The bytes to upload, relocated for base 0. Upload image_at(base) at a base aligned to image_alignment().
  const std::vector<uint8_t>& image() const { return image_; }
  static constexpr uint64_t image_alignment() { return 256; }
  struct Relocation {
    uint64_t offset;  // of the patched word in the image
    uint32_t type;    // cubin::Reloc
    uint64_t value;   // S + A, relative to the image base unless `absolute`
    bool absolute;
  };
  const std::vector<Relocation>& relocations() const { return relocs_; }
  // The image with every relocation applied for `base`. InvalidArgument when base is misaligned or an address does
  // not fit a 32-bit field.
  std::vector<uint8_t> image_at(uint64_t base) const;

  const std::vector<CubinKernel>& kernels() const { return kernels_; }
  const CubinKernel* find(std::string_view name) const;
  // The kernel, or InvalidArgument naming the kernels there are.
  const CubinKernel& kernel(std::string_view name) const;
  // The kernel whose first instruction is `offset` bytes from the image base; nullptr when none is.
  const CubinKernel* kernel_at_code(uint64_t offset) const;

  // The module's banks, .nv.constant<N> (N >= 1): every kernel of the cubin sees them (CubinKernel::banks has a
  // kernel's own).
  const std::vector<CubinConstantBank>& constant_banks() const { return banks_; }
  // What a launch of `k` binds: the module's banks and the kernel's own, by bank number.
  std::vector<CubinConstantBank> banks_of(const CubinKernel& k) const;
  // Shared memory the compiler reserves for its own use in every kernel (.nv.shared.reserved.*; 64 bytes on sm_100).
  uint32_t reserved_shared_bytes() const { return reserved_shared_; }

  // The bytes of a non-allocated section whose name starts with ".hcq" (".hcq.source": the kernel's C source, which
  // the NV compiler appends for host twins); empty if absent.
  std::span<const uint8_t> section(std::string_view name) const;
  std::string_view source() const;

  // Checks a launch of `k` with `block` threads and `dynamic_shared` bytes against the kernel's own bounds and
  // `limits`. Throws InvalidArgument with the numbers (threads x registers, shared bytes) when it cannot run.
  static void check_launch(const CubinKernel& k, std::array<uint32_t, 3> block, uint32_t dynamic_shared,
                           const LaunchLimits& limits);

 private:
  uint32_t sm_ = 0;
  std::string identity_;
  std::vector<uint8_t> image_;
  std::vector<Relocation> relocs_;
  std::vector<CubinKernel> kernels_;
  std::vector<CubinConstantBank> banks_;
  uint32_t reserved_shared_ = 0;
  struct Extra {
    std::string name;
    std::vector<uint8_t> bytes;
  };
  std::vector<Extra> extra_sections_;
};

// `elf` with one more non-allocated PROGBITS section `name` holding `bytes` (how the NV compiler attaches the
// source). The section header table and a grown copy of .shstrtab go at the end; nothing else moves, so symbol and
// section indices stay valid. Throws CompileError when `elf` is not a cubin this can extend.
std::vector<uint8_t> append_section(std::span<const uint8_t> elf, std::string_view name,
                                    std::span<const uint8_t> bytes);

// The digest behind Cubin::identity().
std::string cubin_identity(std::span<const uint8_t> bytes);

}  // namespace hcq::nv
