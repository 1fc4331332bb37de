// The intern table: one live NodeData per structure. Lookups hash (op, dtype, sources by address, arguments).
#include "framework/ir/node.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>
#include <unordered_map>

#include "framework/ir/node_table.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/ir/symbolic.hpp"
#include "framework/ir/symbolic_dims.hpp"
#include "hcq/buffer.hpp"

namespace hcq::fw {
namespace {

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

size_t structural_hash(Op op, DType dtype, const std::vector<Node>& src, const std::vector<int64_t>& i, double f,
                       const std::string& s) {
  size_t h = mix(static_cast<size_t>(op), static_cast<size_t>(dtype));
  for (const Node& n : src) h = mix(h, reinterpret_cast<size_t>(n.get()));
  for (int64_t v : i) h = mix(h, static_cast<size_t>(v));
  h = mix(h, std::bit_cast<uint64_t>(f));
  if (!s.empty()) h = mix(h, std::hash<std::string>{}(s));
  return h;
}

bool same_structure(const NodeData& n, Op op, DType dtype, const std::vector<Node>& src, const std::vector<int64_t>& i,
                    double f, const std::string& s) {
  if (n.op != op || n.dtype != dtype || n.src.size() != src.size() || n.i != i || n.s != s) return false;
  if (std::bit_cast<uint64_t>(n.f) != std::bit_cast<uint64_t>(f)) return false;
  for (size_t k = 0; k < src.size(); ++k)
    if (n.src[k].get() != src[k].get()) return false;
  return true;
}

// Buckets of weak references by structural hash. A node removes itself in its destructor; lookups skip entries
// whose node is mid-destruction (expired).
struct InternTable {
  std::mutex mu;
  std::unordered_multimap<size_t, std::weak_ptr<const NodeData>> nodes;
};

InternTable& table() {
  // Never destroyed: nodes held by static objects may die after any other static.
  static InternTable* t = new InternTable();
  return *t;
}

// The nodes a toposort has seen: a thread's NodeTable, reused (a toposort calls nothing that sorts again, so one
// table a thread suffices).
NodeTable& seen_set() {
  thread_local NodeTable set;
  set.clear();
  return set;
}

}  // namespace

Node NodeData::realized_locked() const {
  std::lock_guard lock(realized_mu_);
  return realized_;
}

void NodeData::set_realized(Node n) const {
  std::lock_guard lock(realized_mu_);
  realized_ = std::move(n);
  has_realized_.store(realized_ != nullptr, std::memory_order_release);
}

void NodeData::add_realized_from(const Node& lazy) const {
  std::lock_guard lock(realized_mu_);
  std::erase_if(realized_from_, [](const std::weak_ptr<const NodeData>& w) { return w.expired(); });
  realized_from_.push_back(lazy);
}

void NodeData::unlink_realized_from() const {
  std::vector<std::weak_ptr<const NodeData>> from;
  {
    std::lock_guard lock(realized_mu_);
    from.swap(realized_from_);
  }
  for (const std::weak_ptr<const NodeData>& w : from)
    if (Node lazy = w.lock()) lazy->set_realized(nullptr);
}

const std::string& NodeData::device() const {
  static const std::string none;
  const NodeData* n = this;
  // The last source carries the device (an ASSIGN's value, a WHERE's other operand); a NARROW's is its variable.
  while (n->s.empty() && !n->src.empty()) n = (n->op == Op::NARROW ? n->src.front() : n->src.back()).get();
  if (n->op == Op::COPY || n->op == Op::CONST || n->op == Op::BUFFER || n->op == Op::PARAM) return n->s;
  return n->s.empty() ? none : n->s;
}

bool NodeData::is_const(double v) const { return op == Op::CONST && const_value() == v; }

double NodeData::const_value() const { return is_float(dtype) ? f : static_cast<double>(i.empty() ? 0 : i[0]); }

NodeData::~NodeData() {
  if (op == Op::BUFFER) return;  // never in the table (make_node)
  InternTable& t = table();
  std::lock_guard lock(t.mu);
  auto [lo, hi] = t.nodes.equal_range(hash);
  for (auto it = lo; it != hi; ++it) {
    if (it->second.expired()) {  // ours is expired by now (its count reached 0); others may be too
      t.nodes.erase(it);
      return;
    }
  }
}

Node make_node(Op op, DType dtype, std::vector<Node> src, std::vector<int64_t> i, double f, std::string s,
               std::shared_ptr<Buffer> payload) {
  const size_t h = structural_hash(op, dtype, src, i, f, s);
  auto build = [&] {
    auto n = std::make_shared<NodeData>();
    n->op = op;
    n->dtype = dtype;
    n->src = std::move(src);
    n->i = std::move(i);
    n->f = f;
    n->s = std::move(s);
    n->hash = h;
    n->payload = std::move(payload);
    n->shape = shape_of(*n);
    n->dim_vars = dim_vars_of(*n);
    compute_bounds(*n);
    return n;
  };
  // A BUFFER's id is new whenever one is made (engine/realize.cpp: new_buffer_node, alias_buffer_node), so no live
  // node can equal it: it skips the table, whose lock and bookkeeping were most of the cost of a TinyJit replay's
  // fresh outputs on the simulated GPUs.
  if (op == Op::BUFFER) return build();
  InternTable& t = table();
  {
    std::lock_guard lock(t.mu);
    auto [lo, hi] = t.nodes.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      Node live = it->second.lock();
      if (live && same_structure(*live, op, dtype, src, i, f, s)) return live;
    }
  }
  std::shared_ptr<NodeData> n = build();
  std::lock_guard lock(t.mu);
  // Another thread may have made the same node meanwhile: the first one in the table wins.
  auto [lo, hi] = t.nodes.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    Node live = it->second.lock();
    if (live && same_structure(*live, n->op, n->dtype, n->src, n->i, n->f, n->s)) return live;
  }
  t.nodes.emplace(h, n);
  return n;
}

size_t live_node_count() {
  InternTable& t = table();
  std::lock_guard lock(t.mu);
  size_t live = 0;
  for (auto& [h, w] : t.nodes) live += !w.expired();
  return live;
}

Node const_node(DType t, double v, const std::string& device) {
  if (is_float(t)) return make_node(Op::CONST, t, {}, {}, v == 0 ? 0.0 : v, device);  // -0.0 folds into 0.0
  return make_node(Op::CONST, t, {}, {t == DType::bool_ ? int64_t(v != 0) : static_cast<int64_t>(v)}, 0, device);
}

Node index_const(int64_t v) {
  // The lowering and the symbolic rules ask for the same few constants (strides, extents, 0 and 1) thousands of
  // times per schedule; each make_node built an argument vector and took the intern table's lock to find the live
  // one. A thread keeps the small ones it made (alive, so they are the nodes make_node would return).
  constexpr int64_t kLow = -64, kHigh = 1024;
  if (v < kLow || v >= kHigh) return make_node(Op::CONST, kIndex, {}, {v});
  thread_local std::vector<Node> made(static_cast<size_t>(kHigh - kLow));
  Node& n = made[static_cast<size_t>(v - kLow)];
  if (!n) n = make_node(Op::CONST, kIndex, {}, {v});
  return n;
}

std::vector<const NodeData*> toposort(const std::vector<Node>& roots) {
  std::vector<const NodeData*> order;
  NodeTable& seen = seen_set();
  thread_local std::vector<std::pair<const NodeData*, size_t>> stack;  // empty between calls
  stack.clear();
  for (const Node& r : roots) {
    if (!r || !seen.insert(r.get())) continue;
    stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->src.size()) {
        const NodeData* c = n->src[next++].get();
        if (seen.insert(c)) stack.push_back({c, 0});
      } else {
        order.push_back(n);
        stack.pop_back();
      }
    }
  }
  return order;
}

std::vector<Node> toposort_nodes(const std::vector<Node>& roots) {
  std::vector<Node> order;
  NodeTable& seen = seen_set();
  std::vector<std::pair<Node, size_t>> stack;
  for (const Node& r : roots) {
    if (!r || !seen.insert(r.get())) continue;
    stack.push_back({r, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (next < n->src.size()) {
        const Node& c = n->src[next++];
        if (seen.insert(c.get())) stack.push_back({c, 0});
      } else {
        order.push_back(std::move(n));
        stack.pop_back();
      }
    }
  }
  return order;
}

std::string to_string(const Node& root) {
  std::vector<const NodeData*> order = toposort({root});
  std::unordered_map<const NodeData*, size_t> id;
  std::ostringstream os;
  for (const NodeData* n : order) {
    const size_t k = id.size();
    id[n] = k;
    os << "%" << k << " = " << op_name(n->op) << "." << dtype_name(n->dtype);
    if (!n->src.empty()) {
      os << " (";
      for (size_t j = 0; j < n->src.size(); ++j) os << (j ? ", %" : "%") << id[n->src[j].get()];
      os << ")";
    }
    if (n->op == Op::REDUCE_AXIS || n->op == Op::REDUCE) {
      os << " [" << op_name(static_cast<Op>(n->i[0]));
      for (size_t j = 1; j < n->i.size(); ++j) os << (j == 1 ? ", axes " : " ") << n->i[j];
      os << "]";
    } else if (n->op == Op::RANGE) {
      os << " [r" << n->i[0] << " 0.." << n->i[1] << (n->i[2] ? " reduce]" : "]");
    } else if (!n->i.empty()) {
      os << " [";
      for (size_t j = 0; j < n->i.size(); ++j) os << (j ? ", " : "") << n->i[j];
      os << "]";
    }
    if (n->op == Op::CONST && is_float(n->dtype)) os << " " << n->f;
    if (!n->s.empty()) os << " '" << n->s << "'";
    if (!n->shape.empty()) {
      os << " shape=(";
      for (size_t j = 0; j < n->shape.size(); ++j) os << (j ? "," : "") << n->shape[j];
      os << ")";
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace hcq::fw
