// Rangeify's second half: one realized node's value, as a kernel AST over loops. Every output dimension gets a
// RANGE; movement ops become arithmetic on the ranges (simplified as it is built); PAD becomes a validity gate on
// loads; a fused REDUCE_AXIS gets its own reduce RANGEs. Realized inputs and parameters become LOADs from the
// kernel's numbered buffers (kernel-level PARAMs), so two kernels of the same structure on different buffers have
// the same AST (and the same generated source).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

struct LoweredKernel {
  Node ast;                     // KERNEL(STORE(PARAM 0, index, value))
  std::vector<uint32_t> slots;  // the schedule slot of each kernel buffer: [0] the output, then inputs in order
  std::vector<uint32_t> vals;   // the call's variable behind each of the kernel's 32-bit values, in order
  // The tensor-level nodes the kernel reads (realized nodes and PARAMs), for ordering.
  std::vector<const NodeData*> reads;
  // Fused reduces this kernel needs at several indices (their consumers disagree on the ranges): computed once per
  // use as it stands. The scheduler lowers again with each one either realized whole (no axis agrees) or partially
  // (`local_axes`).
  struct Disagreement {
    const NodeData* reduce;
    std::vector<bool> disagreeing_axes;  // per dimension of the reduce's output
    int64_t local_elements;              // the product of the disagreeing axes' extents
  };
  std::vector<Disagreement> disagreeing;
};

// Partial realisation: reduces computed into a kernel-local array over the axes where their users disagree
// (true in the mask), inside the loops of the axes where they agree.
using LocalAxes = std::unordered_map<const NodeData*, std::vector<bool>>;

// Lowers `root`'s value (for an ASSIGN root: its value; for CONTIGUOUS: its source) into a kernel writing
// `out_slot`. `realized` maps the other realized nodes to their slots; a tensor-level PARAM's slot is its number.
LoweredKernel lower_kernel(const Node& root, uint32_t out_slot,
                           const std::unordered_map<const NodeData*, uint32_t>& realized, const LocalAxes& local);

// The identity a reduce starts from, per op (ADD 0, MUL 1, MAX lowest, MIN highest), in the dtype's range.
double reduce_identity(Op op, DType t);

}  // namespace hcq::fw
