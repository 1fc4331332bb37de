// Callify: the graph a realize schedules, with its buffers as numbered parameters (PARAM) and its bound variables
// as numbered values (VAR_PARAM), so that the schedule depends on the graph's structure only (framework.md,
// contract 3). One walk over the roots writes that parameterised graph as a flat key, node by node, without
// building it: a schedule-cache hit (an eager training loop's every step) needs only the key and the call's
// buffers and values; a miss builds the parameterised graph from the key (parameterised_graph), so the schedule is
// built from exactly what the key says.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// The parameterised graph, written out: equal keys describe the same graph (the nodes in the walk's order, each
// with its op, dtype, sources by position, integer arguments, float constant and string). Two structurally equal
// graphs over other buffers give equal keys; any difference the schedule could depend on (a shape, dtype, op,
// constant, device, variable, or one buffer where the other graph has two) gives another key.
struct CallKey {
  std::vector<uint64_t> words;
  uint64_t hash = 0;  // of the words
  bool operator==(const CallKey& o) const { return hash == o.hash && words == o.words; }
};

struct Callified {
  CallKey key;
  std::vector<Node> buffers;     // the BUFFER node of each parameter, by number (first use in the walk)
  std::vector<uint32_t> values;  // the value of each variable (VAR_PARAM), by number, as a kernel reads it
  std::vector<Node> bound;       // the BIND that gave each variable its value

  Callified() = default;
  Callified(Callified&&) = default;
  Callified& operator=(Callified&&) = default;
  // Hands the key's storage back to this thread, for its next callify: a training step's key is tens of kilobytes,
  // and an allocation of that size on every realize costs more than the walk (glibc consolidates its free lists).
  ~Callified();
};

// Nodes realized by an earlier realize read their buffers; DETACH and CUSTOM_GRAD (autograd's) are their first
// source. A variable bound to two values in one graph is refused (InvalidArgument): its kernels read one.
Callified callify(const std::vector<Node>& roots);

// The parameterised graph a key describes: a SINK whose sources are the callified roots, in order.
Node parameterised_graph(const CallKey& key);

}  // namespace hcq::fw
