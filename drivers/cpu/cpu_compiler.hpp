// The CPU device's compiler: kernel C source -> relocatable x86-64 ELF object, by running knobs::cpu_cc() (clang-19)
// as a subprocess. The kernel ABI text (include/hcq/kernel_abi.h) is prepended to every source.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "hcq/compiler.hpp"

namespace hcq {
class Os;
}

namespace hcq::cpu {

class CpuCompiler final : public Compiler {
 public:
  // `os` is where /proc/cpuinfo is read from (for target()).
  explicit CpuCompiler(Os& os);

  // Throws CompileError with clang's diagnostics, or saying which compiler is missing and how to install it.
  std::vector<uint8_t> compile(std::string_view source) override;
  // Compiler path + the first line of its --version (run once, then cached).
  std::string identity() const override;
  // "x86_64-<cpu model>-<digest of the CPU feature flags>": code built with -march=native is only served from a
  // shared cache to a CPU with the same features.
  std::string target() const override { return target_; }
  std::string options() const override;

  const std::string& compiler_path() const { return cc_; }

 private:
  std::string cc_;
  std::string target_;
  mutable std::once_flag identity_once_;
  mutable std::string identity_;
};

// The flags every kernel is compiled with (also part of the cache key through options()).
const std::vector<std::string>& cpu_compile_flags();

}  // namespace hcq::cpu
