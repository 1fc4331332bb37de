// The engine's entry points for the Tensor layer: make buffers, realize roots (callify, schedule cache, run),
// read back, and the counters.
#include <memory>
#include <span>
#include <vector>

#include "framework/ir/node.hpp"

#pragma once

namespace hcq::fw {

// A BUFFER node of n elements with fresh (lazily allocated) memory on `device`; n may be 0 (no memory).
Node new_buffer_node(const std::string& device, DType dtype, int64_t n);
// A BUFFER, or a RESHAPE of one with the same element count: a realized tensor.
bool is_buffer_view(const Node& n);
// The buffer view an assign chain (ASSIGN(ASSIGN(view, v1), v2)...) writes, or null when it ends elsewhere.
const Node* assign_base(const Node& n);
// Realizes the roots in one schedule; returns, for each, its realized node (a buffer view of the root's shape).
std::vector<Node> realize_nodes(const std::vector<Node>& roots);
// Copies a realized buffer view's elements to the host (waits for the kernels that write it).
void read_buffer_view(const Node& view, std::span<std::byte> out);

// Only the scheduling half of realize_nodes (callify, then the schedule cache, building on a miss), for
// benchmarks of its cost: returns the number of kernels and sets *hit. Runs nothing. The roots must not be
// realized already.
size_t schedule_only(const std::vector<Node>& roots, bool* hit);

FrameworkCounters counters();
// Forget every cached schedule (benchmarks of the miss path; tests).
void clear_schedule_cache();

}  // namespace hcq::fw
