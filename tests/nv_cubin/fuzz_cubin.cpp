// libFuzzer target for the cubin loader: any input either loads (and its image relocates, its kernels can be checked
// against an architecture's limits) or is a CompileError; a crash, an out-of-bounds read (under ASan) or another
// exception is a finding. Seed it with cubins from the NV compiler (see meson.build).
#include <cstdint>
#include <cstdlib>
#include <span>

#include "hcq/error.hpp"
#include "nv/cubin/cubin.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const hcq::nv::Cubin c = hcq::nv::Cubin::parse(std::span<const uint8_t>(data, size));
    for (const hcq::nv::CubinKernel& k : c.kernels()) {
      try {
        hcq::nv::Cubin::check_launch(k, {128, 1, 1}, 0, hcq::nv::LaunchLimits{});
      } catch (const hcq::InvalidArgument&) {
      }
      // Every bank a launch would bind lies inside the image.
      for (const hcq::nv::CubinConstantBank& b : c.banks_of(k))
        if (b.offset + b.size > c.image().size()) std::abort();
    }
    try {
      (void)c.image_at(hcq::nv::Cubin::image_alignment() * 16);
    } catch (const hcq::InvalidArgument&) {
    }
    (void)c.source();
  } catch (const hcq::CompileError&) {
  } catch (...) {
    std::abort();
  }
  return 0;
}
