// The graph fuzzer: random DAGs of kernels and copies over the devices of a set and their compute and copy
// queues, on fixed buffers (disjoint slots of them, so byte-range overlap is exercised) and on input buffers whose
// addresses change per replay; each graph replayed several times, sometimes back to back, and compared with eager
// execution of the same calls. Bounded in time: HCQ_GRAPH_FUZZ_SECONDS per device set (default 2). It prints the
// seed of a failing case; HCQ_GRAPH_FUZZ_SEED=<seed> starts from that case.
#include <chrono>
#include <cstdlib>
#include <random>

#include "graph/graph_fixture.hpp"

namespace hcq::graph_test {
namespace {

constexpr uint32_t kSlotWords = 64;
constexpr uint64_t kSlotBytes = kSlotWords * 4;
constexpr uint32_t kSlots = 4;  // per buffer
constexpr uint64_t kBufBytes = kSlotBytes * kSlots;
constexpr uint32_t kFixed = 4;   // fixed buffers
constexpr uint32_t kInputs = 2;  // input variables, each choosing between two buffers per replay
constexpr uint32_t kValues = 3;  // scalar variables
constexpr uint32_t kLocal = 16;  // local size of launches with a symbolic element count

// Variables: input addresses, scalars, then the symbolic element count and its workgroup count.
constexpr uint16_t kVarInput0 = 0, kVarValue0 = kInputs, kVarN = kInputs + kValues, kVarGroups = kVarN + 1;
constexpr size_t kNumVars = kVarGroups + 1;

double budget_seconds() {
  const char* s = std::getenv("HCQ_GRAPH_FUZZ_SECONDS");
  return s ? std::atof(s) : 2.0;
}

uint64_t first_seed() {
  if (const char* s = std::getenv("HCQ_GRAPH_FUZZ_SEED")) return std::strtoull(s, nullptr, 0);
  return std::random_device{}();
}

// The calls, their queues and waits, for a failure message.
std::string describe(const Graph& graph, const std::vector<GraphCall>& calls) {
  auto sym = [](const Sym& x) { return x.is_const() ? hex(x.add) : cat("v", x.var, "+", x.add); };
  std::string out;
  const GraphSchedule& s = graph.schedule();
  for (size_t j = 0; j < calls.size(); ++j) {
    out += cat("  call ", j, " queue ", s.steps[j].queue, s.steps[j].signals ? " (signals)" : "", ": ");
    if (const auto* k = std::get_if<KernelCall>(&calls[j])) {
      out += cat("add on ", k->program->device().name(), " out ", sym(k->bufs[0].addr), " in ", sym(k->bufs[1].addr));
    } else {
      const auto& c = std::get<CopyCall>(calls[j]);
      out += cat("copy on ", c.device->name(), " ", sym(c.src), " -> ", sym(c.dst), " ", c.size, " bytes");
    }
    for (const auto& w : s.steps[j].waits) out += cat(" [wait q", w.queue, " >= ", w.value, "]");
    out += "\n";
  }
  for (size_t d = 0; d < s.exit_waits.size(); ++d) {
    out += cat("  exit of device ", d, ":");
    for (const auto& w : s.exit_waits[d]) out += cat(" [wait q", w.queue, " >= ", w.value, "]");
    out += "\n";
  }
  return out;
}

class GraphFuzz : public GraphFixture {
 protected:
  // One random case: a graph, replayed `rounds` times (1 or 2 replays per round, back to back), each round
  // compared with eager execution from the same starting memory.
  void run_case(uint64_t seed);

  // The buffers in snapshot order (fixed, then the input alternatives), with their owners, for a failure message.
  std::string buffer_addresses() const {
    std::string out = "  buffers:";
    for (const auto* m : fixed_) out += cat(" ", hex(m->va()));
    out += " | inputs:";
    for (const auto* m : alternatives_) out += cat(" ", hex(m->va()));
    return out + "\n";
  }

  std::vector<std::unique_ptr<Program>> adds_;                    // per device
  std::vector<conformance::DeviceMemory*> fixed_, alternatives_;  // alternatives_[2*i + k]: input i, choice k
};

void GraphFuzz::run_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](uint64_t n) { return static_cast<uint32_t>(rng() % n); };
  const size_t ndev = devs().size();

  // A slot reference: base (a fixed buffer, or an input variable) and slot index.
  struct Slot {
    bool input;
    uint32_t base, slot;
  };
  auto random_slot = [&]() {
    return pick(3) == 0 ? Slot{true, pick(kInputs), pick(kSlots)} : Slot{false, pick(kFixed), pick(kSlots)};
  };
  auto addr = [&](const Slot& s) {
    const int64_t off = static_cast<int64_t>(s.slot * kSlotBytes);
    return s.input ? Sym(Var{static_cast<uint16_t>(kVarInput0 + s.base)}, off) : Sym(fixed_[s.base]->va() + off);
  };

  std::vector<GraphCall> calls;
  const uint32_t ncalls = 1 + pick(12);
  for (uint32_t c = 0; c < ncalls; ++c) {
    Device& d = dev(pick(ndev));
    if (pick(10) < 7) {
      const Slot out = random_slot(), in = random_slot();
      KernelCall k;
      k.program = adds_[static_cast<size_t>(std::find(devs().begin(), devs().end(), &d) - devs().begin())].get();
      // The whole slot is declared: with a symbolic count the kernel may touch any of it.
      k.bufs = {{addr(out), kSlotBytes, Access::write}, {addr(in), kSlotBytes, Access::read}};
      const Sym value = pick(2) ? Sym(Var{static_cast<uint16_t>(kVarValue0 + pick(kValues))}) : Sym(pick(1000));
      if (pick(2)) {
        k.vals = {Sym(Var{kVarN}), value};
        k.global = {Sym(Var{kVarGroups}), 1, 1};
        k.local = {kLocal, 1, 1};
      } else {
        const uint32_t local = 1u << pick(7);  // 1..64
        const uint32_t n = 1 + pick(kSlotWords);
        k.vals = {n, value};
        k.global = {(n + local - 1) / local, 1, 1};
        k.local = {local, 1, 1};
      }
      calls.push_back(std::move(k));
    } else {
      // Source and destination: disjoint ranges of 1..kSlots slots.
      const uint32_t len = 1 + pick(2);
      Slot dst = random_slot(), src = random_slot();
      dst.slot = std::min(dst.slot, kSlots - len);
      src.slot = std::min(src.slot, kSlots - len);
      if (dst.input == src.input && dst.base == src.base && dst.slot < src.slot + len && src.slot < dst.slot + len) {
        src.slot = (dst.slot + len) % (kSlots - len + 1);
        if (src.slot < dst.slot + len && dst.slot < src.slot + len) src = Slot{!dst.input, 0, 0};
      }
      calls.push_back(CopyCall{&d, addr(dst), addr(src), len * kSlotBytes});
    }
  }

  GraphOptions opts;
  opts.sets = 1 + pick(3);
  opts.bind = pick(4) != 0;
  Graph graph(calls, opts);

  const uint32_t rounds = 2 + pick(3);
  for (uint32_t r = 0; r < rounds; ++r) {
    const uint32_t replays = 1 + pick(2);
    std::vector<std::vector<uint64_t>> vars(replays, std::vector<uint64_t>(kNumVars));
    for (auto& v : vars) {
      for (uint32_t i = 0; i < kInputs; ++i) v[kVarInput0 + i] = alternatives_[2 * i + pick(2)]->va();
      for (uint32_t i = 0; i < kValues; ++i) v[kVarValue0 + i] = rng() & 0xffffffff;
      v[kVarN] = 1 + pick(kSlotWords);
      v[kVarGroups] = (v[kVarN] + kLocal - 1) / kLocal;
    }
    fill_random(rng());
    const auto before = snapshot();
    for (const auto& v : vars) graph.replay(v);
    graph.wait();
    const auto replayed = snapshot();
    restore(before);
    for (const auto& v : vars) run_eager(calls, v);
    const auto eager = snapshot();
    if (replayed != eager) {
      // Every differing word (the first few): its buffer and byte offset, and the value it started the round with,
      // so a lost write (replay == before) tells itself apart from a stale input or a wrong variable.
      std::string words;
      size_t differing = 0;
      for (size_t w = 0; w < replayed.size(); ++w) {
        if (replayed[w] == eager[w]) continue;
        if (++differing <= 8)
          words += cat("  word ", w, " (buffer ", w / (kBufBytes / 4), " + ", (w % (kBufBytes / 4)) * 4, "): replay ",
                       replayed[w], ", eager ", eager[w], ", before ", before[w], "\n");
      }
      std::string values;
      for (const auto& v : vars) {
        values += "  replay variables:";
        for (uint64_t x : v) values += cat(" ", hex(x));
        values += "\n";
      }
      FAIL() << "graph fuzz case seed " << seed << " (HCQ_GRAPH_FUZZ_SEED=" << seed << " reproduces it): round " << r
             << " of " << replays << " replay(s), " << calls.size() << " calls on " << graph.num_queues() << " queues, "
             << graph.schedule().num_waits() << " waits; " << differing << " words differ:\n"
             << words << values << describe(graph, calls) << buffer_addresses();
    }
  }
}

TEST_P(GraphFuzz, RandomGraphsMatchEager) {
  for (size_t i = 0; i < devs().size(); ++i) adds_.push_back(load(dev(i), kernels(dev(i)).add_value_u32));
  for (uint32_t i = 0; i < kFixed; ++i) fixed_.push_back(&memory(i, kBufBytes));
  for (uint32_t i = 0; i < 2 * kInputs; ++i) alternatives_.push_back(&memory(i, kBufBytes));

  const uint64_t seed0 = first_seed();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(budget_seconds());
  uint64_t cases = 0;
  do {
    const uint64_t seed = seed0 + cases;
    try {
      run_case(seed);
    } catch (const std::exception& e) {
      FAIL() << "graph fuzz case seed " << seed << " (HCQ_GRAPH_FUZZ_SEED=" << seed
             << " reproduces it) threw: " << e.what();
    }
    if (HasFatalFailure() || HasFailure()) return;
    ++cases;
  } while (std::chrono::steady_clock::now() < deadline);
  RecordProperty("cases", static_cast<int>(cases));
  std::printf("[   INFO   ] %s: %llu random graphs from seed %llu\n", GetParam().c_str(),
              static_cast<unsigned long long>(cases), static_cast<unsigned long long>(seed0));
}

HCQ_GRAPH_INSTANTIATE(GraphFuzz);

}  // namespace
}  // namespace hcq::graph_test
