#include "framework/autograd/gradient.hpp"

#include <unordered_set>

#include "framework/tensor/build.hpp"

namespace hcq::fw {

std::unordered_map<const NodeData*, Node> gradients(const Node& root, const Node& root_grad,
                                                    const std::vector<Node>& targets) {
  const std::vector<Node> order = toposort_nodes({root});  // sources before users
  std::unordered_set<const NodeData*> wanted;
  for (const Node& t : targets) wanted.insert(t.get());

  // Only nodes with a target among their sources (or that are one) need a gradient: the rest of the graph is
  // never differentiated, so a loss over a large frozen model costs only the trainable part.
  std::unordered_set<const NodeData*> on_path;
  for (const Node& n : order) {
    bool reaches = wanted.contains(n.get());
    for (const Node& s : n->src) reaches = reaches || on_path.contains(s.get());
    if (reaches) on_path.insert(n.get());
  }

  std::unordered_map<const NodeData*, Node> grad{{root.get(), root_grad}};
  std::unordered_map<const NodeData*, Node> out;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node& n = *it;
    auto g = grad.find(n.get());
    if (g == grad.end() || !on_path.contains(n.get())) continue;
    if (wanted.contains(n.get())) out.emplace(n.get(), g->second);
    const std::vector<Node> src_grads = gradient_rule(n, g->second);
    for (size_t k = 0; k < n->src.size(); ++k) {
      const Node& s = n->src[k];
      if (!src_grads[k] || !on_path.contains(s.get())) continue;
      auto [slot, fresh] = grad.try_emplace(s.get(), src_grads[k]);
      if (!fresh) slot->second = t_alu(Op::ADD, s->dtype, {slot->second, src_grads[k]});
    }
  }
  return out;
}

}  // namespace hcq::fw
