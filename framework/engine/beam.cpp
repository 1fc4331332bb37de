#include "framework/engine/beam.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "framework/codegen/target.hpp"
#include "framework/engine/compile.hpp"
#include "framework/engine/validate.hpp"
#include "hcq/buffer.hpp"
#include "hcq/compiler.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "hcq/program.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

std::atomic<uint64_t> searches{0}, cache_hits{0}, timed{0}, rejected{0};

// Timing: a candidate runs at most this many times, and stops earlier once its runs took this long.
constexpr int kRuns = 7;
constexpr double kBudgetSeconds = 0.25;

// The kernel's arguments, filled the same for every candidate: floats spread over [-1, 1] (a product of such values
// stays finite and exercises every lane), integers and bools 0 (a gather's index then stays in bounds).
struct Arguments {
  std::vector<Buffer> bufs;
  std::vector<uint64_t> addrs;
  std::vector<uint32_t> vals;
  std::vector<std::byte> output_before;  // buffer 0 as the kernel first finds it (an assign reads it)
  DType out = DType::float32;
};

void fill(DType t, std::vector<std::byte>& bytes, size_t count) {
  const size_t size = dtype_size(t);
  for (size_t k = 0; k < count; ++k) {
    const double x = static_cast<double>((k * 2654435761u + 12345u) % 2001u) / 1000.0 - 1.0;
    std::byte* p = bytes.data() + k * size;
    const auto f = static_cast<float>(x);
    if (t == DType::float32) std::memcpy(p, &f, 4);
    const uint16_t half = t == DType::bfloat16  ? bfloat16_t::from_float(f).bits
                          : t == DType::float16 ? float16_t::from_float(f).bits
                                                : 0;
    if (t == DType::bfloat16 || t == DType::float16) std::memcpy(p, &half, 2);
  }
}

Arguments arguments_for(const Node& ast, Device& dev) {
  Arguments a;
  std::vector<const NodeData*> params;
  for (const NodeData* n : toposort({ast})) {
    if (n->op == Op::PARAM) params.push_back(n);
    if (n->op == Op::VAR_PARAM) {
      const auto k = static_cast<size_t>(n->i[0]);
      if (a.vals.size() <= k) a.vals.resize(k + 1, 0);
      a.vals[k] = static_cast<uint32_t>(n->src[0]->i[0]);  // the variable's lower bound
    }
  }
  std::sort(params.begin(), params.end(), [](auto* x, auto* y) { return x->i[0] < y->i[0]; });
  a.bufs.reserve(params.size());
  for (const NodeData* p : params) {
    const auto count = static_cast<size_t>(std::max<int64_t>(p->i[1], 1));
    std::vector<std::byte> bytes(count * dtype_size(p->dtype));
    fill(p->dtype, bytes, count);
    a.bufs.emplace_back(dev, bytes.size());
    a.bufs.back().copyin(std::span<const std::byte>(bytes));
    a.addrs.push_back(a.bufs.back().va());
    if (a.bufs.size() == 1) {
      a.output_before = std::move(bytes);
      a.out = p->dtype;
    }
  }
  return a;
}

// One run of `k` on `a` (buffer 0 first put back as it was); its device time in seconds.
double run_once(const CompiledKernel& k, Arguments& a) {
  if (!a.bufs.empty()) a.bufs[0].copyin(std::span<const std::byte>(a.output_before));
  const auto start = std::chrono::steady_clock::now();
  const std::optional<double> device_seconds = (*k.program)(a.addrs, a.vals, k.rendered.global, k.rendered.local, true);
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;
  return device_seconds.value_or(wall.count());
}

std::vector<std::byte> output_of(Arguments& a) {
  std::vector<std::byte> out(a.output_before.size());
  if (!a.bufs.empty()) a.bufs[0].copyout(std::span<std::byte>(out));
  return out;
}

// The type whose tolerance two renderings' outputs are compared at: the output's, or, for a float output, the
// narrowest float type the kernel rounds through (a float16 product stored as float32 differs by float16's ulp when
// two renderings sum in other orders).
DType comparison_type(const Node& ast, DType out) {
  if (out != DType::float32 && out != DType::float16) return out;
  DType t = out;
  for (const NodeData* n : toposort({ast})) {
    if (n->dtype == DType::bfloat16) return DType::bfloat16;
    if (n->dtype == DType::float16) t = DType::float16;
  }
  return t;
}

std::string opts_or_plain(const RenderedKernel& rk) { return rk.opts.empty() ? "(no opts)" : rk.opts; }

}  // namespace

RenderedKernel render_searched(const Node& ast, const TargetFacts& facts, const std::string& device) {
  RenderedKernel base = render_c(ast, facts);
  const unsigned width = knobs::beam();
  if (width == 0 || !facts.optimize) return base;
  const size_t choices = render_choices(ast, facts);
  if (choices <= 1) return base;

  Device& dev = open_device(device);
  const CompileCache cache(knobs::cache_dir() + "/beam");
  const std::string key = cat(dev.compiler().cache_key(base.source), std::string(1, '\0'), "beam ", width);
  if (const std::optional<std::vector<uint8_t>> hit = cache.get(key)) {
    try {
      RenderedKernel rk = render_with_opts(ast, facts, std::string(hit->begin(), hit->end()));
      ++cache_hits;
      return rk;
    } catch (const InvalidArgument&) {
      // The renderer no longer offers that rendering: search again.
    }
  }

  // The first `width` distinct renderings, the heuristics' first.
  const auto start = std::chrono::steady_clock::now();
  std::vector<KernelRequest> requests{KernelRequest{device, base}};
  for (size_t k = 1; k < choices && requests.size() < width; ++k) {
    RenderedKernel rk = render_c(ast, facts, k);
    if (std::none_of(requests.begin(), requests.end(),
                     [&](const KernelRequest& r) { return r.rendered.opts == rk.opts; }))
      requests.push_back(KernelRequest{device, std::move(rk)});
  }
  if (requests.size() == 1) return base;  // every choice renders the same opts: nothing to time
  ++searches;
  const std::vector<std::shared_ptr<const CompiledKernel>> compiled = compile_kernels(requests);

  Arguments args = arguments_for(ast, dev);
  const DType compared_as = comparison_type(ast, args.out);
  run_once(*compiled[0], args);
  const std::vector<std::byte> want = output_of(args);
  std::vector<bool> valid(compiled.size(), true);
  size_t dropped = 0;
  for (size_t c = 1; c < compiled.size(); ++c) {
    run_once(*compiled[c], args);
    if (first_mismatch(args.out, output_of(args), want, compared_as)) {
      valid[c] = false;
      ++dropped;
      ++rejected;
    }
  }
  // Timed in rounds, every candidate once a round, up to kRuns rounds (at least 3, then until the runs took
  // kBudgetSeconds a candidate), so that whatever slows the first runs after the compiles falls on every candidate
  // alike. Timed one candidate after another, the first one, the heuristics', read 220 - 232 us for the MLP's forward
  // product, against 127 - 162 us in rounds (HCQ_BEAM=40), and a search could win by its order alone.
  const size_t candidates = compiled.size() - dropped;
  std::vector<std::vector<double>> runs(compiled.size());
  double spent = 0;
  for (int round = 0; round < kRuns; ++round) {
    if (round >= 3 && spent >= kBudgetSeconds * static_cast<double>(candidates)) break;
    for (size_t c = 0; c < compiled.size(); ++c) {
      if (!valid[c]) continue;
      runs[c].push_back(run_once(*compiled[c], args));
      spent += runs[c].back();
    }
  }
  std::vector<double> times(compiled.size(), -1);
  for (size_t c = 0; c < compiled.size(); ++c) {
    if (!valid[c]) continue;
    std::sort(runs[c].begin(), runs[c].end());
    times[c] = runs[c][runs[c].size() / 2];
    ++timed;
  }
  size_t best = 0;
  for (size_t c = 1; c < compiled.size(); ++c)
    if (times[c] >= 0 && times[c] < times[best]) best = c;
  const RenderedKernel& winner = compiled[best]->rendered;
  cache.put(key, std::vector<uint8_t>(winner.opts.begin(), winner.opts.end()));

  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  std::fprintf(stderr, "HCQ_BEAM: %s: %zu of %zu renderings in %.2f s: %s %.1f us, heuristics %s %.1f us%s\n",
               base.name.c_str(), compiled.size(), choices, took.count(), opts_or_plain(winner).c_str(),
               times[best] * 1e6, opts_or_plain(base).c_str(), times[0] * 1e6,
               dropped ? cat(", ", dropped, " dropped for computing other values").c_str() : "");
  return winner;
}

BeamStats beam_stats() { return BeamStats{searches.load(), cache_hits.load(), timed.load(), rejected.load()}; }

}  // namespace hcq::fw
