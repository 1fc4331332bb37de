// Symbolic simplification of kernel-level integer arithmetic. Three parts:
// - bounds: an interval per integer/bool node, computed once when the node is made (make_node calls compute_bounds);
// - folding and identities for every integer dtype, with the dtype's wrap-around;
// - for index arithmetic (kIndex): sums in one canonical form, and div/mod by positive constants using the bounds.
// A rule fires only when the result is equal for every value the sources can take; the property test in
// tests/framework/symbolic_test.cpp checks that against an interpreter.
#include "framework/ir/symbolic.hpp"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>

#include "hcq/error.hpp"

namespace hcq::fw {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

struct Interval {
  int64_t lo, hi;
};

// Every value a dtype holds, as int64 (uint32 fits).
Interval dtype_range(DType t) {
  switch (t) {
    case DType::bool_: return {0, 1};
    case DType::int8: return {std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
    case DType::uint8: return {0, std::numeric_limits<uint8_t>::max()};
    case DType::int32: return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case DType::uint32: return {0, std::numeric_limits<uint32_t>::max()};
    default: return {kMin, kMax};
  }
}

int64_t bit_width(DType t) { return t == DType::bool_ ? 1 : static_cast<int64_t>(dtype_size(t)) * 8; }

// A value brought into a dtype the way C stores it: modulo 2^bits for integers, nonzero -> 1 for bool. Integer
// constants are kept in this form, so uint32 values are never negative here.
int64_t wrap(DType t, int64_t v) {
  switch (t) {
    case DType::bool_: return v != 0;
    case DType::int8: return static_cast<int8_t>(v);
    case DType::uint8: return static_cast<uint8_t>(v);
    case DType::int32: return static_cast<int32_t>(v);
    case DType::uint32: return static_cast<uint32_t>(v);
    default: return v;
  }
}

bool is_integral(DType t) { return !is_float(t); }  // integers and bool

// The value of an integer or bool CONST, wrapped into its dtype.
int64_t int_value(const NodeData& n) { return wrap(n.dtype, n.i.empty() ? 0 : n.i[0]); }

// A kernel-level integer constant (tensor-level constants carry a device in s and are left to the tensor layer).
bool is_int_const(const Node& n) { return n->op == Op::CONST && is_integral(n->dtype) && n->s.empty(); }

Node int_const(DType t, int64_t v) { return make_node(Op::CONST, t, {}, {wrap(t, v)}); }

// ---------------------------------------------------------------------------------------------------------------
// Bounds. Interval arithmetic in int64 that gives up (nullopt) on any overflow: a result that might have wrapped
// can be anything the dtype holds, so compute_bounds then uses the dtype's whole range.

std::optional<Interval> add(Interval a, Interval b) {
  Interval r;
  if (__builtin_add_overflow(a.lo, b.lo, &r.lo) || __builtin_add_overflow(a.hi, b.hi, &r.hi)) return std::nullopt;
  return r;
}

std::optional<Interval> sub(Interval a, Interval b) {
  Interval r;
  if (__builtin_sub_overflow(a.lo, b.hi, &r.lo) || __builtin_sub_overflow(a.hi, b.lo, &r.hi)) return std::nullopt;
  return r;
}

std::optional<Interval> mul(Interval a, Interval b) {
  int64_t p[4];
  if (__builtin_mul_overflow(a.lo, b.lo, &p[0]) || __builtin_mul_overflow(a.lo, b.hi, &p[1]) ||
      __builtin_mul_overflow(a.hi, b.lo, &p[2]) || __builtin_mul_overflow(a.hi, b.hi, &p[3]))
    return std::nullopt;
  return Interval{*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
}

// Truncating division is monotonic in the numerator for a fixed divisor, and in the divisor (of one sign) for a fixed
// numerator, so the extremes are at the corners; a divisor range that holds 0 gives up.
std::optional<Interval> idiv(Interval a, Interval b) {
  if (b.lo <= 0 && b.hi >= 0) return std::nullopt;
  if (a.lo == kMin && (b.lo == -1 || b.hi == -1)) return std::nullopt;
  const int64_t q[4] = {a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi};
  return Interval{*std::min_element(q, q + 4), *std::max_element(q, q + 4)};
}

// C's remainder has the numerator's sign and a magnitude below the divisor's.
std::optional<Interval> mod(Interval a, Interval b) {
  if (b.lo <= 0 && b.hi >= 0) return std::nullopt;
  if (b.lo == kMin) return std::nullopt;
  const int64_t m = std::max(std::abs(b.lo), std::abs(b.hi)) - 1;  // the largest magnitude of a remainder
  if (a.lo >= 0 && b.lo == b.hi && a.lo / b.lo == a.hi / b.lo) return Interval{a.lo % b.lo, a.hi % b.lo};
  return Interval{std::max(std::min<int64_t>(a.lo, 0), -m), std::min(std::max<int64_t>(a.hi, 0), m)};
}

// All ones below the highest set bit of v (v >= 0): the largest value OR/XOR of operands up to v can make.
int64_t fill_bits(int64_t v) {
  return v == 0 ? 0 : static_cast<int64_t>(~uint64_t{0} >> std::countl_zero(uint64_t(v)));
}

std::optional<Interval> bitwise(Op op, DType t, Interval a, Interval b) {
  if (a.lo == a.hi && b.lo == b.hi) {
    const int64_t v = op == Op::AND ? (a.lo & b.lo) : op == Op::OR ? (a.lo | b.lo) : (a.lo ^ b.lo);
    return Interval{v, v};
  }
  if (t == DType::bool_) {
    if (op == Op::AND && (a.hi == 0 || b.hi == 0)) return Interval{0, 0};
    if (op == Op::OR && (a.lo == 1 || b.lo == 1)) return Interval{1, 1};
    return Interval{0, 1};
  }
  if (a.lo < 0 || b.lo < 0) return std::nullopt;
  if (op == Op::AND) return Interval{0, std::min(a.hi, b.hi)};
  const int64_t top = fill_bits(std::max(a.hi, b.hi));
  return Interval{op == Op::OR ? std::max(a.lo, b.lo) : 0, top};
}

std::optional<Interval> shift(Op op, Interval a, Interval b) {
  if (a.lo < 0 || b.lo < 0 || b.hi > 62) return std::nullopt;
  if (op == Op::SHR) return Interval{a.lo >> b.hi, a.hi >> b.lo};
  if (a.hi > (kMax >> b.hi)) return std::nullopt;
  return Interval{a.lo << b.lo, a.hi << b.hi};
}

std::optional<Interval> compare(Op op, Interval a, Interval b) {
  switch (op) {
    case Op::CMPLT:
      if (a.hi < b.lo) return Interval{1, 1};
      if (a.lo >= b.hi) return Interval{0, 0};
      return Interval{0, 1};
    case Op::CMPEQ:
    case Op::CMPNE: {
      const bool eq = op == Op::CMPEQ;
      if (a.lo == a.hi && b.lo == b.hi && a.lo == b.lo) return Interval{eq, eq};
      if (a.hi < b.lo || b.hi < a.lo) return Interval{!eq, !eq};
      return Interval{0, 1};
    }
    default: return std::nullopt;
  }
}

std::optional<Interval> cast(DType to, const NodeData& from) {
  if (is_float(from.dtype)) return std::nullopt;
  if (to == DType::bool_) {
    if (from.vmin > 0 || from.vmax < 0) return Interval{1, 1};
    if (from.vmin == 0 && from.vmax == 0) return Interval{0, 0};
    return Interval{0, 1};
  }
  return Interval{from.vmin, from.vmax};  // out of the target's range: compute_bounds widens it to that range
}

std::optional<Interval> interval_of(const NodeData& n) {
  if (n.op == Op::CONST) return Interval{int_value(n), int_value(n)};
  if (n.op == Op::RANGE) return Interval{0, std::max<int64_t>(n.i.at(1) - 1, 0)};
  // A variable's value is any in its bounds: nothing folds on it but what holds for all of them.
  if (n.op == Op::VAR_PARAM) return Interval{n.src.at(0)->i.at(0), n.src.at(0)->i.at(1)};
  if (n.op == Op::CAST) return cast(n.dtype, *n.src.at(0));
  if (!is_elementwise(n.op)) return std::nullopt;
  for (const Node& s : n.src)
    if (is_float(s->dtype)) return std::nullopt;  // a float has no bounds (vmin = vmax = 0 means nothing)
  auto at = [&](size_t k) { return Interval{n.src[k]->vmin, n.src[k]->vmax}; };
  switch (n.op) {
    case Op::NEG: return sub(Interval{0, 0}, at(0));
    case Op::ADD: return add(at(0), at(1));
    case Op::SUB: return sub(at(0), at(1));
    case Op::MUL: return mul(at(0), at(1));
    case Op::IDIV: return idiv(at(0), at(1));
    case Op::MOD: return mod(at(0), at(1));
    case Op::MAX: return Interval{std::max(at(0).lo, at(1).lo), std::max(at(0).hi, at(1).hi)};
    case Op::MIN: return Interval{std::min(at(0).lo, at(1).lo), std::min(at(0).hi, at(1).hi)};
    case Op::CMPLT:
    case Op::CMPEQ:
    case Op::CMPNE: return compare(n.op, at(0), at(1));
    case Op::AND:
    case Op::OR:
    case Op::XOR: return bitwise(n.op, n.dtype, at(0), at(1));
    case Op::SHL:
    case Op::SHR: return shift(n.op, at(0), at(1));
    case Op::WHERE: {
      const Interval c = at(0);
      if (c.lo == c.hi) return at(c.lo != 0 ? 1 : 2);
      return Interval{std::min(at(1).lo, at(2).lo), std::max(at(1).hi, at(2).hi)};
    }
    default: return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Constant folding with C semantics: truncating division, the remainder with the numerator's sign, arithmetic
// modulo 2^bits of the dtype (computed in uint64, then wrapped). Nothing that is undefined in C is folded: division
// or remainder by 0, INT_MIN / -1 in a type int arithmetic does not promote, shifts by the width or more.

std::optional<int64_t> fold_binary(Op op, DType src_t, int64_t a, int64_t b) {
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  const bool no_promotion = src_t == DType::int32 || src_t == DType::int64;
  switch (op) {
    case Op::ADD: return static_cast<int64_t>(ua + ub);
    case Op::SUB: return static_cast<int64_t>(ua - ub);
    case Op::MUL: return static_cast<int64_t>(ua * ub);
    case Op::IDIV:
    case Op::MOD:
      if (b == 0 || (b == -1 && a == kMin) || (no_promotion && b == -1 && a == dtype_range(src_t).lo))
        return std::nullopt;
      return op == Op::IDIV ? a / b : a % b;
    case Op::MAX: return std::max(a, b);
    case Op::MIN: return std::min(a, b);
    case Op::CMPLT: return a < b;
    case Op::CMPEQ: return a == b;
    case Op::CMPNE: return a != b;
    case Op::AND: return a & b;
    case Op::OR: return a | b;
    case Op::XOR: return a ^ b;
    case Op::SHL:
    case Op::SHR:
      if (b < 0 || b >= bit_width(src_t)) return std::nullopt;
      return op == Op::SHL ? static_cast<int64_t>(ua << b) : a >> b;
    default: return std::nullopt;
  }
}

Node fold_constants(const Node& n) {
  if (n->src.empty() || !n->shape.empty()) return nullptr;
  if (n->op == Op::WHERE) return is_int_const(n->src[0]) ? n->src[int_value(*n->src[0]) ? 1 : 2] : nullptr;
  if (!is_integral(n->dtype)) return nullptr;
  for (const Node& s : n->src)
    if (!is_int_const(s)) return nullptr;
  const DType src_t = n->src[0]->dtype;
  if (n->op == Op::NEG)
    return int_const(n->dtype, static_cast<int64_t>(0 - static_cast<uint64_t>(int_value(*n->src[0]))));
  if (n->op == Op::CAST) return int_const(n->dtype, int_value(*n->src[0]));
  if (!is_binary(n->op)) return nullptr;
  const std::optional<int64_t> v = fold_binary(n->op, src_t, int_value(*n->src[0]), int_value(*n->src[1]));
  return v ? int_const(n->dtype, *v) : nullptr;
}

// An integer node whose bounds hold one value is that value (a comparison the bounds decide, x / c for x < c, ...).
// Only operations: a RANGE of extent 1 stays a loop.
Node fold_by_bounds(const Node& n) {
  if (!is_integral(n->dtype) || n->vmin != n->vmax || !is_elementwise(n->op) || !n->shape.empty()) return nullptr;
  for (const Node& s : n->src)
    if (s->op == Op::CONST && !s->s.empty()) return nullptr;  // tensor level: the result would lose its device
  return int_const(n->dtype, n->vmin);
}

// ---------------------------------------------------------------------------------------------------------------
// Identities that hold for every integer dtype (wrap-around included).

bool is_const_value(const Node& n, int64_t v) { return is_int_const(n) && int_value(*n) == v; }

Node identities(const Node& n) {
  if (!is_integral(n->dtype) || n->src.size() != 2 || !n->shape.empty()) return nullptr;
  const Node &a = n->src[0], &b = n->src[1];
  const bool boolean = n->dtype == DType::bool_;
  switch (n->op) {
    case Op::ADD:
      if (is_const_value(b, 0)) return a;
      if (is_const_value(a, 0)) return b;
      return nullptr;
    case Op::SUB:
      if (is_const_value(b, 0)) return a;
      if (a == b) return int_const(n->dtype, 0);
      return nullptr;
    case Op::MUL:
      if (is_const_value(b, 1)) return a;
      if (is_const_value(a, 1)) return b;
      if (is_const_value(a, 0) || is_const_value(b, 0)) return int_const(n->dtype, 0);
      return nullptr;
    case Op::IDIV: return is_const_value(b, 1) ? a : nullptr;
    case Op::MOD: return is_const_value(b, 1) ? int_const(n->dtype, 0) : nullptr;
    case Op::MAX:
      if (a == b || a->vmin >= b->vmax) return a;
      if (b->vmin >= a->vmax) return b;
      return nullptr;
    case Op::MIN:
      if (a == b || a->vmax <= b->vmin) return a;
      if (b->vmax <= a->vmin) return b;
      return nullptr;
    case Op::AND:
      if (a == b) return a;
      if (is_const_value(a, 0) || is_const_value(b, 0)) return int_const(n->dtype, 0);
      if (boolean && is_const_value(b, 1)) return a;
      if (boolean && is_const_value(a, 1)) return b;
      return nullptr;
    case Op::OR:
      if (a == b || is_const_value(b, 0)) return a;
      if (is_const_value(a, 0)) return b;
      if (boolean && (is_const_value(a, 1) || is_const_value(b, 1))) return int_const(n->dtype, 1);
      return nullptr;
    case Op::XOR:
      if (a == b) return int_const(n->dtype, 0);
      if (is_const_value(b, 0)) return a;
      if (is_const_value(a, 0)) return b;
      // not(not(x)): idx_ge negates a comparison this way
      if (boolean && is_const_value(b, 1) && a->op == Op::XOR && is_const_value(a->src[1], 1)) return a->src[0];
      return nullptr;
    default: return nullptr;
  }
}

Node where_same_branches(const Node& n) { return n->src.size() == 3 && n->src[1] == n->src[2] ? n->src[1] : nullptr; }

// ---------------------------------------------------------------------------------------------------------------
// A deterministic total order on nodes by structure (never by address, which changes from run to run): op, dtype,
// arguments, then sources. Two distinct live nodes always differ somewhere, because nodes are hash-consed.
// Ranges come first, so a sum of loop variables and other terms reads r0 + r1 + (r2 / 4).
int op_rank(Op op) { return op == Op::RANGE ? -1 : static_cast<int>(op); }

int compare_structure(const NodeData* a, const NodeData* b) {
  if (a == b) return 0;
  if (a->op != b->op) return op_rank(a->op) < op_rank(b->op) ? -1 : 1;
  if (a->dtype != b->dtype) return a->dtype < b->dtype ? -1 : 1;
  if (a->i != b->i) return a->i < b->i ? -1 : 1;
  const uint64_t fa = std::bit_cast<uint64_t>(a->f), fb = std::bit_cast<uint64_t>(b->f);
  if (fa != fb) return fa < fb ? -1 : 1;
  if (int c = a->s.compare(b->s)) return c < 0 ? -1 : 1;
  if (a->src.size() != b->src.size()) return a->src.size() < b->src.size() ? -1 : 1;
  for (size_t k = 0; k < a->src.size(); ++k)
    if (int c = compare_structure(a->src[k].get(), b->src[k].get())) return c;
  return 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Sums. An index expression is read as sum(coef * term) + constant, where a term is anything that is not ADD, SUB,
// NEG, a CONST or a product with a constant. The canonical form: like terms combined, no zero coefficients, terms by
// descending coefficient then by structure, built as a left-leaning chain ((t0 + t1) + t2) + constant, each term as
// the term itself (coefficient 1) or MUL(term, coef). Every prefix of a canonical chain is canonical, so the rules
// leave the inner ADDs alone too.

struct Term {
  Node node;
  int64_t coef;
};

struct Sum {
  std::vector<Term> terms;
  int64_t constant = 0;
};

std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Adds k * x to s. False when a coefficient overflows (then the caller leaves the expression as it is).
bool add_to_sum(const Node& x, int64_t k, Sum& s) {
  // Explicit, so a long chain does not exhaust the call stack; a thread's, reused (nothing here calls add_to_sum
  // again), since the index builders read a sum per call.
  thread_local std::vector<std::pair<const Node*, int64_t>> stack;
  stack.assign(1, {&x, k});
  while (!stack.empty()) {
    auto [np, c] = stack.back();
    stack.pop_back();
    const Node& n = *np;
    const bool index = n->dtype == kIndex;
    if (index && is_int_const(n)) {
      std::optional<int64_t> v = checked_mul(c, int_value(*n));
      if (!v || __builtin_add_overflow(s.constant, *v, &s.constant)) return false;
    } else if (index && n->op == Op::ADD) {
      stack.push_back({&n->src[1], c});
      stack.push_back({&n->src[0], c});
    } else if (index && n->op == Op::SUB) {
      std::optional<int64_t> neg = checked_mul(c, -1);
      if (!neg) return false;
      stack.push_back({&n->src[1], *neg});
      stack.push_back({&n->src[0], c});
    } else if (index && n->op == Op::NEG) {
      std::optional<int64_t> neg = checked_mul(c, -1);
      if (!neg) return false;
      stack.push_back({&n->src[0], *neg});
    } else if (index && n->op == Op::MUL && (is_int_const(n->src[0]) || is_int_const(n->src[1]))) {
      const bool left = is_int_const(n->src[0]);
      std::optional<int64_t> m = checked_mul(c, int_value(*n->src[left ? 0 : 1]));
      if (!m) return false;
      stack.push_back({&n->src[left ? 1 : 0], *m});
    } else {
      s.terms.push_back({n, c});
    }
  }
  return true;
}

// A stable sort. A sum has a few terms and normalize runs for every index node built: those are sorted by insertion,
// without the buffer std::stable_sort allocates for each call; a long sum (a chain of thousands of additions) by it.
template <class Less>
void stable_sort_small(std::vector<Term>& v, Less less) {
  if (v.size() > 32) {
    std::stable_sort(v.begin(), v.end(), less);
    return;
  }
  for (size_t k = 1; k < v.size(); ++k)
    for (size_t j = k; j > 0 && less(v[j], v[j - 1]); --j) std::swap(v[j], v[j - 1]);
}

// Combines like terms, drops zero ones and sorts: the canonical order.
bool normalize(Sum& s) {
  // Terms that compare equal by structure are one node (hash-consing), so any sort orders them alike.
  auto by_structure = [](const Term& a, const Term& b) { return compare_structure(a.node.get(), b.node.get()) < 0; };
  stable_sort_small(s.terms, by_structure);
  size_t out = 0;
  for (size_t k = 0; k < s.terms.size(); ++k) {
    if (out > 0 && s.terms[out - 1].node == s.terms[k].node) {
      if (__builtin_add_overflow(s.terms[out - 1].coef, s.terms[k].coef, &s.terms[out - 1].coef)) return false;
    } else {
      s.terms[out++] = std::move(s.terms[k]);
    }
  }
  s.terms.resize(out);
  std::erase_if(s.terms, [](const Term& t) { return t.coef == 0; });
  stable_sort_small(s.terms, [](const Term& a, const Term& b) { return a.coef > b.coef; });
  return true;
}

std::optional<Sum> sum_of(const Node& x) {
  Sum s;
  if (!add_to_sum(x, 1, s) || !normalize(s)) return std::nullopt;
  return s;
}

// The constant divisor of an IDIV or MOD node, or 0.
int64_t const_divisor(const Node& n) {
  return (n->op == Op::IDIV || n->op == Op::MOD) && is_int_const(n->src[1]) ? int_value(*n->src[1]) : 0;
}

// Is `d` the form y / b takes once simplified, where y % b could not be simplified? Then y / b was not split or
// reduced either (the div and mod rules fire under the same conditions), so it is IDIV(y, b), or IDIV(x, a * b) when
// y = x / a (nested divisions merge).
bool is_quotient_of(const Node& d, const Node& y, int64_t b) {
  if (d->op != Op::IDIV) return false;
  const int64_t c = const_divisor(d);
  if (c <= 0) return false;
  if (d->src[0] == y && c == b) return true;
  const int64_t a = const_divisor(y);
  return y->op == Op::IDIV && a > 0 && d->src[0] == y->src[0] && checked_mul(a, b) == c;
}

// (y / b) * (k * b) + (y % b) * k -> y * k, for any y (C's division and remainder always recombine so), until no such
// pair is left. True when it changed the sum.
bool recombine_div_mod(Sum& s) {
  bool changed = false;
  for (bool again = true; again;) {
    again = false;
    for (size_t m = 0; m < s.terms.size() && !again; ++m) {
      const Node mod_node = s.terms[m].node;
      const int64_t b = const_divisor(mod_node);
      if (mod_node->op != Op::MOD || b <= 0) continue;
      const int64_t k = s.terms[m].coef;
      const std::optional<int64_t> kb = checked_mul(k, b);
      if (!kb) continue;
      for (size_t d = 0; d < s.terms.size(); ++d) {
        if (s.terms[d].coef != *kb || !is_quotient_of(s.terms[d].node, mod_node->src[0], b)) continue;
        Sum next;
        next.constant = s.constant;
        for (size_t t = 0; t < s.terms.size(); ++t)
          if (t != m && t != d) next.terms.push_back(s.terms[t]);
        if (!add_to_sum(mod_node->src[0], k, next) || !normalize(next)) break;
        s = std::move(next);
        again = changed = true;
        break;
      }
    }
  }
  return changed;
}

Node term_node(const Term& t) {
  return t.coef == 1 ? t.node : make_node(Op::MUL, kIndex, {t.node, index_const(t.coef)});
}

Node build_sum(const Sum& s) {
  Node acc;
  for (const Term& t : s.terms) acc = acc ? make_node(Op::ADD, kIndex, {acc, term_node(t)}) : term_node(t);
  if (!acc) return index_const(s.constant);
  return s.constant == 0 ? acc : make_node(Op::ADD, kIndex, {acc, index_const(s.constant)});
}

bool is_term_node(const Node& n, const Term& t) {
  if (t.coef == 1) return n == t.node;
  return n->op == Op::MUL && n->src[0] == t.node && is_const_value(n->src[1], t.coef);
}

// Is n exactly build_sum(s)? Checked without building anything, since most sums the rules see are canonical.
bool is_built_from(Node n, const Sum& s) {
  if (s.constant != 0 || s.terms.empty()) {
    if (s.terms.empty()) return is_const_value(n, s.constant) && n->dtype == kIndex;
    if (n->op != Op::ADD || !is_const_value(n->src[1], s.constant)) return false;
    n = n->src[0];
  }
  for (size_t k = s.terms.size(); k-- > 1;) {
    if (n->op != Op::ADD || !is_term_node(n->src[1], s.terms[k])) return false;
    n = n->src[0];
  }
  return is_term_node(n, s.terms[0]);
}

Node canonical_sum(const Node& n) {
  if (n->dtype != kIndex || !n->shape.empty()) return nullptr;
  if (n->op == Op::MUL && !is_int_const(n->src[0]) && !is_int_const(n->src[1])) return nullptr;  // a product term
  std::optional<Sum> s = sum_of(n);
  if (!s) return nullptr;
  recombine_div_mod(*s);
  if (is_built_from(n, *s)) return nullptr;
  Node out = build_sum(*s);
  return out == n ? nullptr : out;
}

// x * y of two non-constant terms in structural order, so that x*y and y*x are one term.
Node order_product(const Node& n) {
  if (!is_integral(n->dtype) || is_int_const(n->src[0]) || is_int_const(n->src[1])) return nullptr;
  if (compare_structure(n->src[1].get(), n->src[0].get()) >= 0) return nullptr;
  return make_node(Op::MUL, n->dtype, {n->src[1], n->src[0]});
}

// ---------------------------------------------------------------------------------------------------------------
// Division and remainder of an index expression x >= 0 by a constant c > 0, with x read as a sum. Two ways to take
// it apart, tried in this order:
// - split by c: x = c * Q + R, where Q takes the terms whose coefficient c divides (and the constant's floor
//   quotient) and R the rest. When R >= 0 truncation is floor division, so x / c = Q + R / c and x % c = R % c
//   (R / c is 0 and R % c is R when R < c).
// - split by a factor f of c: x = f * Q + R with 0 <= R < f. Then x / c = Q / (c / f), and
//   x % c = (Q % (c / f)) * f + R, since f * (Q % (c / f)) + R < c. With R = 0 this cancels a common factor.
//   The factors tried: gcd(c, coefficient) for each term, and gcd(c, every coefficient); the largest that works.
// Division and remainder take x apart the same way, so (x / c) * c + x % c still recombines to x in a sum.

struct Split {
  Sum quotient, rest;
};

Split split_by(const Sum& x, int64_t c) {
  Split out;
  // A positive coefficient splits as q * c + r with r in [0, c): (19 * a + b) % 18 is (a + b) % 18, which the
  // bounds may then drop (a sliding window's index, (k + 1) * w + x mod k, becomes w + x). A negative one goes whole
  // to the quotient when c divides it, else to the rest (split, its rest would only widen what must fit in [0, c)).
  for (const Term& t : x.terms) {
    const int64_t r = t.coef > 0 || t.coef % c == 0 ? t.coef % c : t.coef;
    const int64_t q = (t.coef - r) / c;
    if (q != 0) out.quotient.terms.push_back({t.node, q});
    if (r != 0) out.rest.terms.push_back({t.node, r});
  }
  // Floor division of the constant, so the rest's constant is in [0, c) (written so that nothing overflows).
  const bool below = x.constant % c < 0;
  out.quotient.constant = x.constant / c - (below ? 1 : 0);
  out.rest.constant = x.constant % c + (below ? c : 0);
  return out;
}

// The bounds of a sum from its terms' bounds (those of the node build_sum would make), or nullopt on overflow.
std::optional<Interval> bounds_of(const Sum& s) {
  std::optional<Interval> acc = Interval{s.constant, s.constant};
  for (const Term& t : s.terms) {
    std::optional<Interval> term = mul(Interval{t.node->vmin, t.node->vmax}, Interval{t.coef, t.coef});
    if (!term || !(acc = add(*acc, *term))) return std::nullopt;
  }
  return acc;
}

struct DivisionPlan {
  Split split;
  int64_t factor = 0;  // 0: split by c itself; else the factor f of c
  int64_t rest_max = 0;
};

std::optional<DivisionPlan> plan_division(const Sum& x, int64_t c) {
  Split by_c = split_by(x, c);
  if (!by_c.quotient.terms.empty() || by_c.quotient.constant != 0) {
    std::optional<Interval> r = bounds_of(by_c.rest);
    if (r && r->lo >= 0) return DivisionPlan{std::move(by_c), 0, r->hi};
  }
  std::vector<int64_t> factors;
  int64_t all = c;
  for (const Term& t : x.terms) {
    factors.push_back(std::gcd(c, t.coef));
    all = std::gcd(all, t.coef);
  }
  factors.push_back(all);
  std::sort(factors.begin(), factors.end(), std::greater<>());
  for (size_t k = 0; k < factors.size(); ++k) {
    const int64_t f = factors[k];
    if (f <= 1 || f >= c || (k > 0 && f == factors[k - 1])) continue;
    Split by_f = split_by(x, f);
    std::optional<Interval> r = bounds_of(by_f.rest);
    if (r && r->lo >= 0 && r->hi < f) return DivisionPlan{std::move(by_f), f, r->hi};
  }
  return std::nullopt;
}

// Whether x >= 0 is read as a sum that plan_division can take apart by c.
std::optional<DivisionPlan> plan_for(const Node& x, int64_t c) {
  std::optional<Sum> s = sum_of(x);
  if (!s) return std::nullopt;
  return plan_division(*s, c);
}

Node divide(const Node& n) {
  const Node& x = n->src[0];
  const int64_t c = const_divisor(n);
  if (n->dtype != kIndex || c <= 0 || !n->shape.empty()) return nullptr;
  // (y / a) / c == y / (a * c) for truncating division by positive a and c, whatever the sign of y.
  if (const int64_t a = const_divisor(x); x->op == Op::IDIV && a > 0)
    if (std::optional<int64_t> ac = checked_mul(a, c))
      return make_node(Op::IDIV, kIndex, {x->src[0], index_const(*ac)});
  if (x->vmin < 0) return nullptr;
  if (x->vmax < c) return index_const(0);
  // (y % (c * m)) / c == (y / c) % m for y >= 0: division first, which the recombination of sums expects.
  if (const int64_t cm = const_divisor(x); x->op == Op::MOD && cm > 0 && cm % c == 0 && x->src[0]->vmin >= 0)
    return make_node(Op::MOD, kIndex, {make_node(Op::IDIV, kIndex, {x->src[0], n->src[1]}), index_const(cm / c)});
  std::optional<DivisionPlan> p = plan_for(x, c);
  if (!p) return nullptr;
  const Node q = build_sum(p->split.quotient);
  if (p->factor != 0) return make_node(Op::IDIV, kIndex, {q, index_const(c / p->factor)});
  if (p->rest_max < c) return q;
  return make_node(Op::ADD, kIndex, {q, make_node(Op::IDIV, kIndex, {build_sum(p->split.rest), n->src[1]})});
}

Node remainder(const Node& n) {
  const Node& x = n->src[0];
  const int64_t c = const_divisor(n);
  if (n->dtype != kIndex || c <= 0 || !n->shape.empty() || x->vmin < 0) return nullptr;
  if (x->vmax < c) return x;
  // (y % (c * m)) % c == y % c for y >= 0.
  if (const int64_t cm = const_divisor(x); x->op == Op::MOD && cm > 0 && cm % c == 0 && x->src[0]->vmin >= 0)
    return make_node(Op::MOD, kIndex, {x->src[0], n->src[1]});
  std::optional<DivisionPlan> p = plan_for(x, c);
  if (!p) return nullptr;
  const Node r = build_sum(p->split.rest);
  if (p->factor != 0) {
    const Node q = build_sum(p->split.quotient);
    const Node inner = make_node(Op::MOD, kIndex, {q, index_const(c / p->factor)});
    return make_node(Op::ADD, kIndex, {make_node(Op::MUL, kIndex, {inner, index_const(p->factor)}), r});
  }
  return p->rest_max < c ? r : make_node(Op::MOD, kIndex, {r, n->src[1]});
}

// x + k < c  ->  x < c - k: a sum compared with a constant keeps its constant on the right (padding's validity tests
// become range < bound).
Node move_constant(const Node& n) {
  const Node &a = n->src[0], &b = n->src[1];
  if (a->dtype != kIndex || a->op != Op::ADD || !is_int_const(a->src[1]) || !is_int_const(b)) return nullptr;
  int64_t c;
  if (__builtin_sub_overflow(int_value(*b), int_value(*a->src[1]), &c)) return nullptr;
  return make_node(Op::CMPLT, n->dtype, {a->src[0], index_const(c)});
}

RuleSet make_rules() {
  RuleSet rules;
  // Ops that compute on integers: folding first (cheap, and handles wrap-around the bounds give up on), then what
  // the bounds decide, then the identities.
  for (Op op : {Op::NEG, Op::CAST, Op::ADD, Op::SUB, Op::MUL, Op::IDIV, Op::MOD, Op::MAX, Op::MIN, Op::CMPLT, Op::CMPEQ,
                Op::CMPNE, Op::AND, Op::OR, Op::XOR, Op::SHL, Op::SHR, Op::WHERE}) {
    rules.on(op, fold_constants);
    rules.on(op, fold_by_bounds);
    if (is_binary(op)) rules.on(op, identities);
  }
  rules.on(Op::WHERE, where_same_branches);
  rules.on(Op::MUL, order_product);
  for (Op op : {Op::ADD, Op::SUB, Op::NEG, Op::MUL}) rules.on(op, canonical_sum);
  rules.on(Op::IDIV, divide);
  rules.on(Op::MOD, remainder);
  rules.on(Op::CMPLT, move_constant);
  return rules;
}

void require_positive(const char* what, int64_t c) {
  if (c <= 0) throw InvalidArgument(cat(what, ": the divisor must be positive, got ", c));
}

}  // namespace

void compute_bounds(NodeData& n) {
  if (is_float(n.dtype)) {
    n.vmin = n.vmax = 0;
    return;
  }
  const Interval full = dtype_range(n.dtype);
  std::optional<Interval> r = interval_of(n);
  if (!r || r->lo > r->hi || r->lo < full.lo || r->hi > full.hi) r = full;
  n.vmin = r->lo;
  n.vmax = r->hi;
}

const RuleSet& symbolic_rules() {
  static const RuleSet rules = make_rules().mark_fixed_points();
  return rules;
}

Node simplify(const Node& n) { return rewrite(n, symbolic_rules()); }

Node idx_add(const Node& a, const Node& b) { return simplify(make_node(Op::ADD, kIndex, {a, b})); }
Node idx_mul(const Node& a, int64_t c) { return idx_mul(a, index_const(c)); }
Node idx_mul(const Node& a, const Node& b) { return simplify(make_node(Op::MUL, kIndex, {a, b})); }
Node idx_div(const Node& a, int64_t c) {
  require_positive("idx_div", c);
  return simplify(make_node(Op::IDIV, kIndex, {a, index_const(c)}));
}
Node idx_mod(const Node& a, int64_t c) {
  require_positive("idx_mod", c);
  return simplify(make_node(Op::MOD, kIndex, {a, index_const(c)}));
}
Node idx_lt(const Node& a, int64_t c) { return simplify(make_node(Op::CMPLT, DType::bool_, {a, index_const(c)})); }
Node idx_ge(const Node& a, int64_t c) {
  return simplify(make_node(Op::XOR, DType::bool_, {idx_lt(a, c), const_node(DType::bool_, 1)}));
}
Node bool_and(const Node& a, const Node& b) { return simplify(make_node(Op::AND, DType::bool_, {a, b})); }

}  // namespace hcq::fw
