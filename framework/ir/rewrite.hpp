// Rule-based graph rewriting: a set of rules, each for one op (or any op), applied bottom-up until no rule fires
// anywhere (a fixed point). Every transformation of the IR is written this way (framework.md, contract 1).
#pragma once

#include <functional>
#include <unordered_map>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

// A rule returns the replacement, or nullptr when it does not apply. It must not return its input.
using Rule = std::function<Node(const Node&)>;

class RuleSet {
 public:
  RuleSet& on(Op op, Rule r);  // for nodes of this op
  RuleSet& on_any(Rule r);     // for every node, after the op's own rules
  // The first rule that fires on n, or nullptr.
  Node apply(const Node& n) const;
  // Rewrites by this set mark each result (NodeData::simplified) and skip a marked subgraph: it is a fixed point.
  // One bit on the node, so one rule set in the process may do this (the symbolic rules); its rules must depend
  // on nothing but the node they are given.
  RuleSet& mark_fixed_points(bool on = true) {
    marks_fixed_points_ = on;
    return *this;
  }
  bool marks_fixed_points() const { return marks_fixed_points_; }

 private:
  std::vector<std::vector<Rule>> by_op_;
  std::vector<Rule> any_;
  bool marks_fixed_points_ = false;
};

// Rewrites sources first, then the node, then again what a rule returned, until nothing changes. Memoized per
// call: a shared subgraph is rewritten once. Throws InvalidArgument when 10000 rewrites of one node do not reach a
// fixed point (two rules undoing each other).
Node rewrite(const Node& root, const RuleSet& rules);

// A caller-kept memo, for rewriting several roots that share nodes: each rewritten node's result. It keeps alive
// the intermediate nodes it has keys for (a freed key's address could be reused by a new node).
struct RewriteMemo {
  std::unordered_map<const NodeData*, Node> map;
  std::vector<Node> keep;
};
Node rewrite(const Node& root, const RuleSet& rules, RewriteMemo& memo);

}  // namespace hcq::fw
