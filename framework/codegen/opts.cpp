// Opts as data (issue 19): a kernel's opts are the text render_c prints (`THREAD(axis,n) UPCAST(axis,n) PACK(axis)
// DOT(V) TC(path) MERGE(axes)`; on GPUs TC(unit), a matrix instruction), and render_with_opts renders the choice that
// has them, or says why none does.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "hcq/error.hpp"

namespace hcq::fw {
namespace {

struct Opt {
  std::string text;  // as written, "UPCAST(1,64)"
  std::string name;  // "UPCAST"
  std::vector<int64_t> args;
  std::string word;  // TC's argument, a path's name
};

// "A(1,2) B(3)" -> opts; a token that is not NAME(args) is refused.
std::vector<Opt> parse(const std::string& opts) {
  std::vector<Opt> out;
  size_t at = 0;
  while (at < opts.size()) {
    if (opts[at] == ' ') {
      ++at;
      continue;
    }
    const size_t open = opts.find('(', at), close = opts.find(')', at), space = opts.find(' ', at);
    if (open == std::string::npos || close == std::string::npos || close < open || space < close)
      throw InvalidArgument(cat("opts \"", opts, "\": \"",
                                opts.substr(at, space == std::string::npos ? space : space - at),
                                "\" is not NAME(arguments)"));
    Opt o;
    o.text = opts.substr(at, close + 1 - at);
    o.name = opts.substr(at, open - at);
    const std::string inner = opts.substr(open + 1, close - open - 1);
    size_t p = 0;
    while (p <= inner.size()) {
      const size_t comma = std::min(inner.find(',', p), inner.size());
      const std::string part = inner.substr(p, comma - p);
      char* end = nullptr;
      const long long v = std::strtoll(part.c_str(), &end, 10);
      if (!part.empty() && end && *end == '\0') o.args.push_back(v);
      else o.word = part;
      p = comma + 1;
    }
    out.push_back(std::move(o));
    at = close + 1;
  }
  return out;
}

// The kernel's output extents, by axis (the store's ranges in id order, as render_c numbers axes).
std::vector<int64_t> output_extents(const Node& kernel) {
  std::vector<const NodeData*> ranges;
  for (const NodeData* n : toposort({kernel->src.at(0)->src[1]}))
    if (n->op == Op::RANGE && n->i[2] == 0) ranges.push_back(n);
  std::sort(ranges.begin(), ranges.end(), [](auto* a, auto* b) { return a->i[0] < b->i[0]; });
  std::vector<int64_t> out;
  for (const NodeData* r : ranges) out.push_back(r->i[1]);
  return out;
}

// Why `o` cannot apply to the kernel on its own; empty when it might.
std::string refusal(const Opt& o, const std::vector<int64_t>& extents, const TargetFacts& facts) {
  const std::string axes =
      extents.empty() ? std::string("no output axes") : cat("output axes 0 to ", extents.size() - 1);
  auto axis_ok = [&](int64_t a) { return a >= 0 && static_cast<size_t>(a) < extents.size(); };
  if (o.name == "UPCAST" || o.name == "THREAD") {
    if (o.args.size() != 2) return cat(o.name, " takes an axis and an amount");
    if (!axis_ok(o.args[0])) return cat("the kernel has ", axes);
    const int64_t extent = extents[static_cast<size_t>(o.args[0])];
    if (o.name == "THREAD" && (o.args[1] < 1 || static_cast<uint64_t>(o.args[1]) > facts.workers))
      return cat("the device has ", facts.workers, " worker", facts.workers == 1 ? "" : "s");
    if (o.name == "UPCAST" && (o.args[1] < 1 || extent % o.args[1] != 0))
      return cat(o.args[1], " does not divide axis ", o.args[0], " (", extent, ")");
    return {};
  }
  if (o.name == "PACK") {
    if (o.args.size() != 1) return "PACK takes an axis";
    return axis_ok(o.args[0]) ? std::string() : cat("the kernel has ", axes);
  }
  if (o.name == "MERGE") {
    for (int64_t a : o.args)
      if (!axis_ok(a)) return cat("the kernel has ", axes);
    return o.args.size() >= 2 ? std::string() : "MERGE takes two axes or more";
  }
  if (o.name == "DOT") {
    const bool avx512 = facts.cpu_isa.features.has(CpuFeature::avx512f);
    const int64_t v = avx512 ? 16 : 8;
    if (o.args.size() != 1 || o.args[0] != v) return cat("the device's vectors are ", v, " floats");
    return {};
  }
  if (o.name == "TC") {
    if (facts.target != Target::cpu) {  // a GPU's matrix instruction
      const std::string unit(to_string(facts.matrix_unit));
      if (facts.matrix_unit == MatrixUnit::none) return "the device has no matrix unit the code generator uses";
      if (o.word != unit) return cat("the device's matrix unit is ", unit);
      return {};
    }
    const std::string path(to_string(facts.cpu_isa.bf16_matmul));
    if (o.word != path) return cat("the device's bf16 path is ", path);
    return {};
  }
  return "not an opt (THREAD, UPCAST, PACK, DOT, TC, MERGE)";
}

}  // namespace

RenderedKernel render_with_opts(const Node& kernel, const TargetFacts& facts, const std::string& opts) {
  const size_t n = render_choices(kernel, facts);
  std::vector<std::string> offered;
  for (size_t k = 0; k < n; ++k) {
    RenderedKernel rk = render_c(kernel, facts, k);
    if (rk.opts == opts) return rk;
    if (std::find(offered.begin(), offered.end(), rk.opts) == offered.end()) offered.push_back(rk.opts);
  }
  const std::string name = render_c(kernel, facts).name;
  const std::vector<int64_t> extents = output_extents(kernel);
  for (const Opt& o : parse(opts))
    if (const std::string why = refusal(o, extents, facts); !why.empty())
      throw InvalidArgument(cat("opts \"", opts, "\" for ", name, ": ", o.text, " does not apply: ", why));
  std::string list;
  for (const std::string& o : offered) list += cat(list.empty() ? "" : " | ", o.empty() ? "(none)" : o);
  throw InvalidArgument(
      cat("opts \"", opts, "\" for ", name, ": no rendering has them together; its renderings: ", list));
}

}  // namespace hcq::fw
