// Code generation: a kernel AST (lower.hpp) becomes source for one target family, with its launch shape and a
// name that says its shape (E_ elementwise, r_ reduce, then the output extents and the reduce extents).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "framework/codegen/target.hpp"
#include "framework/ir/node.hpp"

namespace hcq::fw {

struct RenderedKernel {
  std::string name;    // a C identifier, e.g. "r_64_32"
  std::string source;  // a whole translation unit for the target's compiler (after the HCQ kernel ABI prelude)
  std::array<uint32_t, 3> global{1, 1, 1}, local{1, 1, 1};
  uint32_t num_bufs = 0;
  uint32_t num_vals = 0;  // 32-bit values (HCQ_VAL): the variables the kernel reads (Step::vals)
  double flops = 0;       // per launch, for HCQ_DEBUG=2
  double bytes = 0;       // bytes the kernel's buffers hold (read + written), for HCQ_DEBUG=2
  // The optimisations applied, as (operation, axis, amount) in tinygrad's spelling, e.g. "THREAD(0,2) UPCAST(0,6)
  // UPCAST(1,64) PACK(1)": axes count the output ranges in order, then the reduce ranges. For HCQ_DEBUG=2.
  std::string opts;
};

// C for the HCQ kernel ABI, for any target (target.hpp): ranges become loops, reduces accumulators, loop-invariant
// values are hoisted. On the CPU device the outermost output loop is split over workgroups (one per worker); on a GPU
// each thread computes one output element (a grid-stride loop over them). The per-target spellings are the prelude's.
// `choice` 0 is the heuristics' rendering; 1 to render_choices(kernel, facts) - 1 the alternatives a search times
// (framework/engine/beam.hpp): on the CPU device each register tile that fits, best-ranked first, then the plain
// loops last; on a GPU, for a half-type product on its matrix unit, the float panels. A choice past them is an
// InvalidArgument. Every choice computes the same values (up to float32's summation order).
RenderedKernel render_c(const Node& kernel, const TargetFacts& facts, size_t choice = 0);

// How many choices render_c has for this kernel: 1 without optimisation, and on a GPU but for half-type products
// on its matrix unit (2).
size_t render_choices(const Node& kernel, const TargetFacts& facts);

// Opts as data (framework/codegen/opts.cpp): the choice whose opts are exactly `opts` (render_c's spelling:
// "THREAD(0,2) UPCAST(0,4) UPCAST(1,64) PACK(1)"). None: an InvalidArgument that names the first opt that cannot apply
// and why (an axis the kernel lacks, an amount that does not divide the axis, more workers than the device has, a bf16
// path or vector width the device lacks, an unknown name), else lists the renderings the kernel has.
RenderedKernel render_with_opts(const Node& kernel, const TargetFacts& facts, const std::string& opts);

// For tests: a function that edits every kernel render_c returns, before it is compiled (a deliberately wrong kernel,
// to show that faults and validation catch one). Empty: none. Set it while no realize runs, and clear the schedule
// cache around it (schedules keep their compiled kernels).
void set_render_hook(std::function<void(RenderedKernel&)> hook);
// Whether a hook is set (the kernel cache neither keeps nor hands out kernels meanwhile: framework/schedule/kernel_cache.hpp).
bool render_hook_set();

}  // namespace hcq::fw
