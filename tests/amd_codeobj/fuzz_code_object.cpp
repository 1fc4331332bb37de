// libFuzzer target for the AMDHSA code object loader: any input either loads (and its kernels can be asked about)
// or is a CompileError; a crash, an out-of-bounds read (under ASan) or another exception is a finding.
// Build: clang++-19 -std=c++20 -fsanitize=fuzzer,address,undefined (see meson.build); seed it with code objects
// from the AMD compiler.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "amd/codeobj/code_object.hpp"
#include "hcq/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const hcq::amd::CodeObject co = hcq::amd::CodeObject::parse(std::span<const uint8_t>(data, size));
    for (const hcq::amd::CodeObjectKernel& k : co.kernels()) {
      try {
        (void)co.info(k.name, hcq::amd::Target::from_gfx(co.gfx()));
      } catch (const hcq::InvalidArgument&) {
      }
    }
    if (!co.relocations().empty()) (void)co.image_at(co.image_alignment());
  } catch (const hcq::CompileError&) {
  } catch (...) {
    std::abort();
  }
  return 0;
}
