#include "framework/schedule/split_reduce.hpp"

#include <vector>

#include "framework/ir/node_table.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/tensor/build.hpp"

namespace hcq::fw {
namespace {

// The split of one reduce, or null when it does not qualify.
Node split(const Node& reduce, const Node& x, const SplitLimits& lim) {
  const Shape& in = x->shape;
  const Op op = static_cast<Op>(reduce->i[0]);
  std::vector<int64_t> axes(reduce->i.begin() + 1, reduce->i.end());
  int64_t reduced = 1;
  for (int64_t a : axes) reduced *= in[static_cast<size_t>(a)];
  if (reduced < lim.min_reduce || numel(reduce->shape) > lim.max_outputs) return nullptr;
  // The outermost reduced axis with a divisor in [8, max_parts]: its chunks are the longest contiguous runs.
  for (int64_t a : axes) {
    // A symbolic axis stays whole: its mask compares the index with the variable (symbolic_dims.hpp).
    if (!x->dim_vars.empty() && x->dim_vars[static_cast<size_t>(a)]) continue;
    const int64_t n = in[static_cast<size_t>(a)];
    int64_t parts = 0;
    for (int64_t p = lim.max_parts; p >= 8 && !parts; --p)
      if (n % p == 0 && n / p > 1) parts = p;
    if (!parts) continue;
    Shape viewed(in.begin(), in.begin() + a);
    viewed.push_back(parts);
    viewed.push_back(n / parts);
    viewed.insert(viewed.end(), in.begin() + a + 1, in.end());
    std::vector<int64_t> inner_axes;
    for (int64_t b : axes) inner_axes.push_back(b < a ? b : b + 1);
    const Node partials = make_node(Op::CONTIGUOUS, x->dtype, {t_reduce(t_reshape(x, viewed), op, inner_axes)});
    return t_reshape(t_reduce(partials, op, {a}), reduce->shape);
  }
  return nullptr;
}

// Every schedule-cache miss walks the whole graph here, and on the CPU device most graphs split nothing: the walk
// allocates nothing for a node none of whose sources changed (map_sources built a source vector per node), and its
// memo is a thread's NodeTable (an unordered_map allocated a bucket per node).
class Splitter {
 public:
  explicit Splitter(const std::function<std::optional<SplitLimits>(const std::string&)>& limits_on)
      : limits_on_(limits_on) {
    memo_.clear();
  }

  Node visit(const Node& n) {
    if (const uint32_t* k = memo_.find(n.get())) return results_[*k];
    Node out = n;
    std::vector<Node> src;  // the new sources, once one changed
    for (size_t k = 0; k < n->src.size(); ++k) {
      Node s = visit(n->src[k]);
      if (src.empty() && s != n->src[k]) src.assign(n->src.begin(), n->src.end());
      if (!src.empty()) src[k] = std::move(s);
    }
    if (!src.empty()) out = make_node(n->op, n->dtype, std::move(src), n->i, n->f, n->s);
    if (out->op == Op::REDUCE_AXIS)
      if (const std::optional<SplitLimits> lim = limits_on_(out->device()))
        if (Node s = split(out, out->src[0], *lim)) out = s;
    memo_.insert(n.get(), static_cast<uint32_t>(results_.size()));
    results_.push_back(out);  // (the keys need no keeping: each is a node of the graph, alive while it is walked)
    return out;
  }

 private:
  const std::function<std::optional<SplitLimits>(const std::string&)>& limits_on_;
  static thread_local NodeTable memo_;  // node -> index into results_
  std::vector<Node> results_;
};

thread_local NodeTable Splitter::memo_;

}  // namespace

std::vector<Node> split_large_reduces(const std::vector<Node>& roots,
                                      const std::function<std::optional<SplitLimits>(const std::string&)>& limits_on) {
  Splitter s(limits_on);
  std::vector<Node> out;
  out.reserve(roots.size());
  for (const Node& r : roots) out.push_back(s.visit(r));
  return out;
}

}  // namespace hcq::fw
