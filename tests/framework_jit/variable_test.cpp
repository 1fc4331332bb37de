// hcq::Variable (include/hcq/tensor.hpp): a named int32 bound per call. Eagerly, a new value reuses the schedule and
// the compiled kernels; in a TinyJit input, each call's value reaches the replayed kernels without a new capture.
// Expected values are loops on the host. Runs on the default device (the simulated GPUs in scripts/test.sh's GPU
// runs); the HCQ_VALIDATE case runs only there.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "framework_sched/gpu_under_test.hpp"
#include "hcq/error.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::jit_error;
using jittest::values;

std::string invalid_argument(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument thrown";
  return {};
}

TEST(FrameworkVariable, ABoundVariableIsAnInt32Scalar) {
  const Variable n("n", -5, 100);
  const Tensor t = n.bind(7);
  EXPECT_EQ(t.dtype(), dtypes::int32);
  EXPECT_EQ(t.shape(), Shape{});
  EXPECT_EQ(t.data<int32_t>(), (std::vector<int32_t>{7}));
  EXPECT_EQ(n.bind(-5).item(), -5.0);  // negative values survive the 32-bit kernel word
  const std::vector<float> xv = values(6, 1);
  const Tensor x(xv, {2, 3});
  const std::vector<float> got = (x * n.bind(3) + n.bind(3)).data<float>();
  for (size_t i = 0; i < xv.size(); ++i) EXPECT_FLOAT_EQ(got[i], xv[i] * 3.0f + 3.0f) << i;
}

// The value is not part of the schedule: binding another one hits the schedule cache and compiles nothing.
TEST(FrameworkVariable, NewValuesReuseTheScheduleAndKernels) {
  const Variable k("k", 0, 1000);
  const std::vector<float> xv = values(16, 2);
  const Tensor x(xv, {16});
  (void)(x * k.bind(1)).sum().item();
  const FrameworkCounters before = framework_counters();
  for (int v = 2; v <= 6; ++v) {
    double want = 0;
    for (float e : xv) want += static_cast<double>(e) * v;
    EXPECT_NEAR((x * k.bind(v)).sum().item(), want, 1e-4) << v;
  }
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.schedule_misses, before.schedule_misses);
  EXPECT_EQ(after.compiles, before.compiles);
}

TEST(FrameworkVariable, BadVariablesAndBindingsAreRefused) {
  EXPECT_EQ(invalid_argument([] { Variable("", 0, 1); }), "Variable: the name is empty");
  EXPECT_EQ(invalid_argument([] { Variable("n", 3, 2); }), "Variable n: min 3 is above max 2");
  EXPECT_EQ(invalid_argument([] { Variable("n", 0, int64_t{1} << 31); }),
            "Variable n: bounds [0, 2147483648] do not fit int32 (a variable reaches kernels as a 32-bit value)");
  const Variable n("n", 1, 10);
  EXPECT_EQ(invalid_argument([&] { (void)n.bind(11); }), "Variable n: bound to 11, outside its bounds [1, 10]");
  EXPECT_EQ(invalid_argument([&] { (void)(n.bind(2) + n.bind(3)).item(); }),
            "realize: Variable n is bound to 2 and to 3 in one graph: its kernels read one value. Realize the two "
            "parts separately, or use two variables");
}

// A Variable among a TinyJit's inputs: one capture, then every call's value, checked against a host loop.
TEST(FrameworkJitVariable, ReplaysWithEachCallsValue) {
  const Variable n("n", 1, 64);
  int runs = 0;
  TinyJit jit([&](const std::vector<Tensor>& in) {
    ++runs;
    const Tensor scale = in[1].cast(dtypes::float32);
    return std::vector<Tensor>{in[0] * scale + 1, (in[0] * scale).sum()};
  });
  const std::vector<float> xv = values(8, 3);
  const Tensor x(xv, {8});
  FrameworkCounters after_capture{};
  for (int call = 0; call < 8; ++call) {
    const int v = 3 + 5 * call;
    if (call == 2) after_capture = framework_counters();
    const std::vector<Tensor> out = jit({x, n.bind(v)});
    const std::vector<float> a = out[0].data<float>();
    double sum = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      EXPECT_FLOAT_EQ(a[i], xv[i] * static_cast<float>(v) + 1.0f) << "call " << call << " element " << i;
      sum += static_cast<double>(xv[i]) * v;
    }
    EXPECT_NEAR(out[1].item(), sum, 1e-4) << "call " << call;
  }
  EXPECT_EQ(runs, 2);
  const FrameworkCounters end = framework_counters();
  EXPECT_EQ(end.schedule_misses, after_capture.schedule_misses);
  EXPECT_EQ(end.compiles, after_capture.compiles);
}

// A Variable bound inside the function (not an input) is a constant of the capture, as a closed-over tensor's value
// is; an input Variable keeps a pruned JIT's kernels that read it in the replay.
TEST(FrameworkJitVariable, InsideTheFunctionABindingIsFixedAndPruningKeepsInputVariables) {
  const Variable inner("inner", 0, 100), outer("outer", 0, 100);
  const Tensor w(std::vector<float>{1, 2, 3}, {3});
  TinyJit jit(
      [&](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{w * in[0].cast(dtypes::float32) + inner.bind(10).cast(dtypes::float32)};
      },
      TinyJit::Options{.prune = true});
  for (int v : {1, 2, 5, 7}) {
    const std::vector<float> got = jit({outer.bind(v)})[0].data<float>();
    EXPECT_EQ(got, (std::vector<float>{1.0f * v + 10, 2.0f * v + 10, 3.0f * v + 10})) << v;
  }
  EXPECT_EQ(jit.info().pruned, 0u);
}

TEST(FrameworkJitVariable, ChangedVariableInputsAreJitErrors) {
  const Variable n("n", 1, 8), m("m", 1, 8);
  const Tensor x(std::vector<float>{1, 2}, {2});
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[1].cast(dtypes::float32)}; });
  (void)jit({x, n.bind(2)});
  const std::string instead =
      ": the replay's kernels were made for the first call's inputs. Call it as it was first called, or use another "
      "TinyJit for these inputs";
  EXPECT_EQ(jit_error([&] { (void)jit({x, m.bind(2)}); }),
            "TinyJit: input 1 changed: Variable m [1, 8], first called with Variable n [1, 8]" + instead);
  EXPECT_EQ(jit_error([&] { (void)jit({x, Tensor(std::vector<int32_t>{2}, {}).realize()}); }),
            "TinyJit: input 1 changed: a tensor, first called with Variable n [1, 8]" + instead);
  EXPECT_EQ(jit_error([&] { (void)jit({x, n.bind(2), n.bind(3)}); }),
            "TinyJit: inputs 1 and 2 are the same Variable (n): pass it once and use it twice inside the function");
  EXPECT_EQ(jit({x, n.bind(3)})[0].data<float>(), (std::vector<float>{3, 6}));
}

// HCQ_VALIDATE reruns each GPU kernel on the CPU device with the same values: a kernel reading a Variable agrees.
TEST(FrameworkJitGpu, ValidateRunsVariablesKernelsWithTheirValues) {
  FW_REQUIRE_GPU(gpu);
  const jittest::ScopedKnob validate("HCQ_VALIDATE", "1");
  const Variable n("n", 0, 50);
  const Tensor x(std::vector<float>{1, 2, 3, 4}, {4}, gpu);
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[1].cast(dtypes::float32)}; });
  for (int v : {2, 3, 4, 9}) {
    EXPECT_EQ(jit({x, n.bind(v, gpu)})[0].data<float>(), (std::vector<float>{1.0f * v, 2.0f * v, 3.0f * v, 4.0f * v}))
        << v;
  }
}

}  // namespace
}  // namespace hcq
