#include "framework/ir/rewrite.hpp"

#include <memory>
#include <vector>

#include "framework/ir/node_table.hpp"
#include "hcq/error.hpp"

namespace hcq::fw {

RuleSet& RuleSet::on(Op op, Rule r) {
  const size_t k = static_cast<size_t>(op);
  if (by_op_.size() <= k) by_op_.resize(k + 1);
  by_op_[k].push_back(std::move(r));
  return *this;
}

RuleSet& RuleSet::on_any(Rule r) {
  any_.push_back(std::move(r));
  return *this;
}

Node RuleSet::apply(const Node& n) const {
  const size_t k = static_cast<size_t>(n->op);
  if (k < by_op_.size())
    for (const Rule& r : by_op_[k])
      if (Node out = r(n)) return out;
  for (const Rule& r : any_)
    if (Node out = r(n)) return out;
  return nullptr;
}

namespace {

// The walk's memo as the caller keeps it (RewriteMemo: several roots sharing nodes).
struct MapMemo {
  RewriteMemo& m;
  const Node* find(const NodeData* n) const {
    auto it = m.map.find(n);
    return it == m.map.end() ? nullptr : &it->second;
  }
  void set(const NodeData* n, const Node& r) { m.map[n] = r; }
  void keep(Node n) { m.keep.push_back(std::move(n)); }
};

// The memo of one rewrite(root, rules) call: a NodeTable into a vector of results, taken from a thread's pool (a
// rule may simplify again, inside a walk, so each nesting level takes its own) and handed back emptied. The final
// simplify of every kernel's AST walks a hundred nodes, and an unordered_map allocated a bucket for each.
struct TableScratch {
  NodeTable index;            // node -> position in results
  std::vector<Node> results;  // (a key's node is kept in `kept`, so no other node takes its address meanwhile)
  std::vector<Node> kept;
};

class TableMemo {
 public:
  TableMemo() {
    if (pool().empty()) {
      s_ = std::make_unique<TableScratch>();
    } else {
      s_ = std::move(pool().back());
      pool().pop_back();
    }
    s_->index.clear();
  }
  ~TableMemo() {
    s_->results.clear();
    s_->kept.clear();
    pool().push_back(std::move(s_));
  }
  TableMemo(const TableMemo&) = delete;
  TableMemo& operator=(const TableMemo&) = delete;

  const Node* find(const NodeData* n) const {
    const uint32_t* k = s_->index.find(n);
    return k ? &s_->results[*k] : nullptr;
  }
  void set(const NodeData* n, const Node& r) {
    if (const uint32_t* k = s_->index.find(n)) {
      s_->results[*k] = r;
      return;
    }
    s_->index.insert(n, static_cast<uint32_t>(s_->results.size()));
    s_->results.push_back(r);
  }
  void keep(Node n) { s_->kept.push_back(std::move(n)); }

 private:
  static std::vector<std::unique_ptr<TableScratch>>& pool() {
    thread_local std::vector<std::unique_ptr<TableScratch>> p;
    return p;
  }
  std::unique_ptr<TableScratch> s_;
};

template <class Memo>
Node rewrite_walk(const Node& root, const RuleSet& rules, Memo& memo) {
  const bool marks = rules.marks_fixed_points();
  auto fixed = [&](const Node& n) { return marks && n->simplified.load(std::memory_order_relaxed); };
  // Iterative post-order, so deep graphs (a chain of thousands of ops) do not exhaust the stack. A frame rewrites
  // `n`; when a rule replaces it, the frame goes on with the replacement, and every node it went through (`seen`)
  // maps to the final result.
  struct Frame {
    Node n;
    size_t next = 0;
    int rounds = 0;
    std::vector<Node> seen;
  };
  std::vector<Frame> stack;
  stack.push_back(Frame{root, 0, 0, {}});
  Node result;
  auto finish = [&](Node r) {
    // r is a fixed point: its sources are results (fixed points) and no rule fires on it.
    if (marks) r->simplified.store(true, std::memory_order_relaxed);
    Frame& fr = stack.back();
    memo.set(fr.n.get(), r);
    memo.keep(fr.n);
    for (Node& s : fr.seen) {
      memo.set(s.get(), r);
      memo.keep(std::move(s));  // a key must outlive the memo, or a new node at its address would hit
    }
    result = std::move(r);
    stack.pop_back();
  };
  while (!stack.empty()) {
    Frame& fr = stack.back();
    if (fr.next == 0) {
      if (fixed(fr.n)) {
        result = fr.n;
        if (!fr.seen.empty()) finish(fr.n);
        else stack.pop_back();
        continue;
      }
      if (const Node* r = memo.find(fr.n.get())) {
        finish(*r);
        continue;
      }
    }
    if (fr.next < fr.n->src.size()) {
      const Node& c = fr.n->src[fr.next++];
      if (!fixed(c) && !memo.find(c.get())) stack.push_back(Frame{c, 0, 0, {}});
      continue;
    }
    // The sources are rewritten: rebuild with them, then try the rules.
    std::vector<Node> src;
    src.reserve(fr.n->src.size());
    bool changed = false;
    for (const Node& c : fr.n->src) {
      src.push_back(fixed(c) ? c : *memo.find(c.get()));
      changed |= src.back() != c;
    }
    Node cur =
        changed ? make_node(fr.n->op, fr.n->dtype, std::move(src), fr.n->i, fr.n->f, fr.n->s, fr.n->payload) : fr.n;
    Node out = rules.apply(cur);
    if (!out) {
      if (cur != fr.n) fr.seen.push_back(cur);
      finish(cur);
      continue;
    }
    if (++fr.rounds > 10000)
      throw InvalidArgument(cat("rewrite: no fixed point after 10000 rewrites of a ", op_name(fr.n->op),
                                " node (two rules undo each other)"));
    fr.seen.push_back(fr.n);
    if (cur != fr.n) fr.seen.push_back(cur);
    fr.n = std::move(out);
    fr.next = 0;
  }
  return result;
}

}  // namespace

Node rewrite(const Node& root, const RuleSet& rules) {
  // The index builders (symbolic.hpp: idx_add(a, b) and the like) simplify one new node over parts already
  // simplified, many times per kernel. With every source a marked fixed point, the walk below reduces to trying the
  // rules on the root: done here without its stack and memo (three allocations a call). When a rule fires, the
  // result is rewritten as the walk would go on with it.
  if (rules.marks_fixed_points()) {
    if (root->simplified.load(std::memory_order_relaxed)) return root;
    bool sources_fixed = true;
    for (const Node& s : root->src) sources_fixed = sources_fixed && s->simplified.load(std::memory_order_relaxed);
    if (sources_fixed) {
      Node out = rules.apply(root);
      if (!out) {
        root->simplified.store(true, std::memory_order_relaxed);
        return root;
      }
      TableMemo memo;
      return rewrite_walk(out, rules, memo);
    }
  }
  TableMemo memo;
  return rewrite_walk(root, rules, memo);
}

Node rewrite(const Node& root, const RuleSet& rules, RewriteMemo& m) {
  MapMemo memo{m};
  return rewrite_walk(root, rules, memo);
}

}  // namespace hcq::fw
