// The AMD compiler: kernel source -> AMDHSA code object (code object v5, ELF shared object) for one gfx target.
//
//   C kernel source (the hcq kernel ABI, same source as the CPU device)
//     -- clang-19 subprocess, with hcq/kernel_abi.h prepended: -target amdgcn-amd-amdhsa -mcpu=<gfx> -O2 -emit-llvm
//   LLVM IR
//     -- in-process, LLVM 19 libraries: HCQ_KERNEL functions become amdgpu_kernels with typed arguments, O2, codegen
//   relocatable object
//     -- ld.lld-19 subprocess (memfds, nothing on disk): -shared
//   code object
//
// A C compile also stores its source in a non-allocated `.hcq.source` section: the simulated GPU builds the kernel's
// host twin from it (drivers/sim/twins). Real GPUs never load that section.
#pragma once

#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"

namespace hcq::amd {

enum class SourceLanguage { c, llvm_ir };

struct AmdToolchain {
  std::string clang = "clang-19";  // only for C sources
  std::string lld = "ld.lld-19";
};

class AmdCompiler final : public Compiler {
 public:
  // `gfx` is any target LLVM 19 knows ("gfx1100", "gfx942", "gfx1201", ...); it is checked at compile time, so a
  // compiler for an unbuildable target (gfx950) still has an identity and throws CompileError from compile().
  explicit AmdCompiler(std::string gfx, SourceLanguage lang = SourceLanguage::c, AmdToolchain tools = {});

  // Source (C or LLVM IR text, per the language) -> code object. Throws CompileError with the diagnostics.
  std::vector<uint8_t> compile(std::string_view source) override;
  // "LLVM 19.1.7; <clang --version>; <ld.lld --version>" (the tool versions are asked once).
  std::string identity() const override;
  std::string target() const override { return gfx_; }
  // The language, every flag that changes the output, and (for C) a hash of the ABI prelude.
  std::string options() const override;

  // The stages, for tests and tools.
  // C -> LLVM IR text (clang subprocess, prelude prepended).
  std::string c_to_ir(std::string_view source) const;
  // LLVM IR -> relocatable ELF object, in-process. With `rewrite_hcq_kernels`, every function F that has an
  // F_hcq_desc descriptor becomes an amdgpu_kernel taking nbufs global pointers then nvals i32. A non-empty
  // `embedded_source` goes into a non-allocated .hcq.source section.
  std::vector<uint8_t> ir_to_object(std::string_view ir, bool rewrite_hcq_kernels,
                                    std::string_view embedded_source) const;
  // Relocatable object -> code object (ld.lld -shared).
  std::vector<uint8_t> link(std::span<const uint8_t> object) const;

  // The clang flags of the C front door (also in options()).
  std::vector<std::string> c_flags() const;

 private:
  void check_target() const;
  std::string gfx_;
  SourceLanguage lang_;
  AmdToolchain tools_;
  mutable std::once_flag identity_once_;
  mutable std::string identity_;
};

}  // namespace hcq::amd
