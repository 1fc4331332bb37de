// PatchList::apply, the heart of a bound queue's resubmit: what one patched location costs when its variable
// changed, and what a variable that did not change costs (a compare).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hcq/backend/patch.hpp"

namespace {

constexpr int kVariables = 8;

// `patches` u32 locations in one region, spread round-robin over kVariables variables.
struct PatchedWords {
  explicit PatchedWords(int patches) : words(static_cast<size_t>(patches)) {
    region = list.add_region(reinterpret_cast<std::byte*>(words.data()));
    for (int i = 0; i < patches; ++i) {
      const hcq::Var var{static_cast<uint16_t>(i % kVariables)};
      list.add(hcq::Sym(var, i), {.region = region, .offset = static_cast<uint64_t>(i) * 4});
    }
  }
  std::vector<uint32_t> words;
  hcq::PatchList list;
  uint32_t region = 0;
};

void BM_PatchApplyAllChanged(benchmark::State& state) {
  PatchedWords w(static_cast<int>(state.range(0)));
  std::vector<uint64_t> vars(kVariables);
  uint64_t round = 0;
  for (auto _ : state) {
    ++round;
    for (auto& v : vars) v = round;  // every variable moves: every location is rewritten
    w.list.apply(vars);
    benchmark::DoNotOptimize(w.words.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  state.SetLabel("items = patched locations");
}
BENCHMARK(BM_PatchApplyAllChanged)->Arg(64)->Arg(1024);

void BM_PatchApplyUnchanged(benchmark::State& state) {
  PatchedWords w(static_cast<int>(state.range(0)));
  const std::vector<uint64_t> vars(kVariables, 42);
  w.list.apply(vars);
  for (auto _ : state) {
    w.list.apply(vars);  // nothing moved: one compare per variable, no stores
    benchmark::DoNotOptimize(w.words.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
  state.SetLabel("items = patched locations");
}
BENCHMARK(BM_PatchApplyUnchanged)->Arg(64)->Arg(1024);

}  // namespace
