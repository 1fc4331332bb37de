// The launcher that runs a QMD launch as its host twin: the kernel is named by its program address (the first
// instruction, as the QMD holds it) and reads its parameters from constant bank 0 at the architecture's parameter
// offset, the layout the twin's kernarg ABI shares with the cubin's.
#pragma once

#include "sim/nv_engine/engine.hpp"

namespace hcq::sim {
class TwinRegistry;
}

namespace hcq::sim::nv_engine {

// `twins` must outlive every runner that uses the returned launcher.
LaunchFn twin_launcher(const TwinRegistry& twins);

}  // namespace hcq::sim::nv_engine
