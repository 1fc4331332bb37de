// Loads a relocatable x86-64 ELF object (what clang -c produces) into an executable in-memory image of our own:
// no temporary files, no dlopen. The bytes are untrusted (a cache file, a fuzzer): every offset, size and index is
// checked, and anything malformed throws CompileError("bad ELF: <what>") instead of reading out of bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hcq/backend/os.hpp"

namespace hcq::cpu {

struct ElfSymbol {
  uint64_t addr = 0;  // where it lives in the loaded image
  uint64_t size = 0;
  uint8_t type = 0;  // STT_FUNC, STT_OBJECT, ...
};

// The loaded image. Code is mapped read+execute, constants read-only, data read+write.
// Ownership: owns its mapping; code from it must not run after it is destroyed.
class ElfImage {
 public:
  // Parses, validates, lays out and relocates `object`. Undefined symbols resolve only from a short whitelist of
  // libc/libm functions (memcpy, memset, memmove, the math functions of kernel_abi.h); any other -> CompileError
  // naming the symbol.
  static ElfImage load(std::span<const uint8_t> object);

  // A defined global (or weak) symbol by name.
  std::optional<ElfSymbol> find(std::string_view name) const;
  // Names of the defined global functions, for "kernel not found; the object has: ..." messages.
  std::vector<std::string> function_names() const;

  const void* base() const { return memory_.get(); }
  size_t size() const { return memory_.size(); }

 private:
  struct NamedSymbol {
    std::string name;
    ElfSymbol sym;
  };
  ElfImage(Mapping memory, std::vector<NamedSymbol> symbols)
      : memory_(std::move(memory)), symbols_(std::move(symbols)) {}

  Mapping memory_;
  std::vector<NamedSymbol> symbols_;
};

// Address of a whitelisted host function an object may call, or 0.
uint64_t resolve_host_symbol(std::string_view name);

}  // namespace hcq::cpu
