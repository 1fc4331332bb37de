#include "framework/schedule/order.hpp"

#include <queue>
#include <unordered_map>
#include <utility>

#include "hcq/error.hpp"

namespace hcq::fw {

std::vector<size_t> order_steps(const std::vector<StepAccess>& steps,
                                const std::function<std::string(size_t)>& describe) {
  const size_t n = steps.size();
  std::unordered_map<const NodeData*, size_t> writer;
  std::unordered_map<uint32_t, std::vector<size_t>> assigns_to;
  for (size_t k = 0; k < n; ++k) {
    writer[steps[k].writes] = k;
    if (steps[k].writes->op == Op::ASSIGN) assigns_to[steps[k].write_slot].push_back(k);
  }
  std::vector<std::vector<size_t>> after(n);
  std::vector<int> indegree(n, 0);
  auto edge = [&](size_t from, size_t to) {
    if (from == to) return;
    after[from].push_back(to);
    ++indegree[to];
  };
  for (size_t k = 0; k < n; ++k) {
    const NodeData* w = steps[k].writes;
    if (w->op == Op::ASSIGN && w->src[0]->op == Op::ASSIGN)
      if (auto it = writer.find(w->src[0].get()); it != writer.end()) edge(it->second, k);
    for (const NodeData* r : steps[k].reads) {
      if (auto it = writer.find(r); it != writer.end()) edge(it->second, k);
      if (r->op == Op::PARAM)
        if (auto it = assigns_to.find(static_cast<uint32_t>(r->i[0])); it != assigns_to.end())
          for (size_t a : it->second) edge(k, a);
    }
  }
  // A step that reads what a copy wrote waits for another device's engine: (reads a copy?, index), so it goes after
  // the other ready steps.
  std::vector<bool> reads_copy(n, false);
  for (size_t k = 0; k < n; ++k)
    for (const NodeData* r : steps[k].reads)
      if (auto it = writer.find(r); it != writer.end() && steps[it->second].copy) reads_copy[k] = true;
  using Key = std::pair<bool, size_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> ready;
  auto make_ready = [&](size_t k) { ready.push({reads_copy[k], k}); };
  for (size_t k = 0; k < n; ++k)
    if (indegree[k] == 0) make_ready(k);
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t k = ready.top().second;
    ready.pop();
    order.push_back(k);
    for (size_t m : after[k])
      if (--indegree[m] == 0) make_ready(m);
  }
  if (order.size() != n) {
    std::string names;
    for (size_t k = 0; k < n; ++k)
      if (indegree[k] > 0) names += cat(names.empty() ? "" : ", ", describe(k));
    throw InvalidArgument(cat("schedule: a cycle: ", names,
                              " each read a buffer another of them overwrites; realize them one at a time"));
  }
  return order;
}

}  // namespace hcq::fw
