// HCQ_VALIDATE=1 (seed chapter 05's CPU cross-validation; docs/knobs.md): every kernel the engine runs on a device
// other than the CPU device, eagerly or in a TinyJit replay, is run alone and waited for, and a second time on the
// CPU device on copies of the buffers it got (taken before it ran); the first output element that differs beyond
// its dtype's tolerance is a ValidationError naming the kernel, its tensor op, the element and both values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "framework/ir/node.hpp"
#include "framework/schedule/schedule.hpp"

namespace hcq {
class Buffer;
}

namespace hcq::fw {

// The first element of `got` that differs from `want` beyond dtype t's tolerance (floats: an absolute floor plus a
// part relative to `want`; integers and bools exact; NaN matches NaN): its index, both values and the tolerance in
// words ("float32 tolerance 1e-05 + 0.0001"); nullopt when they agree.
struct Mismatch {
  size_t element = 0;
  double got = 0, want = 0;
  std::string tolerance;
};
// `tolerance_of`: the type whose tolerance applies, when not t's own (a float32 output of a kernel that rounds
// through float16).
std::optional<Mismatch> first_mismatch(DType t, std::span<const std::byte> got, std::span<const std::byte> want,
                                       std::optional<DType> tolerance_of = std::nullopt);

// Whether `step` (a kernel step) is one HCQ_VALIDATE cross-checks: the knob is on and it runs off the CPU device.
bool validates(const Step& step);

// Runs kernel step `step` (its AST `ast`, output dtype `out`) on `bufs` (per argument; null for an empty one) and
// `vals` (its variables' values, both runs) as described above. Waits for the step's device first (the inputs must be computed) and after. Throws
// ValidationError at a difference; the device's own errors propagate.
void run_validated(const Step& step, const Node& ast, DType out, std::span<Buffer* const> bufs,
                   std::span<const uint32_t> vals);

}  // namespace hcq::fw
