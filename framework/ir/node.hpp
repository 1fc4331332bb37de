// NodeData: one node of the IR, hash-consed. Building a node returns the existing object when a structurally equal
// one is alive, so equality is a pointer compare, and a node's hash is computed once. Nodes are immutable and
// shared (Node = shared_ptr); the intern table holds them weakly, so a graph nobody uses is freed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "framework/ir/ops.hpp"
#include "hcq/dtype.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
class Buffer;
}

namespace hcq::fw {

struct NodeData;
using Node = std::shared_ptr<const NodeData>;

// The integer type of index arithmetic inside kernels (rendered as int64_t).
inline constexpr DType kIndex = DType::int64;

struct NodeData {
  // ---- identity: what hash-consing compares
  Op op;
  DType dtype;

 private:
  // Whether realized_ (below) is set; written under its lock. Most nodes of a graph are not realized, and callify
  // asks every node, so for them the answer is a load from the node's first cache line, not a lock.
  mutable std::atomic<bool> has_realized_{false};

 public:
  // Set when a rewrite by a rule set that marks its fixed points (RuleSet::mark_fixed_points: the symbolic rules,
  // simplify) found that no rule changes this node or anything below it, so the next rewrite skips the subgraph:
  // index arithmetic is built by simplifying one new node over simplified parts, which walked every part again.
  mutable std::atomic<bool> simplified{false};
  // Callify's memo (framework/engine/callify.cpp): the position a walk gave this node in its key, a hint that the
  // walk checks against its own list of positions (a stale value from an earlier walk fails the check). In the
  // padding of the first cache line, which the walk reads anyway.
  mutable std::atomic<uint32_t> walk_position{0};
  std::vector<Node> src;
  std::vector<int64_t> i;  // integer arguments (axes, shapes, ids, integer constants)
  double f = 0;            // a float constant (compared bitwise)
  std::string s;           // a device or kernel name

  // ---- derived from the identity when the node is made
  size_t hash = 0;
  Shape shape;  // tensor-level nodes: the shape; kernel-level: empty
  // Tensor level: per dimension, the variable whose value is its size (symbolic_dims.hpp), or null; empty: none.
  std::vector<Node> dim_vars;
  int64_t vmin = 0, vmax = 0;  // bounds of integer kernel-level values (index arithmetic); 0, 0 otherwise
  // BUFFER only: the memory (created with the node; allocated when first used).
  std::shared_ptr<Buffer> payload;

  // ---- set once, when a lazy tensor-level node is realized: the node (a BUFFER view) that now holds its value.
  // Later graphs that still contain this node read that buffer instead of recomputing it.
  Node realized() const { return has_realized_.load(std::memory_order_acquire) ? realized_locked() : nullptr; }
  void set_realized(Node n) const;

  // BUFFER only: the lazy nodes realized into this buffer (weakly). An assign that overwrites the buffer unlinks
  // them, so graphs that still hold one compute its value anew instead of reading the overwritten memory.
  void add_realized_from(const Node& lazy) const;
  void unlink_realized_from() const;

  // BUFFER only: whether realize handed this buffer to more than one tensor (equal lazy expressions are one node,
  // computed once). An assign to one of them then writes a buffer of its own, so the others keep their value.
  bool shared_by_tensors() const { return shared_by_tensors_.load(std::memory_order_relaxed); }
  void mark_shared_by_tensors() const { shared_by_tensors_.store(true, std::memory_order_relaxed); }

  const std::string& device() const;  // tensor level: the device of the value
  bool is_const(double v) const;      // a CONST of this value
  double const_value() const;         // CONST: the value as a double

  ~NodeData();

 private:
  Node realized_locked() const;
  mutable std::mutex realized_mu_;
  mutable Node realized_;
  mutable std::vector<std::weak_ptr<const NodeData>> realized_from_;
  mutable std::atomic<bool> shared_by_tensors_{false};
  friend Node make_node(Op, DType, std::vector<Node>, std::vector<int64_t>, double, std::string,
                        std::shared_ptr<Buffer>);
};

// The one constructor: returns the live node equal to (op, dtype, src, i, f, s), or makes it. A BUFFER's payload
// is not part of its identity (its id is); its id must be new (new_buffer_node's counter), so a BUFFER is always
// made, without looking for an equal one.
Node make_node(Op op, DType dtype, std::vector<Node> src = {}, std::vector<int64_t> i = {}, double f = 0,
               std::string s = {}, std::shared_ptr<Buffer> payload = nullptr);

// `n` with each source replaced by f(source): `n` itself when none changed, else the node with the new sources (and
// the same op, dtype and arguments). The step of every graph rewrite that rebuilds a node from rewritten sources.
template <class F>
Node map_sources(const Node& n, F&& f) {
  std::vector<Node> src;
  src.reserve(n->src.size());
  bool changed = false;
  for (const Node& s : n->src) {
    src.push_back(f(s));
    changed |= src.back() != s;
  }
  return changed ? make_node(n->op, n->dtype, std::move(src), n->i, n->f, n->s) : n;
}

// Number of live nodes (tests: a graph nobody holds is freed).
size_t live_node_count();

// ---- shorthands for kernel-level building (no simplification: see symbolic.hpp for that)
Node const_node(DType t, double v, const std::string& device = {});
Node index_const(int64_t v);

// A readable one-line-per-node print of a graph (HCQ_DEBUG=5, errors, tests).
std::string to_string(const Node& root);

// Every node reachable from `roots`, each once, sources before users.
std::vector<const NodeData*> toposort(const std::vector<Node>& roots);
// The same, as owning handles.
std::vector<Node> toposort_nodes(const std::vector<Node>& roots);

}  // namespace hcq::fw
