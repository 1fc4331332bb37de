// HCQ_JIT_CHECK (docs/knobs.md): the first replays of a TinyJit are checked against the function run eagerly on the
// same inputs and draws; the first output element that differs, bit for bit, is a JitError naming the output, the
// element, both values and the captured kernel that wrote it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "hcq/tensor.hpp"

namespace hcq::fw {

// Replays checked per TinyJit under HCQ_JIT_CHECK=1: call 1's (the capture's) and calls 2 and 3.
inline constexpr size_t kJitCheckedReplays = 3;

// Compares `replayed` with `eager` (the same count, shapes and dtypes: one function's outputs) bit for bit. `writers`
// names, per output, what wrote it in the replay. Throws JitError at the first difference.
void check_replay(size_t call, const std::vector<Tensor>& replayed, const std::vector<Tensor>& eager,
                  const std::vector<std::string>& writers);

}  // namespace hcq::fw
