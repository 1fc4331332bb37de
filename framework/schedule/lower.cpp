#include "framework/schedule/lower.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_set>

#include "framework/ir/shape_of.hpp"
#include "framework/ir/symbolic.hpp"

namespace hcq::fw {

double reduce_identity(Op op, DType t) {
  const bool f = is_float(t);
  auto lowest = [&]() -> double {
    switch (t) {
      case DType::bool_: return 0;
      case DType::int8: return -128;
      case DType::uint8:
      case DType::uint32: return 0;
      case DType::int32: return std::numeric_limits<int32_t>::min();
      case DType::int64: return static_cast<double>(std::numeric_limits<int64_t>::min());
      default: return -INFINITY;
    }
  };
  auto highest = [&]() -> double {
    switch (t) {
      case DType::bool_: return 1;
      case DType::int8: return 127;
      case DType::uint8: return 255;
      case DType::uint32: return std::numeric_limits<uint32_t>::max();
      case DType::int32: return std::numeric_limits<int32_t>::max();
      case DType::int64: return static_cast<double>(std::numeric_limits<int64_t>::max());
      default: return INFINITY;
    }
  };
  switch (op) {
    case Op::ADD: return 0;
    case Op::MUL: return 1;
    case Op::MAX: return f ? -INFINITY : lowest();
    default: return f ? INFINITY : highest();
  }
}

namespace {

// Row-major strides of a shape.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
  return st;
}

// Whether x * 1, x / 1 and x + 0 simplify to x itself: x is a fixed point of the symbolic rules (marked) and takes
// more than one value (the rules fold an expression whose bounds hold one value to a constant first; otherwise the
// identities fire before anything else). The lowering then uses x without building and simplifying the expression.
bool passes_unchanged(const Node& x) { return x->simplified.load(std::memory_order_relaxed) && x->vmin != x->vmax; }

// sum over k of idx[k] * stride[k], simplified: the same node as adding the terms one by one to 0, built without the
// steps whose result is known (0 + t is t, t being simplified; x * 1 is x when passes_unchanged), which were a third
// of the make_node calls of a load's index (a load of every buffer a kernel reads).
Node flat_index(const std::vector<Node>& idx, const Shape& shape) {
  const std::vector<int64_t> st = strides_of(shape);
  Node flat;
  for (size_t k = 0; k < idx.size(); ++k) {
    if (shape[k] == 1) continue;
    Node term = st[k] == 1 && passes_unchanged(idx[k]) ? idx[k] : idx_mul(idx[k], st[k]);
    flat = flat ? idx_add(flat, term) : std::move(term);
  }
  return flat ? flat : index_const(0);
}

class Lowerer {
 public:
  Lowerer(const std::unordered_map<const NodeData*, uint32_t>& realized, const NodeData* root, const LocalAxes& local)
      : realized_(realized), root_(root), local_axes_(local) {}

  std::vector<uint32_t> slots;
  std::vector<uint32_t> vals;
  std::vector<const NodeData*> reads;
  int next_range = 0;

  // The fused reduces used at more than one index, with the axes on which the indices differ.
  std::vector<LoweredKernel::Disagreement> disagreements() const {
    std::vector<LoweredKernel::Disagreement> out;
    for (const auto& [n, uses] : reduce_uses_) {
      if (uses.size() < 2) continue;
      LoweredKernel::Disagreement d{n, std::vector<bool>(n->shape.size(), false), 1};
      for (size_t k = 0; k < n->shape.size(); ++k) {
        for (const std::vector<Node>& u : uses) d.disagreeing_axes[k] = d.disagreeing_axes[k] || u[k] != uses[0][k];
        if (d.disagreeing_axes[k]) d.local_elements *= n->shape[k];
      }
      out.push_back(std::move(d));
    }
    return out;
  }

  Node buffer(uint32_t slot, DType t, int64_t numel) {
    auto it = local_.find(slot);
    int64_t local;
    if (it == local_.end()) {
      local = static_cast<int64_t>(slots.size());
      local_[slot] = local;
      slots.push_back(slot);
    } else {
      local = it->second;
    }
    return make_node(Op::PARAM, t, {}, {local, numel});
  }

  // The kernel's value for the call's variable number `var` (a tensor-level VAR_PARAM), numbered in first use.
  Node variable(const Node& n) {
    const uint32_t var = static_cast<uint32_t>(n->i[0]);
    size_t k = 0;
    while (k < vals.size() && vals[k] != var) ++k;
    if (k == vals.size()) vals.push_back(var);
    return make_node(Op::VAR_PARAM, n->dtype, {n->src[0]}, {static_cast<int64_t>(k)});
  }

  Node load(uint32_t slot, const NodeData* n, const Node& index, const Node& gate) {
    Node buf = buffer(slot, n->dtype, fw::numel(n->shape));
    std::vector<Node> src{buf, index};
    if (gate) src.push_back(gate);
    return make_node(Op::LOAD, n->dtype, std::move(src));
  }

  // The value of tensor-level node n at index idx (one entry per dimension of n), where `gate` (bool, or null for
  // always) says whether the element is inside every enclosing pad.
  Node value(const Node& n, const std::vector<Node>& idx, const Node& gate) {
    Key key{n, idx, gate};
    if (auto it = memo_.find(key); it != memo_.end()) return it->second;
    Node out = compute(n, idx, gate);
    memo_.emplace(std::move(key), out);
    return out;
  }

 private:
  // The key owns its nodes: index nodes made during lowering may have no other owner, and a freed node's address
  // can be reused by a new one, which would then hit another index's entry.
  struct Key {
    Node n;
    std::vector<Node> idx;
    Node gate;
    bool operator<(const Key& o) const {
      if (n != o.n) return n.get() < o.n.get();
      if (gate != o.gate) return gate.get() < o.gate.get();
      return std::lexicographical_compare(idx.begin(), idx.end(), o.idx.begin(), o.idx.end(),
                                          [](const Node& a, const Node& b) { return a.get() < b.get(); });
    }
  };

  void note_read(const NodeData* n) {
    for (const NodeData* r : reads)
      if (r == n) return;
    reads.push_back(n);
  }

  Node compute(const Node& n, const std::vector<Node>& idx, const Node& gate) {
    if (n.get() != root_) {
      if (auto it = realized_.find(n.get()); it != realized_.end()) {
        note_read(n.get());
        return load(it->second, n.get(), flat_index(idx, n->shape), gate);
      }
    }
    // A zero-size tensor inside a kernel that is not empty (padded, or concatenated with others) is never read at
    // a valid index: its value is a placeholder (and its reshape would divide by a zero extent).
    if (n->op != Op::PARAM && numel(n->shape) == 0) return const_node(n->dtype, 0);
    switch (n->op) {
      case Op::PARAM: note_read(n.get()); return load(static_cast<uint32_t>(n->i[0]), n.get(), idx.at(0), gate);
      case Op::CONST: return const_node(n->dtype, n->const_value());
      case Op::INDEX: return idx.at(0);
      case Op::VAR_PARAM: return variable(n);
      case Op::CONTIGUOUS: return value(n->src[0], idx, gate);
      case Op::ASSIGN: return value(n->src[1], idx, gate);
      case Op::RESHAPE: {
        const Node flat = flat_index(idx, n->shape);
        const Shape& in = n->src[0]->shape;
        const std::vector<int64_t> st = strides_of(in);
        const int64_t total = fw::numel(in);
        std::vector<Node> src_idx(in.size());
        for (size_t k = 0; k < in.size(); ++k) {
          if (in[k] == 1) {
            src_idx[k] = index_const(0);
            continue;
          }
          Node v = st[k] == 1 && passes_unchanged(flat) ? flat : idx_div(flat, st[k]);
          if (st[k] * in[k] < total || k > 0) v = idx_mod(v, in[k]);
          src_idx[k] = v;
        }
        return value(n->src[0], src_idx, gate);
      }
      case Op::PERMUTE: {
        std::vector<Node> src_idx(idx.size());
        for (size_t k = 0; k < idx.size(); ++k) src_idx[static_cast<size_t>(n->i[k])] = idx[k];
        return value(n->src[0], src_idx, gate);
      }
      case Op::EXPAND: {
        const Shape& in = n->src[0]->shape;
        std::vector<Node> src_idx(idx.size());
        for (size_t k = 0; k < idx.size(); ++k) src_idx[k] = in[k] == 1 ? index_const(0) : idx[k];
        return value(n->src[0], src_idx, gate);
      }
      case Op::SHRINK: {
        std::vector<Node> src_idx(idx.size());
        for (size_t k = 0; k < idx.size(); ++k)
          src_idx[k] =
              n->i[2 * k] == 0 && passes_unchanged(idx[k]) ? idx[k] : idx_add(idx[k], index_const(n->i[2 * k]));
        return value(n->src[0], src_idx, gate);
      }
      case Op::FLIP: {
        const Shape& in = n->src[0]->shape;
        std::vector<Node> src_idx(idx.size());
        for (size_t k = 0; k < idx.size(); ++k)
          src_idx[k] = n->i[k] ? idx_add(index_const(in[k] - 1), idx_mul(idx[k], -1)) : idx[k];
        return value(n->src[0], src_idx, gate);
      }
      case Op::PAD: {
        const Shape& in = n->src[0]->shape;
        std::vector<Node> src_idx(idx.size());
        Node valid = const_node(DType::bool_, 1);
        for (size_t k = 0; k < idx.size(); ++k) {
          const int64_t before = n->i[2 * k];
          src_idx[k] = before == 0 && passes_unchanged(idx[k]) ? idx[k] : idx_add(idx[k], index_const(-before));
          valid = bool_and(valid, bool_and(idx_ge(idx[k], before), idx_lt(idx[k], before + in[k])));
        }
        valid = simplify(valid);
        if (valid->is_const(1)) return value(n->src[0], src_idx, gate);
        const Node inner_gate = gate ? bool_and(gate, valid) : valid;
        const Node inner = value(n->src[0], src_idx, inner_gate);
        return make_node(Op::WHERE, n->dtype, {valid, inner, const_node(n->dtype, n->f)});
      }
      case Op::NARROW: {
        // A symbolic dimension: elements at or past the variable's value are not there. They read 0 (as a pad's
        // outside does), and the loads behind them are gated off, so nothing past the value is read.
        const size_t axis = static_cast<size_t>(n->i[0]);
        const Node valid = present(idx[axis], n->src[1]);
        if (valid->is_const(1)) return value(n->src[0], idx, gate);
        const Node inner = value(n->src[0], idx, gate ? bool_and(gate, valid) : valid);
        return make_node(Op::WHERE, n->dtype, {valid, inner, const_node(n->dtype, 0)});
      }
      case Op::REDUCE_AXIS: {
        if (auto it = local_axes_.find(n.get()); it != local_axes_.end()) return local_array_load(n, it->second, idx);
        // Every key reaching here is new (value() memoizes): a second one for this reduce is a second index.
        reduce_uses_[n.get()].push_back(idx);
        return reduce(n, idx, gate);
      }
      default: break;
    }
    std::vector<Node> src;
    src.reserve(n->src.size());
    for (const Node& s : n->src) src.push_back(value(s, idx, gate));
    return make_node(n->op, n->dtype, std::move(src), n->i, n->f);
  }

  // The REDUCE of n at idx: its reduced axes get fresh reduce ranges.
  Node reduce(const Node& n, const std::vector<Node>& idx, const Node& gate) {
    const Shape& in = n->src[0]->shape;
    std::vector<Node> src_idx = idx;
    std::vector<Node> ranges;
    for (size_t k = 1; k < n->i.size(); ++k) {
      const size_t axis = static_cast<size_t>(n->i[k]);
      Node r = make_node(Op::RANGE, kIndex, {}, {next_range++, in[axis], 1});
      src_idx[axis] = r;
      ranges.push_back(r);
    }
    Node v = value(n->src[0], src_idx, gate);
    // Over a symbolic dimension, the places past the variable's value hold the reduce's identity.
    const std::vector<Node>& vars = n->src[0]->dim_vars;
    for (size_t k = 1; k < n->i.size() && !vars.empty(); ++k) {
      const size_t axis = static_cast<size_t>(n->i[k]);
      if (!vars[axis]) continue;
      const Node valid = present(src_idx[axis], vars[axis]);
      if (!valid->is_const(1))
        v = make_node(Op::WHERE, n->dtype,
                      {valid, v, const_node(n->dtype, reduce_identity(static_cast<Op>(n->i[0]), n->dtype))});
    }
    std::vector<Node> src{v};
    src.insert(src.end(), ranges.begin(), ranges.end());
    return make_node(Op::REDUCE, n->dtype, std::move(src), {n->i[0]});
  }

  // Whether index `at` is inside a symbolic dimension whose size is the variable `var` (a tensor-level VAR_PARAM).
  Node present(const Node& at, const Node& var) {
    return simplify(make_node(Op::CMPLT, DType::bool_, {at, make_node(Op::CAST, kIndex, {value(var, {}, nullptr)})}));
  }

  // A partially realized reduce: one local array per value of the agreeing axes' indices, holding the reduce at
  // every point of the disagreeing axes; this use reads its element. The array is computed without the use's pad
  // gate: it covers the reduce's own shape only, where every read is in bounds.
  Node local_array_load(const Node& n, const std::vector<bool>& local_axes, const std::vector<Node>& idx) {
    std::vector<Node> agreeing;
    for (size_t k = 0; k < idx.size(); ++k)
      if (!local_axes[k]) agreeing.push_back(idx[k]);
    Key key{n, agreeing, nullptr};
    Node array;
    if (auto it = arrays_.find(key); it != arrays_.end()) {
      array = it->second;
    } else {
      std::vector<Node> inner = idx, ranges;
      for (size_t k = 0; k < idx.size(); ++k)
        if (local_axes[k]) {
          inner[k] = make_node(Op::RANGE, kIndex, {}, {next_range++, n->shape[k], 2});
          ranges.push_back(inner[k]);
        }
      std::vector<Node> src{reduce(n, inner, nullptr)};
      src.insert(src.end(), ranges.begin(), ranges.end());
      array = make_node(Op::BUFFERIZE, n->dtype, std::move(src));
      arrays_.emplace(std::move(key), array);
    }
    // Row-major over the local axes, in the order of the array's ranges.
    Node at = index_const(0);
    int64_t stride = 1;
    for (size_t k = idx.size(); k-- > 0;)
      if (local_axes[k]) {
        at = idx_add(at, idx_mul(idx[k], stride));
        stride *= n->shape[k];
      }
    return make_node(Op::LOAD, n->dtype, {array, at});
  }

  const std::unordered_map<const NodeData*, uint32_t>& realized_;
  const NodeData* root_;
  const LocalAxes& local_axes_;
  std::unordered_map<const NodeData*, std::vector<std::vector<Node>>> reduce_uses_;
  std::unordered_map<uint32_t, int64_t> local_;
  std::map<Key, Node> memo_;
  std::map<Key, Node> arrays_;
};

}  // namespace

LoweredKernel lower_kernel(const Node& root, uint32_t out_slot,
                           const std::unordered_map<const NodeData*, uint32_t>& realized, const LocalAxes& local) {
  Lowerer lw(realized, root.get(), local);
  const Shape& shape = root->shape;
  Node out = lw.buffer(out_slot, root->dtype, fw::numel(shape));
  std::vector<Node> idx(shape.size());
  for (size_t k = 0; k < shape.size(); ++k)
    idx[k] = shape[k] == 1 ? index_const(0) : make_node(Op::RANGE, kIndex, {}, {lw.next_range++, shape[k], 0});
  // Output ranges are numbered first, in dimension order; reduce ranges follow.
  Node value = lw.value(root, idx, nullptr);
  Node store = make_node(Op::STORE, root->dtype, {out, flat_index(idx, shape), value});
  LoweredKernel k;
  k.ast = simplify(make_node(Op::KERNEL, root->dtype, {store}));
  k.slots = std::move(lw.slots);
  k.vals = std::move(lw.vals);
  k.reads = std::move(lw.reads);
  k.disagreeing = lw.disagreements();
  return k;
}

}  // namespace hcq::fw
