// The schedule cache's key (framework/engine/callify.hpp): structurally equal graphs over other buffers share it;
// a graph that differs in anything its schedule depends on (shape, dtype, op, constant, device, variable, one
// buffer in two roles against two buffers) gets another key, so the cache never hands it the other graph's
// schedule. Then the same through realize: the differing graph misses and computes its own values.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "framework/engine/callify.hpp"
#include "framework/engine/realize.hpp"
#include "framework/ir/node.hpp"
#include "framework/ir/ops.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using fw::Node;
using fw::Op;

std::vector<float> ramp(size_t n, float from) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = from + static_cast<float>(k);
  return v;
}

// Each variant builds its graph on new buffers every call; all are one edit away from `base`.
struct Variant {
  std::string name;
  std::function<Tensor()> build;
};

std::vector<Variant> variants() {
  auto in = [](Shape s, const std::string& device = {}) { return Tensor(ramp(6, 1), std::move(s), device); };
  auto in_int = [] { return Tensor(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3}); };
  return {
      {"base", [=] { return (in({2, 3}) + in({2, 3})) * 2; }},
      {"shape", [=] { return (in({3, 2}) + in({3, 2})) * 2; }},
      {"dtype", [=] { return (in_int() + in_int()) * 2; }},
      {"op", [=] { return (in({2, 3}) - in({2, 3})) * 2; }},
      {"constant", [=] { return (in({2, 3}) + in({2, 3})) * 3; }},
      {"device", [=] { return (in({2, 3}, "CPU:1") + in({2, 3}, "CPU:1")) * 2; }},
      {"one buffer in both roles",
       [=] {
         const Tensor x = in({2, 3});
         return (x + x) * 2;
       }},
      {"variable", [=] { return (in({2, 3}) + in({2, 3})) * Variable("a", 0, 10).bind(2); }},
      {"variable's name", [=] { return (in({2, 3}) + in({2, 3})) * Variable("b", 0, 10).bind(2); }},
      {"variable's bounds", [=] { return (in({2, 3}) + in({2, 3})) * Variable("a", 0, 11).bind(2); }},
  };
}

fw::CallKey key_of(const Tensor& t) { return fw::callify({t.node()}).key; }

TEST(FrameworkScheduleKey, EqualStructuresShareAKeyAndEachDifferenceMakesAnother) {
  const std::vector<Variant> vs = variants();
  std::vector<fw::CallKey> keys;
  for (const Variant& v : vs) {
    keys.push_back(key_of(v.build()));
    EXPECT_EQ(key_of(v.build()), keys.back()) << v.name << ": the same graph on new buffers";
  }
  for (size_t a = 0; a < vs.size(); ++a)
    for (size_t b = a + 1; b < vs.size(); ++b)
      EXPECT_FALSE(keys[a] == keys[b]) << vs[a].name << " and " << vs[b].name << " share a key";
}

TEST(FrameworkScheduleKey, AVariablesValueAndARandomDrawAreNotInTheKey) {
  auto scaled = [](int64_t v) { return Tensor(ramp(6, 1), {2, 3}) * Variable("a", 0, 10).bind(v); };
  const fw::Callified two = fw::callify({scaled(2).node()}), seven = fw::callify({scaled(7).node()});
  EXPECT_EQ(two.key, seven.key);
  EXPECT_EQ(two.values, std::vector<uint32_t>{2});
  EXPECT_EQ(seven.values, std::vector<uint32_t>{7});
  // Each draw's key is an anonymous variable of its own; the schedule knows it by its bounds only.
  EXPECT_EQ(key_of(Tensor::rand({4}) + 1), key_of(Tensor::rand({4}) + 1));
}

// A hash is a bucket, not an identity: keys with one hash and other words differ.
TEST(FrameworkScheduleKey, KeysCompareTheirWordsNotOnlyTheirHash) {
  fw::CallKey a{{1, 2, 3}, 42}, b{{1, 2, 4}, 42};
  EXPECT_FALSE(a == b);
  b.words[2] = 3;
  EXPECT_EQ(a, b);
}

// The graph a key describes, against one built by hand: buffers become PARAM(number, elements) in first-use order
// (one buffer in two roles is one PARAM), DETACH disappears, and a realized node reads its buffer.
TEST(FrameworkScheduleKey, TheParameterisedGraphIsTheCallifiedRoots) {
  const Tensor x(ramp(6, 1), {2, 3}), y(ramp(6, 10), {2, 3});
  const Tensor sum = (x + y).realize();  // a buffer view of its own now
  const Tensor root = (x.detach() * y + x) + sum;
  const fw::Callified call = fw::callify({root.node()});
  ASSERT_EQ(call.buffers.size(), 3u);
  const std::string dev = x.device();
  const Node p0 = fw::make_node(Op::PARAM, DType::float32, {}, {0, 6}, 0, dev);
  const Node p1 = fw::make_node(Op::PARAM, DType::float32, {}, {1, 6}, 0, dev);
  const Node p2 = fw::make_node(Op::PARAM, DType::float32, {}, {2, 6}, 0, dev);
  auto view = [](const Node& p) { return fw::make_node(Op::RESHAPE, DType::float32, {p}, {2, 3}); };
  auto alu = [](Op op, const Node& a, const Node& b) { return fw::make_node(op, DType::float32, {a, b}); };
  const Node want_root = alu(Op::ADD, alu(Op::ADD, alu(Op::MUL, view(p0), view(p1)), view(p0)), view(p2));
  const Node want = fw::make_node(Op::SINK, DType::bool_, {want_root});
  EXPECT_EQ(fw::parameterised_graph(call.key), want) << "got\n"
                                                     << fw::to_string(fw::parameterised_graph(call.key)) << "want\n"
                                                     << fw::to_string(want);
}

// The walk remembers a node's position in the node itself (NodeData::walk_position); a position left there by an
// earlier walk of another graph must not be taken for this walk's. Here x, y and s = x * y are shared: in `a` s
// sits at position 2, in `b` position 2 is y, and s comes later. Each key, written after the other graph's walk,
// must still describe its own graph (built by hand).
TEST(FrameworkScheduleKey, APositionLeftByAnEarlierWalkIsNotThisWalks) {
  const Tensor x(ramp(6, 1), {6}), y(ramp(6, 10), {6}), z(ramp(6, 20), {6});
  const Tensor s = x * y;
  const Tensor a = s + x;            // x 0, y 1, s 2, a 3
  const Tensor b = (z + x + y) * s;  // z 0, x 1, z + x 2, y 3, ... s 5
  const std::string dev = x.device();
  auto param = [&](int64_t k) { return fw::make_node(Op::PARAM, DType::float32, {}, {k, 6}, 0, dev); };
  auto alu = [](Op op, const Node& l, const Node& r) { return fw::make_node(op, DType::float32, {l, r}); };
  auto sink = [](const Node& r) { return fw::make_node(Op::SINK, DType::bool_, {r}); };
  const Node want_a = sink(alu(Op::ADD, alu(Op::MUL, param(0), param(1)), param(0)));
  const Node want_b =
      sink(alu(Op::MUL, alu(Op::ADD, alu(Op::ADD, param(0), param(1)), param(2)), alu(Op::MUL, param(1), param(2))));
  for (int round = 0; round < 3; ++round) {
    const fw::Callified ka = fw::callify({a.node()});
    EXPECT_EQ(ka.buffers.size(), 2u);
    EXPECT_EQ(fw::parameterised_graph(ka.key), want_a) << "round " << round << ": got\n"
                                                       << fw::to_string(fw::parameterised_graph(ka.key));
    const fw::Callified kb = fw::callify({b.node()});
    EXPECT_EQ(kb.buffers.size(), 3u);
    EXPECT_EQ(fw::parameterised_graph(kb.key), want_b) << "round " << round << ": got\n"
                                                       << fw::to_string(fw::parameterised_graph(kb.key));
  }
}

// Two threads writing keys at once (graphs that share nodes, the constants and s): a walk that starts while
// another runs keeps its own table instead of the nodes' marks, and every key is the one written alone.
TEST(FrameworkScheduleKey, KeysWrittenOnTwoThreadsAtOnceAreTheKeysWrittenAlone) {
  const Tensor x(ramp(6, 1), {6}), y(ramp(6, 10), {6}), z(ramp(6, 20), {6});
  Tensor chain = x * y;  // 400 nodes both graphs walk, so that the two walks overlap on them
  for (int k = 0; k < 200; ++k) chain = chain * y + x;
  const Node graphs[2] = {(chain + 1.0f).sum().node(), ((z + x) * chain).node()};
  const fw::CallKey alone[2] = {fw::callify({graphs[0]}).key, fw::callify({graphs[1]}).key};
  ASSERT_FALSE(alone[0] == alone[1]);
  std::atomic<int> wrong{0}, ready{0};
  auto work = [&](int g) {
    ready.fetch_add(1);
    while (ready.load() < 2) std::this_thread::yield();
    for (int k = 0; k < 4000; ++k)
      if (!(fw::callify({graphs[(g + k) % 2]}).key == alone[(g + k) % 2])) wrong.fetch_add(1);
  };
  std::thread t0(work, 0), t1(work, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Counts past the header's fields (65535 sources, a 32767-byte string) take the key's wide form.
TEST(FrameworkScheduleKey, WideNodesRoundTrip) {
  std::vector<Node> consts;
  for (int k = 0; k < 70000; ++k) consts.push_back(fw::index_const(k));
  const Node wide = fw::make_node(Op::SINK, DType::bool_, consts);
  const Node named = fw::make_node(Op::CONST, DType::int32, {}, {5}, 0, std::string(40000, 'd'));
  const fw::Callified call = fw::callify({wide, named});
  EXPECT_EQ(fw::parameterised_graph(call.key), fw::make_node(Op::SINK, DType::bool_, {wide, named}));
}

// With an empty cache, realize a, then b: b must miss the cache and compute its own values.
void expect_own_schedule(const std::function<Tensor()>& a, const std::function<Tensor()>& b,
                         const std::vector<float>& b_values) {
  fw::clear_schedule_cache();
  a().realize();
  const FrameworkCounters before = framework_counters();
  EXPECT_EQ(b().data<float>(), b_values);
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.schedule_misses - before.schedule_misses, 1u);
  EXPECT_EQ(after.schedule_hits - before.schedule_hits, 0u);
}

TEST(FrameworkScheduleKey, OneBufferInTwoRolesAndTwoBuffersAreTwoSchedules) {
  const std::vector<float> x = ramp(4, 1), y = ramp(4, 10);
  auto one = [&] {
    const Tensor t(x, {4});
    return t * t + 1;
  };
  auto two = [&] { return Tensor(x, {4}) * Tensor(y, {4}) + 1; };
  expect_own_schedule(one, two, {1 * 10 + 1, 2 * 11 + 1, 3 * 12 + 1, 4 * 13 + 1});
  expect_own_schedule(two, one, {1 * 1 + 1, 2 * 2 + 1, 3 * 3 + 1, 4 * 4 + 1});
}

TEST(FrameworkScheduleKey, ConstantsShapesAndDtypesAreTheirOwnSchedules) {
  auto plus = [](float c) { return [c] { return Tensor(ramp(3, 1), {3}) + c; }; };
  expect_own_schedule(plus(1), plus(2), {3, 4, 5});
  auto summed = [](Shape s) { return [s] { return Tensor(ramp(6, 1), s).sum(1); }; };
  expect_own_schedule(summed({2, 3}), summed({3, 2}), {1 + 2, 3 + 4, 5 + 6});
  auto doubled_int = [] { return (Tensor(std::vector<int32_t>{1, 2, 3}, {3}) * 2).cast(dtypes::float32); };
  auto doubled_float = [] { return (Tensor(std::vector<float>{1.5f, 2.5f, 3.5f}, {3}) * 2); };
  expect_own_schedule(doubled_int, doubled_float, {3, 5, 7});
}

TEST(FrameworkScheduleKey, TheSameGraphOnAnotherDeviceIsAnotherSchedule) {
  auto on = [](const std::string& device) { return [device] { return Tensor(ramp(3, 1), {3}, device) * 4; }; };
  expect_own_schedule(on("CPU:0"), on("CPU:1"), {4, 8, 12});
}

TEST(FrameworkScheduleKey, ANamedVariablesValueReusesTheScheduleItsNameDoesNot) {
  auto times = [](const char* name, int64_t v) {
    return [name, v] { return Tensor(ramp(3, 1), {3}) * Variable(name, 0, 10).bind(v); };
  };
  expect_own_schedule(times("a", 2), times("b", 3), {3, 6, 9});
  const FrameworkCounters before = framework_counters();
  EXPECT_EQ(times("a", 5)().data<float>(), (std::vector<float>{5, 10, 15}));
  EXPECT_EQ(framework_counters().schedule_hits - before.schedule_hits, 1u);
}

}  // namespace
}  // namespace hcq
