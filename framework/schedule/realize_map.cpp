#include "framework/schedule/realize_map.hpp"

#include <array>
#include <unordered_map>
#include <vector>

#include "framework/ir/node_table.hpp"

#include "framework/ir/shape_of.hpp"

namespace hcq::fw {

bool is_param_view(const NodeData* n) {
  if (n->op == Op::RESHAPE) n = n->src[0].get();
  return n->op == Op::PARAM;
}

namespace {

bool expands(const NodeData* n) {
  const Shape& in = n->src[0]->shape;
  for (size_t k = 0; k < in.size(); ++k)
    if (in[k] == 1 && n->shape[k] != 1) return true;
  return false;
}

// An elementwise value costing at least this many ALU ops per element is computed once into a buffer when a kernel
// reads it through an EXPAND (each element then used many times), instead of being recomputed for every use. A
// convolution's input gradient reads a batch norm's backward (some 30 ops with square roots and divisions) once per
// kernel window position and output channel: recomputed, it was 25 times the work of the convolution itself.
constexpr int kExpensiveOps = 16;

// The ALU ops of n's value per element, down to what is realized (loads) and reduces (realized or fused: their cost
// is not per element of n), counting each node once; stops counting at `limit`.
int elementwise_cost(const NodeData* n, const std::unordered_set<const NodeData*>& realized, int limit) {
  // A thread's table and stack, reused: this runs for every elementwise node a kernel reads through an EXPAND, and a
  // std::unordered_set allocated a bucket per node each time.
  thread_local NodeTable seen;
  thread_local std::vector<const NodeData*> stack;
  seen.clear();
  stack.assign(1, n);
  int cost = 0;
  while (!stack.empty() && cost < limit) {
    const NodeData* m = stack.back();
    stack.pop_back();
    if (!seen.insert(m) || (m != n && realized.count(m)) || m->op == Op::REDUCE_AXIS) continue;
    if (is_elementwise(m->op) && m->op != Op::CAST && m->op != Op::BITCAST) ++cost;
    for (const Node& s : m->src) stack.push_back(s.get());
  }
  return cost;
}

// Transcendentals and divisions: what makes recomputing an elementwise value cost more than reading it back.
bool expensive(Op op) {
  switch (op) {
    case Op::EXP:
    case Op::EXP2:
    case Op::LOG:
    case Op::LOG2:
    case Op::SIN:
    case Op::COS:
    case Op::SQRT:
    case Op::RECIPROCAL:
    case Op::FDIV:
    case Op::POW: return true;
    default: return false;
  }
}

// Expensive ops in n's elementwise tree, down to reduces and leaves (memoised, per realize_map call, in a NodeTable:
// the graph is a DAG, and an unordered_map allocated a bucket per node).
int expensive_ops(const NodeData* n, NodeTable& memo) {
  if (n->op == Op::REDUCE_AXIS || n->src.empty()) return 0;
  if (const uint32_t* c = memo.find(n)) return static_cast<int>(*c);
  int c = expensive(n->op) ? 1 : 0;
  for (const Node& s : n->src) c += expensive_ops(s.get(), memo);
  memo.insert(n, static_cast<uint32_t>(c));
  return c;
}

// An elementwise value with at least this many expensive ops, that two kernels use and one of them reads through
// an EXPAND, is realized: a softmax's gradient feeds both weight gradients and the input gradient of a linear
// layer, and fused into a product's operand it would be recomputed for every column of the product. Not a value of
// one element: the code generator computes that once, before the loops.
constexpr int kRealizeExpensiveOps = 2;

// A sum of products (a matmul's or a convolution's contraction), through casts.
bool is_contraction(const NodeData* n) {
  if (static_cast<Op>(n->i[0]) != Op::ADD) return false;
  const NodeData* v = n->src[0].get();
  while (v->op == Op::CAST) v = v->src[0].get();
  return v->op == Op::MUL;
}

}  // namespace

std::unordered_set<const NodeData*> realize_map(const std::vector<Node>& roots,
                                                const std::unordered_set<const NodeData*>& extra) {
  // The kernel (realized root) whose walk reached each reduce: a reduce that two kernels need is computed once,
  // into a buffer, instead of in both.
  std::unordered_map<const NodeData*, const NodeData*> reached_by;
  // The same for expensive elementwise values (kRealizeExpensiveOps): the first kernel, and whether any reached it
  // through an EXPAND.
  std::unordered_map<const NodeData*, std::pair<const NodeData*, bool>> ew_reached_by;
  thread_local NodeTable cost;  // expensive_ops' memo
  cost.clear();
  std::unordered_set<const NodeData*> realized(extra.begin(), extra.end());
  std::vector<const NodeData*> work;
  for (const Node& r : roots)
    if (!is_param_view(r.get()) && realized.insert(r.get()).second) work.push_back(r.get());
  for (const NodeData* e : extra) work.push_back(e);

  // Walk each kernel's graph from its realized root down to the next realized nodes, tracking whether the path
  // went through an EXPAND; new realized nodes start walks of their own.
  // (node, expanded, below a reduce) of one kernel's walk: a table per pair of flags, a thread's, emptied per walk
  // (a std::unordered_set allocated a bucket per visit).
  thread_local std::array<NodeTable, 4> visited;
  while (!work.empty()) {
    for (NodeTable& v : visited) v.clear();
    const NodeData* root = work.back();
    work.pop_back();
    struct Visit {
      const NodeData* n;
      bool expanded, in_reduce;
    };
    std::vector<Visit> stack;
    for (const Node& s : root->src) stack.push_back({s.get(), false, root->op == Op::REDUCE_AXIS});
    if (root->op == Op::COPY && !is_param_view(root->src[0].get()) && realized.insert(root->src[0].get()).second) {
      work.push_back(root->src[0].get());  // a copy moves a buffer: its source is realized on its own device
      continue;
    }
    while (!stack.empty()) {
      auto [n, expanded, in_reduce] = stack.back();
      stack.pop_back();
      if (!visited[(expanded ? 1 : 0) + (in_reduce ? 2 : 0)].insert(n)) continue;
      if (realized.count(n)) continue;
      bool realize = false;
      switch (n->op) {
        case Op::CONTIGUOUS:
        case Op::COPY:
        case Op::ASSIGN: realize = true; break;
        case Op::REDUCE_AXIS: {
          auto [it, first] = reached_by.emplace(n, root);
          // A contraction under another reduce (a convolution feeding a max pool) would be fused as a nest the
          // code generator cannot tile: computed on its own it runs at the tiled speed.
          realize = expanded || (!first && it->second != root) || (in_reduce && is_contraction(n));
          break;
        }
        default:
          if (!is_elementwise(n->op)) break;
          realize = expanded && elementwise_cost(n, realized, kExpensiveOps) >= kExpensiveOps;
          // A one-element value (Adam's bias corrections) is computed once per kernel anyway, outside its loops.
          if (!realize && numel(n->shape) > 1 && expensive_ops(n, cost) >= kRealizeExpensiveOps) {
            auto [it, first] = ew_reached_by.emplace(n, std::pair{root, expanded});
            it->second.second = it->second.second || expanded;
            realize = !first && it->second.first != root && it->second.second;
          }
          break;
      }
      if (realize) {
        realized.insert(n);
        work.push_back(n);
        continue;
      }
      const bool e = expanded || (n->op == Op::EXPAND && expands(n));
      const bool r = in_reduce || n->op == Op::REDUCE_AXIS;
      for (const Node& s : n->src) stack.push_back({s.get(), e, r});
    }
  }
  return realized;
}

}  // namespace hcq::fw
