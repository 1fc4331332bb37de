// Memory planning across a captured call (framework.md, contract 8, over the whole list instead of one realize):
// the intermediates of every captured realize (each schedule's arena of temporaries, and the buffers realized
// inside the function that nothing outside the capture holds) are placed in one arena per device, where two that
// are alive at the same step never overlap. The replay then reads and writes views of that arena, and the capture's
// own buffers go when the capture does.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "framework/jit/capture.hpp"

namespace hcq::fw {

struct CapturedPlan {
  // Per original buffer (a slot's buffer in the capture's records): the view of the arena that replaces it.
  std::unordered_map<const Buffer*, std::shared_ptr<Buffer>> relocated;
  uint64_t arena_bytes = 0;    // all devices together
  uint64_t planned_bytes = 0;  // what the relocated intermediates held before, all devices together
};

// `keep`: buffers that must stay where they are (inputs, outputs, random keys). A buffer realized inside the
// function is an intermediate only when the capture's records hold every reference to it (nothing can read it
// after the call but the replay).
CapturedPlan plan_captured_memory(const Capture& capture, const std::unordered_set<const Buffer*>& keep);

}  // namespace hcq::fw
