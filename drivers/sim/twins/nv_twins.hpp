// Host twins for NVIDIA cubins: the cubin as the vendor-neutral TwinRegistry sees it. A kernel is named by its first
// instruction (the QMD's program address); its arguments are the parameter block in constant bank 0, at the
// kernel's param offset, so the simulator passes cbank0's address as TwinDispatch::kernarg_va.
#pragma once

#include "twins/twin_registry.hpp"

namespace hcq::nv {
class Cubin;
}

namespace hcq::sim {

// The image the NV loader uploads at `base` (Cubin::image(), relocated there where it has relocations), with each
// kernel's code offset and parameter window.
ImageDesc image_of(const nv::Cubin& cubin, uint64_t base);

// Builds the twins of every kernel of `cubin` from the C source the NV compiler appended (.hcq.source), with the
// CPU compiler. Returns the number registered: 0 when the cubin carries no source. Throws CompileError when the CPU
// build lacks a kernel or disagrees with the cubin's argument counts (<name>_hcq_desc) or parameter size.
size_t add_from_source(TwinRegistry& registry, const nv::Cubin& cubin, Compiler& cpu_compiler);

}  // namespace hcq::sim
