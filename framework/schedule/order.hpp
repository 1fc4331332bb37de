// Ordering (framework.md, contract 6): the steps of a schedule sorted by their buffer dependencies.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// What one step touches: the realized node it writes (an ASSIGN writes its target parameter's slot), and the
// tensor-level nodes it reads (realized nodes and PARAMs).
struct StepAccess {
  const NodeData* writes;
  uint32_t write_slot;
  std::vector<const NodeData*> reads;
  bool copy = false;  // a copy (between devices, or buffers), run by a copy engine
};

// A topological order (among the ready steps the lowest index first, so it is deterministic, except that a step
// reading what a copy wrote goes after the others: it waits for another device, and on its device's timeline it would
// hold up what comes after it. An allreduce lists copy into 0, add on 0, copy into 1, add on 1; in that order device
// 0's copy out would wait behind its add, which waits for device 1's copy): a read of a realized
// node after the step that writes it (RAW); a read of a parameter's old value before every assign that overwrites
// that parameter (WAR); the outer of two chained assigns after the inner (WAW). A cycle is an InvalidArgument that
// names each step left, with `describe(k)`.
std::vector<size_t> order_steps(const std::vector<StepAccess>& steps,
                                const std::function<std::string(size_t)>& describe);

}  // namespace hcq::fw
