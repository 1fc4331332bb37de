// The callify walk and its key. Each node of the parameterised graph is written once, after its sources, as
//   header   op (8 bits) | dtype (8) | sources (16) | integer arguments (16) | string bytes (15) | float flag (1)
//            (a count that does not fit: all three fields at their maximum and one more word: sources | arguments
//            << 32, then one: string bytes)
//   sources  positions of earlier nodes in the key, two 32-bit positions a word
//   i        one word each
//   f        its bits, only when they are not 0 (the flag)
//   s        its bytes, eight a word, the last word padded with zeros
// so the key can be read back node by node (parameterised_graph), and equal keys are equal graphs. The walk's memo
// (original node -> position) is a thread's open-addressing table, emptied in O(1) by a generation count: a hit
// pays per node one lookup, one insert and a few words, not a node built through the intern table.
#include "framework/engine/callify.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <string>

#include "framework/ir/node_table.hpp"
#include "hcq/error.hpp"

namespace hcq::fw {
namespace {

constexpr uint64_t kMaxSources = 0xFFFF, kMaxArgs = 0xFFFF, kMaxString = 0x7FFF;

// Four independent lanes of multiply-rotate over the words, folded with their count: a bucket index for the
// schedule cache, not a proof of equality (the cache compares the words).
uint64_t hash_words(const std::vector<uint64_t>& w) {
  constexpr uint64_t k1 = 0x9e3779b97f4a7c15ull, k2 = 0xc2b2ae3d27d4eb4full;
  uint64_t h[4] = {k1, k2, k1 ^ k2, k1 + k2};
  const size_t n = w.size();
  size_t p = 0;
  for (; p + 4 <= n; p += 4)
    for (size_t j = 0; j < 4; ++j) h[j] = std::rotl((h[j] ^ w[p + j]) * k1, 29) * k2;
  for (; p < n; ++p) h[0] = std::rotl((h[0] ^ w[p]) * k1, 29) * k2;
  uint64_t r = n * k2;
  for (uint64_t v : h) r = std::rotl(r ^ v, 23) * k1;
  return r ^ (r >> 32);
}

// A memo answers find(node): the node's position in the key, or kNotSeen; owns(node, position) records a node
// written at a position. Nodes that stand for another one's position (a realized node, DETACH, CUSTOM_GRAD) are not
// recorded: each visit passes through them to their target, one load.
constexpr uint32_t kNotSeen = ~0u;

// The walk's memo when it runs alone (no other callify in progress): each node holds the position it was given
// (NodeData::walk_position), and the walk's list of which node owns each position tells a current value from a
// stale one, so the answer is exact whatever the node holds.
class MarkMemo {
 public:
  explicit MarkMemo(std::vector<const NodeData*>& owner) : owner_(owner) {}
  uint32_t find(const NodeData* n) const {
    const uint32_t at = n->walk_position.load(std::memory_order_relaxed);
    return at < owner_.size() && owner_[at] == n ? at : kNotSeen;
  }
  // Every position is announced in order, with its node or null (a node of the key no graph node stands for).
  void owns(const NodeData* n, uint32_t at) {
    owner_.push_back(n);
    if (n != nullptr) n->walk_position.store(at, std::memory_order_relaxed);
  }

 private:
  std::vector<const NodeData*>& owner_;
};

// The memo when another callify runs at the same time: their marks on shared nodes (constants) would overwrite
// each other, so this walk keeps its own table and writes no mark.
class TableMemo {
 public:
  explicit TableMemo(NodeTable& table) : table_(table) {}
  uint32_t find(const NodeData* n) const {
    const uint32_t* at = table_.find(n);
    return at ? *at : kNotSeen;
  }
  void owns(const NodeData* n, uint32_t at) {
    if (n != nullptr) table_.insert(n, at);
  }

 private:
  NodeTable& table_;
};

// Callifies in progress in the process; a walk that starts when none is uses the marks (MarkMemo), and every walk
// that starts while it runs uses a table, so two walks never write marks at the same time. The count's
// acquire-release orders one mark-writing walk's writes before the next one's reads.
std::atomic<uint32_t> g_walks_running{0};
struct WalkRunning {
  bool alone = g_walks_running.fetch_add(1, std::memory_order_acq_rel) == 0;
  ~WalkRunning() { g_walks_running.fetch_sub(1, std::memory_order_acq_rel); }
};

template <class Memo>
class Walk {
 public:
  Walk(Callified& out, Memo& memo, std::vector<uint32_t>& stack)
      : out_(out), words_(out.key.words), memo_(memo), stack_(stack) {}

  void run(const std::vector<Node>& roots) {
    const size_t base = stack_.size();
    for (const Node& r : roots) stack_.push_back(visit(r));
    emit(nullptr, Op::SINK, DType::bool_, base, nullptr, 0, 0, nullptr, 0);
    stack_.resize(base);
    words_.resize(used_);
  }

 private:
  // The position of n's node in the key, writing it (and what it needs) on first sight.
  uint32_t visit(const Node& n) {
    const uint32_t at = memo_.find(n.get());
    return at != kNotSeen ? at : visit_new(n);
  }

  // n, not seen yet. The recursion is entered only for such nodes: a source seen before costs its memo lookup.
  uint32_t visit_new(const Node& n) {
    if (n->op == Op::BUFFER || n->op == Op::BIND || n->op == Op::DETACH || n->op == Op::CUSTOM_GRAD ||
        n->realized() != nullptr) [[unlikely]]
      return visit_special(n);
    const size_t base = stack_.size();
    const Node* const src = n->src.data();
    const size_t n_src = n->src.size();
    // The sources' nodes are read after the first one's subgraph: ask for them now (a graph built before other
    // work is out of the caches, and the walk is a chain of dependent loads).
    for (size_t k = 0; k < n_src; ++k) __builtin_prefetch(src[k].get());
    // The arguments are written after the sources' subgraphs: in the cache by then.
    if (!n->i.empty()) __builtin_prefetch(n->i.data());
    for (size_t k = 0; k < n_src; ++k) {
      // The next source's node was asked for above; its sources' array can come while this one's subgraph is walked.
      if (k + 1 < n_src) __builtin_prefetch(src[k + 1]->src.data());
      uint32_t at = memo_.find(src[k].get());
      if (at == kNotSeen) at = visit_new(src[k]);
      stack_.push_back(at);
    }
    const uint32_t out = emit(n.get(), n->op, n->dtype, base, n->i.data(), n->i.size(), n->f, n->s.data(), n->s.size());
    stack_.resize(base);
    return out;
  }

  // A buffer (a parameter), a bound variable, or a node that stands for another: a realized one, DETACH and
  // CUSTOM_GRAD (autograd's, their first source). Out of the hot path: a graph has few of them.
  [[gnu::noinline]] uint32_t visit_special(const Node& n) {
    if (Node r = n->realized()) return visit(r);
    if (n->op == Op::DETACH || n->op == Op::CUSTOM_GRAD) return visit(n->src[0]);
    if (n->op == Op::BIND) return variable(n);
    const int64_t args[2] = {static_cast<int64_t>(out_.buffers.size()), n->i[1]};
    const uint32_t out = emit(n.get(), Op::PARAM, n->dtype, stack_.size(), args, 2, 0, n->s.data(), n->s.size());
    out_.buffers.push_back(n);
    return out;
  }

  // A bound variable: VAR_PARAM(its DEFINE_VAR) numbered by first use, its value kept beside the buffers.
  uint32_t variable(const Node& bind) {
    const Node& var = bind->src[0];
    size_t k = 0;
    while (k < out_.bound.size() && out_.bound[k]->src[0] != var) ++k;
    if (k == out_.bound.size()) {
      out_.bound.push_back(bind);
      out_.values.push_back(static_cast<uint32_t>(static_cast<int32_t>(bind->i[0])));
    } else if (out_.bound[k]->i[0] != bind->i[0]) {
      throw InvalidArgument(hcq::cat("realize: Variable ", var->s, " is bound to ", out_.bound[k]->i[0], " and to ",
                                     bind->i[0],
                                     " in one graph: its kernels read one value. Realize the two parts "
                                     "separately, or use two variables"));
    }
    if (!var->src.empty())
      throw InvalidArgument(hcq::cat("realize: the variable of a BIND is a ", op_name(var->op),
                                     " with sources; only a DEFINE_VAR (none) is bound"));
    // The schedule knows a variable by name and bounds only: an anonymous one (a random tensor's key: no name, an
    // id of its own) leaves its id out, so that every draw has the same schedule.
    const size_t base = stack_.size();
    if (var->s.empty()) {
      stack_.push_back(emit(nullptr, Op::DEFINE_VAR, var->dtype, base, var->i.data(),
                            std::min<size_t>(var->i.size(), 2), 0, nullptr, 0));
    } else {
      stack_.push_back(
          emit(nullptr, var->op, var->dtype, base, var->i.data(), var->i.size(), var->f, var->s.data(), var->s.size()));
    }
    const int64_t arg = static_cast<int64_t>(k);
    const uint32_t out =
        emit(bind.get(), Op::VAR_PARAM, DType::int32, base, &arg, 1, 0, bind->s.data(), bind->s.size());
    stack_.resize(base);
    return out;
  }

  // Writes one node whose sources are stack_[src_base...] and returns its position; `owner` is the graph's node it
  // stands for (null: none). The key's words are written through a pointer into storage grown ahead (and cut to
  // size at the end), not a resize per node.
  [[gnu::always_inline]] uint32_t emit(const NodeData* owner, Op op, DType dtype, size_t src_base, const int64_t* args,
                                       size_t n_args, double f, const char* s, size_t n_s) {
    const size_t n_src = stack_.size() - src_base;
    const uint64_t fbits = std::bit_cast<uint64_t>(f);
    const bool wide = n_src >= kMaxSources || n_args >= kMaxArgs || n_s >= kMaxString;
    const size_t n_words = 1 + (wide ? 2 : 0) + (n_src + 1) / 2 + n_args + (fbits != 0) + (n_s + 7) / 8;
    if (used_ + n_words > words_.size()) [[unlikely]]
      words_.resize(std::max<size_t>(1024, 2 * (used_ + n_words)));
    uint64_t* w = words_.data() + used_;
    used_ += n_words;
    uint64_t header = static_cast<uint64_t>(op) | static_cast<uint64_t>(dtype) << 8 | (fbits != 0 ? 1ull << 63 : 0);
    if (wide) header |= kMaxSources << 16 | kMaxArgs << 32 | kMaxString << 48;
    else header |= n_src << 16 | n_args << 32 | static_cast<uint64_t>(n_s) << 48;
    *w++ = header;
    if (wide) {
      *w++ = n_src | static_cast<uint64_t>(n_args) << 32;
      *w++ = n_s;
    }
    const uint32_t* src = stack_.data() + src_base;
    for (size_t k = 0; k < n_src; k += 2) *w++ = src[k] | (k + 1 < n_src ? static_cast<uint64_t>(src[k + 1]) << 32 : 0);
    for (size_t k = 0; k < n_args; ++k) *w++ = static_cast<uint64_t>(args[k]);
    if (fbits != 0) *w++ = fbits;
    if (n_s != 0) {
      w[(n_s - 1) / 8] = 0;  // the padding of the last word
      std::memcpy(w, s, n_s);
    }
    memo_.owns(owner, nodes_);
    return nodes_++;
  }

  Callified& out_;
  std::vector<uint64_t>& words_;
  Memo& memo_;
  std::vector<uint32_t>& stack_;
  size_t used_ = 0;  // words written
  uint32_t nodes_ = 0;
};

// The storage of this thread's last key (Callified's destructor), reused by the next.
thread_local std::vector<uint64_t> t_spare_words;

}  // namespace

Callified callify(const std::vector<Node>& roots) {
  thread_local NodeTable table;
  thread_local std::vector<const NodeData*> owner;
  thread_local std::vector<uint32_t> stack;
  stack.clear();
  Callified out;
  out.key.words.swap(t_spare_words);  // its size is the last key's: the walk overwrites it
  const WalkRunning running;
  if (running.alone) {
    owner.clear();
    MarkMemo memo(owner);
    Walk(out, memo, stack).run(roots);
  } else {
    table.clear();
    TableMemo memo(table);
    Walk(out, memo, stack).run(roots);
  }
  out.key.hash = hash_words(out.key.words);
  return out;
}

Callified::~Callified() {
  if (key.words.capacity() > t_spare_words.capacity()) t_spare_words.swap(key.words);
}

Node parameterised_graph(const CallKey& key) {
  const std::vector<uint64_t>& w = key.words;
  std::vector<Node> built;
  size_t p = 0;
  auto next = [&]() -> uint64_t {
    if (p >= w.size()) throw Error("parameterised_graph: the key ends inside a node");
    return w[p++];
  };
  while (p < w.size()) {
    const uint64_t header = next();
    const Op op = static_cast<Op>(header & 0xFF);
    const DType dtype = static_cast<DType>((header >> 8) & 0xFF);
    uint64_t n_src = (header >> 16) & kMaxSources, n_args = (header >> 32) & kMaxArgs,
             n_s = (header >> 48) & kMaxString;
    if (n_src == kMaxSources && n_args == kMaxArgs && n_s == kMaxString) {
      const uint64_t counts = next();
      n_src = counts & 0xFFFFFFFFu;
      n_args = counts >> 32;
      n_s = next();
    }
    std::vector<Node> src(n_src);
    for (size_t k = 0; k < n_src; k += 2) {
      const uint64_t pair = next();
      for (size_t j = 0; j < 2 && k + j < n_src; ++j) {
        const uint64_t at = (pair >> (32 * j)) & 0xFFFFFFFFu;
        if (at >= built.size()) throw Error("parameterised_graph: a node's source comes after it in the key");
        src[k + j] = built[at];
      }
    }
    std::vector<int64_t> args(n_args);
    for (int64_t& a : args) a = static_cast<int64_t>(next());
    const double f = (header >> 63) ? std::bit_cast<double>(next()) : 0.0;
    std::string s(n_s, '\0');
    for (size_t k = 0; k < n_s; k += 8) {
      const uint64_t bytes = next();
      std::memcpy(s.data() + k, &bytes, std::min<size_t>(8, n_s - k));
    }
    built.push_back(make_node(op, dtype, std::move(src), std::move(args), f, std::move(s)));
  }
  if (built.empty() || built.back()->op != Op::SINK) throw Error("parameterised_graph: the key does not end in a SINK");
  return built.back();
}

}  // namespace hcq::fw
