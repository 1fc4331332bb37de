#include "framework/schedule/kernel_cache.hpp"

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/engine/beam.hpp"
#include "framework/engine/compile.hpp"
#include "framework/ir/node_table.hpp"
#include "framework/ir/shape_of.hpp"
#include "hcq/knobs.hpp"

namespace hcq::fw {
namespace {

// Past this many entries a level is emptied (as the schedule cache is): a process that keeps making new kernels
// must not grow without bound.
constexpr size_t kMaxEntries = 4096;

// What the key says a visited node is, in the first word of its entry, so entries of different kinds never read
// alike. They follow lower.cpp's Lowerer::compute: a realized node other than the root is a load from its buffer,
// a zero-size node a placeholder constant, a PARAM a load from the call's buffer, a VAR_PARAM the kernel's value of
// a call's variable; every other node is lowered from its op, arguments, shape and sources.
enum class Kind : uint64_t { node = 1, load = 2, zero = 3, param = 4, var = 5 };

uint64_t head(Kind k, uint64_t op, DType t) {
  return static_cast<uint64_t>(k) | op << 8 | static_cast<uint64_t>(t) << 24;
}

// A KeyWalk's storage: a thread's, reused walk after walk (a walk runs for every kernel of every miss; growing fresh
// vectors was a fifth of its cost).
struct KeyScratch {
  NodeTable positions;  // node -> position
  std::vector<uint64_t> words;
  std::vector<const NodeData*> nodes;  // by position
  std::vector<uint32_t> slots;         // by number: the schedule slot
  std::vector<uint32_t> vars;          // by number: the call's variable
  std::vector<uint32_t> src;           // a stack of source positions, while their node is written
  std::vector<uint64_t> var_pos;       // likewise for the variables of symbolic dimensions
};

// The key of one kernel's lowering: the subgraph lower_kernel visits from `root`, in post-order, each node once
// (sources by position, so shared nodes stay shared). Buffers are numbered by first appearance, the root's output
// first (a load from the output's own buffer gets 0 too), and the call's variables likewise, so the same kernel
// over other buffers and variables writes the same key.
class KeyWalk {
 public:
  KeyWalk(const NodeData* root, uint32_t out_slot, const std::unordered_map<const NodeData*, uint32_t>& realized,
          const LocalAxes& local, KeyScratch& scratch)
      : words(scratch.words),
        nodes(scratch.nodes),
        slots(scratch.slots),
        vars(scratch.vars),
        root_(root),
        realized_(realized),
        local_(local),
        pos_(scratch.positions),
        src_(scratch.src),
        var_pos_(scratch.var_pos) {
    pos_.clear();
    words.clear();
    nodes.clear();
    slots.assign(1, out_slot);
    vars.clear();
    src_.clear();
    var_pos_.clear();
  }

  std::vector<uint64_t>& words;
  std::vector<const NodeData*>& nodes;
  std::vector<uint32_t>& slots;
  std::vector<uint32_t>& vars;

  uint32_t visit(const NodeData* n) {
    if (const uint32_t* p = pos_.find(n)) return *p;
    if (n != root_) {
      if (auto it = realized_.find(n); it != realized_.end()) {
        const uint64_t vars_at = dim_vars(n);
        words.push_back(head(Kind::load, 0, n->dtype));
        words.push_back(number_of(slots, it->second));
        put_shape(n->shape);
        put_dim_vars(n, vars_at);
        return done(n);
      }
    }
    if (n->op != Op::PARAM && numel(n->shape) == 0) {
      words.push_back(head(Kind::zero, 0, n->dtype));
      return done(n);
    }
    if (n->op == Op::PARAM) {
      words.push_back(head(Kind::param, 0, n->dtype));
      words.push_back(number_of(slots, static_cast<uint32_t>(n->i[0])));
      words.push_back(static_cast<uint64_t>(n->i[1]));
      put_shape(n->shape);
      return done(n);
    }
    if (n->op == Op::VAR_PARAM) {
      const uint32_t def = visit(n->src[0].get());
      words.push_back(head(Kind::var, 0, n->dtype));
      words.push_back(number_of(vars, static_cast<uint32_t>(n->i[0])));
      words.push_back(def);
      return done(n);
    }
    // Sources first (their positions are written below), then the variables of symbolic dimensions.
    src_.resize(src_.size() + n->src.size());
    const size_t at = src_.size() - n->src.size();
    for (size_t k = 0; k < n->src.size(); ++k) src_[at + k] = visit(n->src[k].get());
    const uint64_t vars_at = dim_vars(n);
    words.push_back(head(Kind::node, static_cast<uint64_t>(n->op), n->dtype));
    words.push_back(n->src.size());
    words.insert(words.end(), src_.begin() + static_cast<ptrdiff_t>(at), src_.end());
    src_.resize(at);
    words.push_back(n->i.size());
    for (int64_t v : n->i) words.push_back(static_cast<uint64_t>(v));
    words.push_back(std::bit_cast<uint64_t>(n->f));
    put_string(n->s);
    put_shape(n->shape);
    put_dim_vars(n, vars_at);
    if (n->op == Op::REDUCE_AXIS) {
      // A partially realized reduce (LocalAxes) is lowered into a local array over the marked axes.
      auto it = local_.find(n);
      words.push_back(it == local_.end() ? 0 : 1 + it->second.size());
      if (it != local_.end())
        for (bool b : it->second) words.push_back(b);
    }
    return done(n);
  }

 private:
  static uint64_t number_of(std::vector<uint32_t>& numbered, uint32_t v) {
    for (size_t k = 0; k < numbered.size(); ++k)
      if (numbered[k] == v) return k;
    numbered.push_back(v);
    return numbered.size() - 1;
  }

  // Visits the variables of n's symbolic dimensions (lowering reads them to mask the places past a variable's
  // value); their positions go to var_pos_, from the returned index.
  uint64_t dim_vars(const NodeData* n) {
    const size_t at = var_pos_.size();
    for (const Node& v : n->dim_vars) var_pos_.push_back(v ? uint64_t{visit(v.get())} : ~uint64_t{0});
    return at;
  }
  void put_dim_vars(const NodeData* n, uint64_t at) {
    words.push_back(n->dim_vars.size());
    words.insert(words.end(), var_pos_.begin() + static_cast<ptrdiff_t>(at), var_pos_.end());
    var_pos_.resize(at);
  }
  void put_shape(const Shape& s) {
    words.push_back(s.size());
    for (int64_t d : s) words.push_back(static_cast<uint64_t>(d));
  }
  void put_string(const std::string& s) {
    words.push_back(s.size());
    for (size_t k = 0; k < s.size(); k += 8) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + k, std::min<size_t>(8, s.size() - k));
      words.push_back(w);
    }
  }
  uint32_t done(const NodeData* n) {
    const auto p = static_cast<uint32_t>(nodes.size());
    nodes.push_back(n);
    pos_.insert(n, p);
    return p;
  }

  const NodeData* root_;
  const std::unordered_map<const NodeData*, uint32_t>& realized_;
  const LocalAxes& local_;
  NodeTable& pos_;
  std::vector<uint32_t>& src_;
  std::vector<uint64_t>& var_pos_;
};

uint64_t hash_words(const std::vector<uint64_t>& w) {
  uint64_t h = 0xcbf29ce484222325ull ^ w.size();
  for (uint64_t v : w) h = (h ^ v) * 0x100000001b3ull ^ (h >> 29);
  return h;
}

// A lowering in the key's terms: buffers and variables by number, reads by position.
struct Lowering {
  std::vector<uint64_t> words;
  uint64_t hash = 0;
  Node ast;
  std::vector<uint32_t> slots, vals, reads;
};

struct Code {
  Node ast;  // held: while the entry lives, no other node has this address
  std::string device;
  bool optimize;
  std::shared_ptr<const CompiledKernel> kernel;
};

std::mutex g_mu;
std::unordered_multimap<uint64_t, Lowering>& lowerings() {
  static auto* m = new std::unordered_multimap<uint64_t, Lowering>();
  return *m;
}
// Made after the registry opened the devices (as compile.cpp's cache), so its programs unload while they live.
std::unordered_multimap<const NodeData*, Code>& codes() {
  static std::unordered_multimap<const NodeData*, Code> m;
  return m;
}
std::atomic<uint64_t> g_lowered{0}, g_lowering_hits{0}, g_rendered{0}, g_code_hits{0};

// Position of each value in `numbered`, or false when one is missing (then the lowering is not cached).
bool numbers_of(const std::vector<uint32_t>& values, const std::vector<uint32_t>& numbered,
                std::vector<uint32_t>& out) {
  out.clear();
  for (uint32_t v : values) {
    size_t k = 0;
    while (k < numbered.size() && numbered[k] != v) ++k;
    if (k == numbered.size()) return false;
    out.push_back(static_cast<uint32_t>(k));
  }
  return true;
}

bool code_cache_applies() { return !render_hook_set() && knobs::beam() == 0; }

}  // namespace

LoweredKernel lower_kernel_cached(const Node& root, uint32_t out_slot,
                                  const std::unordered_map<const NodeData*, uint32_t>& realized,
                                  const LocalAxes& local) {
  thread_local KeyScratch scratch;
  KeyWalk walk(root.get(), out_slot, realized, local, scratch);
  walk.visit(root.get());
  const uint64_t hash = hash_words(walk.words);
  {
    std::lock_guard lock(g_mu);
    auto [lo, hi] = lowerings().equal_range(hash);
    for (auto it = lo; it != hi; ++it) {
      const Lowering& e = it->second;
      if (e.words != walk.words) continue;
      LoweredKernel k;
      k.ast = e.ast;
      k.slots.reserve(e.slots.size());
      for (uint32_t s : e.slots) k.slots.push_back(walk.slots[s]);
      for (uint32_t v : e.vals) k.vals.push_back(walk.vars[v]);
      for (uint32_t r : e.reads) k.reads.push_back(walk.nodes[r]);
      g_lowering_hits.fetch_add(1, std::memory_order_relaxed);
      return k;
    }
  }
  LoweredKernel k = lower_kernel(root, out_slot, realized, local);
  g_lowered.fetch_add(1, std::memory_order_relaxed);
  if (!k.disagreeing.empty()) return k;
  Lowering e;
  e.hash = hash;
  e.ast = k.ast;
  if (!numbers_of(k.slots, walk.slots, e.slots) || !numbers_of(k.vals, walk.vars, e.vals)) return k;
  for (const NodeData* r : k.reads) {
    const uint32_t* p = scratch.positions.find(r);
    if (!p) return k;
    e.reads.push_back(*p);
  }
  e.words = walk.words;
  std::lock_guard lock(g_mu);
  if (lowerings().size() >= kMaxEntries) lowerings().clear();
  lowerings().emplace(hash, std::move(e));
  return k;
}

std::vector<std::shared_ptr<const CompiledKernel>> build_kernels(const std::vector<KernelWant>& wants) {
  std::vector<std::shared_ptr<const CompiledKernel>> out(wants.size());
  const bool cached = code_cache_applies();
  if (cached) {
    std::lock_guard lock(g_mu);
    for (size_t j = 0; j < wants.size(); ++j) {
      auto [lo, hi] = codes().equal_range(wants[j].ast.get());
      for (auto it = lo; it != hi && !out[j]; ++it)
        if (it->second.device == wants[j].device && it->second.optimize == wants[j].facts.optimize)
          out[j] = it->second.kernel;
    }
  }
  // The rest: each distinct (AST, device, optimize) rendered once.
  std::vector<KernelRequest> requests;
  std::vector<size_t> first;  // per request: the want it renders
  std::vector<size_t> request_of(wants.size(), SIZE_MAX);
  for (size_t j = 0; j < wants.size(); ++j) {
    if (out[j]) {
      g_code_hits.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    for (size_t r = 0; r < first.size() && request_of[j] == SIZE_MAX; ++r) {
      const KernelWant& w = wants[first[r]];
      if (w.ast == wants[j].ast && w.device == wants[j].device && w.facts.optimize == wants[j].facts.optimize)
        request_of[j] = r;
    }
    if (request_of[j] != SIZE_MAX) continue;
    request_of[j] = requests.size();
    first.push_back(j);
    requests.push_back(KernelRequest{wants[j].device, render_searched(wants[j].ast, wants[j].facts, wants[j].device)});
    g_rendered.fetch_add(1, std::memory_order_relaxed);
  }
  if (requests.empty()) return out;
  const std::vector<std::shared_ptr<const CompiledKernel>> compiled = compile_kernels(requests);
  for (size_t j = 0; j < wants.size(); ++j)
    if (!out[j]) out[j] = compiled[request_of[j]];
  if (!cached) return out;
  std::lock_guard lock(g_mu);
  if (codes().size() + first.size() > kMaxEntries) codes().clear();
  for (size_t r = 0; r < first.size(); ++r) {
    const KernelWant& w = wants[first[r]];
    bool known = false;  // kept meanwhile by another thread's schedule
    auto [lo, hi] = codes().equal_range(w.ast.get());
    for (auto it = lo; it != hi && !known; ++it)
      known = it->second.device == w.device && it->second.optimize == w.facts.optimize;
    if (!known) codes().emplace(w.ast.get(), Code{w.ast, w.device, w.facts.optimize, compiled[r]});
  }
  return out;
}

KernelCacheStats kernel_cache_stats() {
  return KernelCacheStats{g_lowered.load(), g_lowering_hits.load(), g_rendered.load(), g_code_hits.load()};
}

void clear_kernel_cache() {
  std::lock_guard lock(g_mu);
  lowerings().clear();
  codes().clear();
}

}  // namespace hcq::fw
