// Graph replay against eager execution of the same calls, on every device set: changing input addresses, values
// and launch dims over many replays; replays issued back to back (the next patched while the previous runs);
// the device timeline wrapping (shadow swap) and the kick-off counter restarting during a replay loop; misuse.
#include <random>

#include "graph/graph_fixture.hpp"

namespace hcq::graph_test {
namespace {

constexpr uint32_t kWords = 256;  // u32 per buffer
constexpr uint64_t kBytes = kWords * 4;

class GraphReplay : public GraphFixture {};

uint32_t ceil_div(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

// in --(+v0, n words, symbolic dims)--> mid --copy--> far (on the last device) --(+v1)--> out, and a 3-D
// mark_threads whose global and local dims are variables. `in` is an input: its address changes every replay.
TEST_P(GraphReplay, MatchesEagerWithChangingInputsDimsAndValues) {
  Device& d0 = dev(0);
  Device& d1 = dev(devs().size() - 1);
  auto add0 = load(d0, kernels(d0).add_value_u32);
  auto add1 = load(d1, kernels(d1).add_value_u32);
  auto mark = load(d1, kernels(d1).mark_threads);
  std::vector<conformance::DeviceMemory*> inputs;
  for (int i = 0; i < 3; ++i) inputs.push_back(&memory(i, kBytes));
  auto& mid = memory(0, kBytes);
  auto& far = memory(1, kBytes);
  auto& out = memory(1, kBytes);
  auto& marks = memory(1, kBytes);

  enum : uint16_t { kIn, kN, kGroups, kV0, kV1, kGx, kGy, kLx, kLz, kNumVars };
  const Var in{kIn}, n{kN}, groups{kGroups}, v0{kV0}, v1{kV1}, gx{kGx}, gy{kGy}, lx{kLx}, lz{kLz};
  std::vector<GraphCall> calls;
  calls.push_back(KernelCall{add0.get(),
                             {{mid.va(), kBytes, Access::write}, {Sym(in), kBytes, Access::read}},
                             {Sym(n), Sym(v0)},
                             {Sym(groups), 1, 1},
                             {16, 1, 1}});
  calls.push_back(CopyCall{&d1, far.va(), mid.va(), kBytes});
  calls.push_back(KernelCall{add1.get(),
                             {{out.va(), kBytes, Access::write}, {far.va(), kBytes, Access::read}},
                             {kWords, Sym(v1)},
                             {kWords / 8, 1, 1},
                             {8, 1, 1}});
  calls.push_back(KernelCall{
      mark.get(), {{marks.va(), kBytes, Access::read_write}}, {kWords}, {Sym(gx), Sym(gy), 2}, {Sym(lx), 1, Sym(lz)}});
  Graph graph(calls);
  EXPECT_EQ(graph.num_vars(), size_t{kNumVars});
  EXPECT_EQ(graph.devices().size(), devs().size());

  std::mt19937_64 rng(1234);
  for (int r = 0; r < 40; ++r) {
    SCOPED_TRACE(cat("replay ", r));
    std::vector<uint64_t> vars(kNumVars);
    vars[kIn] = inputs[r % 3]->va();
    vars[kN] = 1 + rng() % kWords;
    vars[kGroups] = ceil_div(static_cast<uint32_t>(vars[kN]), 16);
    vars[kV0] = rng() & 0xffffffff;
    vars[kV1] = rng() & 0xffffffff;
    vars[kGx] = 1 + rng() % 4;
    vars[kGy] = 1 + rng() % 3;
    vars[kLx] = 1 + rng() % 5;
    vars[kLz] = 1 + rng() % 2;
    fill_random(rng());
    const auto before = snapshot();
    graph.replay(vars);
    graph.wait();
    const auto replayed = snapshot();
    restore(before);
    run_eager(calls, vars);
    const auto eager = snapshot();
    ASSERT_EQ(replayed, eager);
    ASSERT_NE(replayed, before);
  }
}

// Buffers name a call's memory directly (use()), and each replay hands back one completion per device: the point on
// that device's timeline after which the replay's work there is done.
TEST_P(GraphReplay, TakesBuffersAndReturnsACompletionPerDevice) {
  Device& d0 = dev(0);
  auto add = load(d0, kernels(d0).add_value_u32);
  Buffer in(d0, kBytes), out(d0, kBytes);
  std::vector<uint32_t> words(kWords);
  for (uint32_t i = 0; i < kWords; ++i) words[i] = i * 7;
  in.copyin(std::span<const uint32_t>(words));
  const Var v{0};
  std::vector<GraphCall> calls;
  calls.push_back(KernelCall{
      add.get(), {use(out, Access::write), use(in, Access::read)}, {kWords, Sym(v)}, {kWords / 16, 1, 1}, {16, 1, 1}});
  Graph graph(calls);
  ASSERT_EQ(graph.devices().size(), 1u);
  for (uint64_t r = 1; r <= 3; ++r) {
    const std::span<const Completion> done = graph.replay(std::vector<uint64_t>{r});
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].device(), &d0);
    EXPECT_EQ(done[0].value(), d0.timeline_value() - 1) << "the replay's own value on the timeline";
    done[0].wait();
    EXPECT_TRUE(done[0].done());
    std::vector<uint32_t> got(kWords);
    out.copyout(std::span<uint32_t>(got));
    for (uint32_t i = 0; i < kWords; ++i) ASSERT_EQ(got[i], i * 7 + r) << "replay " << r << " word " << i;
  }
}

// Back-to-back replays, never waited in between: x += v in place on one of two inputs, then x copied to a fixed
// buffer. With two queue sets the host patches one set while the other runs.
TEST_P(GraphReplay, BackToBackReplaysAccumulate) {
  Device& d0 = dev(0);
  auto add = load(d0, kernels(d0).add_value_u32);
  auto& a = memory(0, kBytes);
  auto& b = memory(1, kBytes);
  auto& copy = memory(1, kBytes);
  a.upload_as(std::vector<uint32_t>(kWords, 0));
  b.upload_as(std::vector<uint32_t>(kWords, 1000));
  const Var x{0}, v{1};
  std::vector<GraphCall> calls{KernelCall{add.get(),
                                          {{Sym(x), kBytes, Access::write}, {Sym(x), kBytes, Access::read}},
                                          {kWords, Sym(v)},
                                          {kWords / 32, 1, 1},
                                          {32, 1, 1}},
                               CopyCall{&dev(1), copy.va(), Sym(x), kBytes}};
  for (uint32_t sets : {1u, 2u, 3u}) {
    SCOPED_TRACE(cat(sets, " sets"));
    a.upload_as(std::vector<uint32_t>(kWords, 0));
    b.upload_as(std::vector<uint32_t>(kWords, 1000));
    Graph graph(calls, GraphOptions{.sets = sets});
    uint32_t sum_a = 0, sum_b = 1000;
    constexpr int kReplays = 200;
    for (int r = 0; r < kReplays; ++r) {
      const bool on_a = (r % 3) != 0;
      const auto value = static_cast<uint32_t>(r + 1);
      (on_a ? sum_a : sum_b) += value;
      const std::vector<uint64_t> vars{on_a ? a.va() : b.va(), value};
      graph.replay(vars);
    }
    graph.wait();
    EXPECT_EQ(graph.kick_value(), uint64_t{kReplays});
    EXPECT_EQ(a.download_as<uint32_t>(kWords), std::vector<uint32_t>(kWords, sum_a));
    EXPECT_EQ(b.download_as<uint32_t>(kWords), std::vector<uint32_t>(kWords, sum_b));
    // The last replay ran on a ((kReplays - 1) % 3 != 0): the copy holds a's final value.
    EXPECT_EQ(copy.download_as<uint32_t>(kWords), std::vector<uint32_t>(kWords, sum_a));
  }
}

// Eager work between replays is ordered by the timeline: eager x += 1, graph x += v, eager x += 1, ...
TEST_P(GraphReplay, InterleavesWithEagerLaunches) {
  Device& d0 = dev(0);
  auto add = load(d0, kernels(d0).add_value_u32);
  auto& x = memory(0, kBytes);
  x.upload_as(std::vector<uint32_t>(kWords, 0));
  std::vector<GraphCall> calls{KernelCall{add.get(),
                                          {{x.va(), kBytes, Access::write}, {x.va(), kBytes, Access::read}},
                                          {kWords, Sym(Var{0})},
                                          {kWords / 64, 1, 1},
                                          {64, 1, 1}}};
  Graph graph(calls);
  uint32_t sum = 0;
  const std::vector<uint64_t> xa{x.va(), x.va()};
  for (uint32_t r = 1; r <= 50; ++r) {
    graph.replay(std::vector<uint64_t>{r});
    (*add)(xa, std::vector<uint32_t>{kWords, 1}, {kWords / 64, 1, 1}, {64, 1, 1});
    sum += r + 1;
  }
  d0.synchronize();
  EXPECT_EQ(x.download_as<uint32_t>(kWords), std::vector<uint32_t>(kWords, sum));
}

// The timeline starts just below the 2^31 swap point; synchronize inside the loop swaps it to the shadow signal
// and restarts at 1 while the graph keeps replaying. The kick-off counter restarts too (kick_limit lowered).
TEST_P(GraphReplay, TimelineWrapAndKickRestartDuringReplayLoop) {
  for (Device* d : devs()) d->set_timeline_value((uint64_t{1} << 31) - 7);
  Device& d0 = dev(0);
  auto add = load(d0, kernels(d0).add_value_u32);
  auto& x = memory(0, kBytes);
  auto& y = memory(1, kBytes);
  x.upload_as(std::vector<uint32_t>(kWords, 0));
  std::vector<GraphCall> calls{KernelCall{add.get(),
                                          {{x.va(), kBytes, Access::write}, {x.va(), kBytes, Access::read}},
                                          {kWords, Sym(Var{0})},
                                          {kWords / 64, 1, 1},
                                          {64, 1, 1}},
                               CopyCall{&dev(1), y.va(), x.va(), kBytes}};
  Graph graph(calls, GraphOptions{.kick_limit = 5});
  uint32_t sum = 0;
  const uint64_t swapped_before = d0.timeline_value();
  for (uint32_t r = 1; r <= 30; ++r) {
    graph.replay(std::vector<uint64_t>{r});
    sum += r;
    if (r % 4 == 0) {
      for (Device* d : devs()) d->synchronize();
      ASSERT_EQ(y.download_as<uint32_t>(kWords), std::vector<uint32_t>(kWords, sum)) << "replay " << r;
    }
    EXPECT_LT(graph.kick_value(), 5u);
  }
  graph.wait();
  for (Device* d : devs()) d->synchronize();
  EXPECT_LT(d0.timeline_value(), swapped_before) << "the timeline never swapped";
  EXPECT_EQ(y.download_as<uint32_t>(kWords), std::vector<uint32_t>(kWords, sum));
}

TEST_P(GraphReplay, MisuseIsRefusedAndLeavesTheGraphUsable) {
  Device& d0 = dev(0);
  auto add = load(d0, kernels(d0).add_value_u32);
  auto& x = memory(0, kBytes);
  x.upload_as(std::vector<uint32_t>(kWords, 0));
  const Var groups{0};
  std::vector<GraphCall> calls{KernelCall{add.get(),
                                          {{x.va(), kBytes, Access::write}, {x.va(), kBytes, Access::read}},
                                          {kWords, 1},
                                          {Sym(groups), 1, 1},
                                          {64, 1, 1}}};
  Graph graph(calls);
  EXPECT_THROW(graph.replay({}), InvalidArgument);                        // too few variables
  EXPECT_THROW(graph.replay(std::vector<uint64_t>{0}), InvalidArgument);  // zero workgroups
  EXPECT_THROW(graph.replay(std::vector<uint64_t>{uint64_t{1} << 40}), InvalidArgument);
  graph.replay(std::vector<uint64_t>{kWords / 64});
  graph.wait();
  EXPECT_EQ(x.download_as<uint32_t>(kWords), std::vector<uint32_t>(kWords, 1));

  EXPECT_THROW(Graph({}), InvalidArgument);
  EXPECT_THROW(Graph({KernelCall{}}), InvalidArgument);
  EXPECT_THROW(Graph({CopyCall{nullptr, x.va(), x.va(), 4}}), InvalidArgument);
  EXPECT_THROW(Graph({CopyCall{&d0, x.va(), x.va() + 8, 0}}), InvalidArgument);
  EXPECT_THROW(Graph({CopyCall{&d0, ~uint64_t{0} - 2, x.va(), 8}}), InvalidArgument);
  EXPECT_THROW(Graph(calls, GraphOptions{.sets = 0}), InvalidArgument);
  // The kernel takes two buffers: a launch with one is refused at build (by the queue builder).
  EXPECT_THROW(Graph({KernelCall{add.get(), {{x.va(), kBytes, Access::write}}, {kWords, 1}, {4, 1, 1}, {64, 1, 1}}}),
               InvalidArgument);
}

HCQ_GRAPH_INSTANTIATE(GraphReplay);

}  // namespace
}  // namespace hcq::graph_test
