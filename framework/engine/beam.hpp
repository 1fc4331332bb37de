// HCQ_BEAM=N (issue 19; docs/framework.md, "Search"): for each new kernel of a schedule on the CPU device, the first
// N distinct renderings render_c offers (the heuristics' first, then the other register tiles, best-ranked first,
// then the plain loops) are compiled in parallel, run on the device on the same inputs, checked against the
// heuristics' rendering (a candidate whose output differs beyond its dtype's tolerance is dropped, never used) and
// timed; the fastest is the kernel the schedule gets. The winner's opts are kept on disk
// ($HCQ_CACHE_DIR/beam/, keyed by the compiler's cache key of the heuristics' source and N), so the next process
// renders it without a search. A search prints one line to stderr.
#pragma once

#include <cstdint>
#include <string>

#include "framework/codegen/render.hpp"

namespace hcq::fw {

// The rendering the schedule uses for `ast` on `device`: render_c's own without HCQ_BEAM (or off the CPU device, or
// when there is only one), else the search's winner.
RenderedKernel render_searched(const Node& ast, const TargetFacts& facts, const std::string& device);

// What the searches of this process did (tests, hcq bench).
struct BeamStats {
  uint64_t searches = 0;    // kernels searched (timed)
  uint64_t cache_hits = 0;  // kernels whose winner came from the disk
  uint64_t timed = 0;       // candidates timed
  uint64_t rejected = 0;    // candidates dropped for computing something else
};
BeamStats beam_stats();

}  // namespace hcq::fw
