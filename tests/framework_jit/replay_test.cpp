// TinyJit on the default device (the CPU device; scripts/test.sh's GPU runs set HCQ_DEVICE to a simulated GPU):
// capture once, replay through hcq::Graph. Replays are compared bit for bit with the same function run eagerly on
// the same inputs, and with values worked by hand (or by a loop on the host).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "hcq/allocator.hpp"
#include "hcq/device.hpp"
#include "hcq/jit.hpp"
#include "hcq/registry.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::expect_same_bits;
using jittest::values;

// Several outputs of a few fused kernels, over six calls on new inputs each: every replay equals the eager run.
TEST(FrameworkJit, ReplayEqualsEagerBitForBit) {
  const TinyJit::Function f = [](const std::vector<Tensor>& in) {
    Tensor a = in[0] * in[1] + 1;
    return std::vector<Tensor>{a.sum(0), (in[0].exp() - in[1]).relu(), a.max(), in[1].softmax(1)};
  };
  TinyJit jit(f);
  for (uint32_t call = 0; call < 6; ++call) {
    const std::vector<float> xv = values(12, 2 * call), yv = values(12, 2 * call + 1);
    Tensor x(xv, {3, 4}), y(yv, {3, 4});
    const std::vector<Tensor> got = jit({x, y});
    const std::vector<Tensor> want = f({x, y});
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) expect_same_bits(got[k], want[k], cat("call ", call, " output ", k));
    // And against a loop on the host: the column sums of x*y+1.
    const std::vector<float> s = got[0].data<float>();
    for (int j = 0; j < 4; ++j) {
      double want_s = 0;
      for (int i = 0; i < 3; ++i) want_s += double(xv[i * 4 + j]) * yv[i * 4 + j] + 1;
      EXPECT_NEAR(s[j], want_s, 1e-5) << "call " << call << " column " << j;
    }
  }
  EXPECT_EQ(jit.info().calls, 6u);
}

// Call 0 runs the function, call 1 captures it (and runs the replay), later calls only replay: the function is
// called twice, and replays neither schedule, compile nor launch through the engine.
TEST(FrameworkJit, CapturesOnceThenOnlyReplays) {
  int runs = 0;
  TinyJit jit([&](const std::vector<Tensor>& in) {
    ++runs;
    return std::vector<Tensor>{(in[0] + 1) * 2, in[0].sum()};
  });
  Tensor x(std::vector<float>{1, 2, 3}, {3});
  jit({x});
  EXPECT_EQ(jit.info().calls, 1u);
  EXPECT_EQ(jit.info().graphs, 0u);
  std::vector<Tensor> out = jit({x});
  EXPECT_EQ(out[0].data<float>(), (std::vector<float>{4, 6, 8}));
  EXPECT_EQ(out[1].item(), 6.0);
  const TinyJit::Info info = jit.info();
  EXPECT_EQ(info.calls, 2u);
  EXPECT_EQ(info.kernels, 2u);  // the elementwise kernel and the sum
  EXPECT_EQ(info.graphs, 1u);
  EXPECT_EQ(info.host_copies, 0u);
  const FrameworkCounters before = framework_counters();
  for (int k = 0; k < 5; ++k) {
    Tensor xi(std::vector<float>{float(k), 10, -1}, {3});
    out = jit({xi});
    EXPECT_EQ(out[0].data<float>(), (std::vector<float>{2.0f * (k + 1), 22, 0})) << k;
    EXPECT_EQ(out[1].item(), k + 9.0) << k;
  }
  const FrameworkCounters after = framework_counters();
  EXPECT_EQ(after.schedule_misses, before.schedule_misses);
  EXPECT_EQ(after.schedule_hits, before.schedule_hits);
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_EQ(after.kernels, before.kernels);
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(jit.info().calls, 7u);
}

// Outputs: one tensor returned twice and as a reshape of itself, an input returned as it is, and one more. Each
// call's outputs are tensors of their own: earlier ones keep their values, and none is the caller's input.
TEST(FrameworkJit, SeveralOutputsAreFreshTensors) {
  TinyJit jit([](const std::vector<Tensor>& in) {
    Tensor s = in[0] + in[1];
    return std::vector<Tensor>{s, s, s.reshape({2, 2}), in[0], in[1] * 3};
  });
  std::vector<std::vector<Tensor>> kept;
  for (int call = 0; call < 5; ++call) {
    const float c = float(call);
    Tensor x(std::vector<float>{c, 1, 2, 3}, {4}), y(std::vector<float>{10, 20, c, 40}, {4});
    kept.push_back(jit({x, y}));
    x.assign(Tensor(std::vector<float>{-1, -1, -1, -1}, {4})).realize();  // the caller writes its input afterwards
  }
  for (int call = 0; call < 5; ++call) {
    const float c = float(call);
    const std::vector<Tensor>& o = kept[static_cast<size_t>(call)];
    ASSERT_EQ(o.size(), 5u);
    const std::vector<float> sum{c + 10, 21, c + 2, 43};
    EXPECT_EQ(o[0].data<float>(), sum) << call;
    EXPECT_EQ(o[1].data<float>(), sum) << call;
    EXPECT_EQ(o[2].shape(), (Shape{2, 2}));
    EXPECT_EQ(o[2].data<float>(), sum) << call;
    EXPECT_EQ(o[3].data<float>(), (std::vector<float>{c, 1, 2, 3})) << call << ": the input as it was at the call";
    EXPECT_EQ(o[4].data<float>(), (std::vector<float>{30, 60, 3 * c, 120})) << call;
  }
}

// Tensors the function closes over are read in place on every call: a new value assigned to one between calls is
// what the next replay sees (a lazy tensor over it too), as an eager call would.
TEST(FrameworkJit, ImplicitInputsAreReadInPlace) {
  Tensor w(std::vector<float>{1, 2, 3, 4}, {4});
  Tensor w2 = w * 2;  // lazy: recomputed from w's buffer
  const TinyJit::Function f = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0] * w + Tensor::full({4}, 0.5f), in[0] - w2};
  };
  TinyJit jit(f);
  for (int call = 0; call < 6; ++call) {
    if (call == 4) w.assign(Tensor(std::vector<float>{10, 20, 30, 40}, {4})).realize();
    const std::vector<float> wv = call < 4 ? std::vector<float>{1, 2, 3, 4} : std::vector<float>{10, 20, 30, 40};
    const std::vector<float> xv{float(call), 1, -1, 0.25f};
    Tensor x(xv, {4});
    const std::vector<Tensor> out = jit({x});
    std::vector<float> want0(4), want1(4);
    for (size_t i = 0; i < 4; ++i) {
      want0[i] = xv[i] * wv[i] + 0.5f;
      want1[i] = xv[i] - 2 * wv[i];
    }
    EXPECT_EQ(out[0].data<float>(), want0) << call;
    EXPECT_EQ(out[1].data<float>(), want1) << call;
    expect_same_bits(out[0], f({x})[0], cat("call ", call));
  }
}

// An input that is a view (a reshape of a realised buffer), and views of the inputs inside the function.
TEST(FrameworkJit, InputViews) {
  TinyJit jit([](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[0].transpose(), in[0].slice(1, 1, 3).sum(1)};
  });
  for (uint32_t call = 0; call < 5; ++call) {
    const std::vector<float> v = values(12, call);
    Tensor flat(v, {12});
    Tensor x = flat.reshape({3, 4});
    const std::vector<Tensor> out = jit({x});
    ASSERT_EQ(out[0].shape(), (Shape{4, 3}));
    std::vector<float> t(12), s(3);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) t[j * 3 + i] = v[i * 4 + j];
    for (int i = 0; i < 3; ++i) s[i] = v[i * 4 + 1] + v[i * 4 + 2];
    EXPECT_EQ(out[0].data<float>(), t) << call;
    EXPECT_EQ(out[1].data<float>(), s) << call;
  }
}

// An assign into an input inside the function: the replay writes a copy of the input, never the caller's buffer,
// and the result is what the function computes from the input's value at the call.
TEST(FrameworkJit, InputsTheFunctionWritesAreCopiedFirst) {
  TinyJit jit([](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    x.assign(x * 2);
    return std::vector<Tensor>{x + 1};
  });
  Tensor x(std::vector<int32_t>{1, 2, 3}, {3});
  for (int call = 0; call < 5; ++call) {
    const std::vector<Tensor> out = jit({x});
    EXPECT_EQ(out[0].data<int32_t>(), (std::vector<int32_t>{3, 5, 7})) << call;
    EXPECT_EQ(x.data<int32_t>(), (std::vector<int32_t>{1, 2, 3})) << call << ": the caller's input";
  }
  EXPECT_EQ(jit.info().written_inputs, 1u);
}

// The caller's lazy tensors over the inputs are not touched by the capture (which realizes the function's tensors
// without running anything): the same expression, held lazily by the caller, still computes its own value.
TEST(FrameworkJit, CallersLazyTensorsAreUntouched) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2, (in[0] * 2).sum()}; });
  Tensor x(std::vector<float>{1, 2, 3}, {3});
  Tensor y = x * 2, s = (x * 2).sum();  // the function's expressions, on the same buffer
  for (int call = 0; call < 4; ++call) {
    const std::vector<Tensor> out = jit({x});
    EXPECT_EQ(out[0].data<float>(), (std::vector<float>{2, 4, 6})) << call;
    EXPECT_EQ(out[1].item(), 12.0) << call;
  }
  EXPECT_EQ(y.data<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_EQ(s.item(), 12.0);
}

// A copy to another device inside the function (the default device -> CPU:1) splits the replay: a graph on each
// side, and the copy between them by the engine.
TEST(FrameworkJit, CopyAcrossDevicesInside) {
  TinyJit jit(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{((in[0] * 2).to("CPU:1") + 1), in[0].sum()}; });
  for (int call = 0; call < 5; ++call) {
    Tensor x(std::vector<float>{float(call), 1, 2}, {3});
    const std::vector<Tensor> out = jit({x});
    EXPECT_EQ(out[0].device(), open_device("CPU:1").name());
    EXPECT_EQ(out[0].data<float>(), (std::vector<float>{2.0f * call + 1, 3, 5})) << call;
    EXPECT_EQ(out[1].item(), call + 3.0) << call;
  }
  const TinyJit::Info info = jit.info();
  EXPECT_EQ(info.copies, 1u);
  EXPECT_EQ(info.host_copies, 1u);
  EXPECT_EQ(info.graphs, 2u);
}

// Destroying the JIT (and dropping its outputs) gives back every byte it took: captured intermediates, copies of
// written inputs, the graphs' queues. Memory the device keeps idle for reuse (the allocator's cache, its staging
// buffers for reads) is given back by free_cache() before each measure; a first JIT's whole life warms the pools
// that stay with the device (side memory for queues), and a second one of the same function must then end where
// it started.
TEST(FrameworkJit, DestroyingFreesWhatItCaptured) {
  Tensor w(values(64, 7), {8, 8});
  Device& dev = open_device(w.device());
  const TinyJit::Function f = [&](const std::vector<Tensor>& in) {
    Tensor h = (in[0].matmul(w) + 1).relu().realize();  // an intermediate the capture keeps
    Tensor x = in[1];
    x.assign(x + h.sum());
    return std::vector<Tensor>{h.sum(1), x * 2};
  };
  Tensor a(values(64, 1), {8, 8}), b(values(8, 2), {8});
  auto in_use = [&] {
    dev.synchronize();
    dev.allocator().free_cache();
    return dev.bytes_in_use() - dev.allocator().cached_bytes();
  };
  auto life = [&](uint64_t* peak) {
    TinyJit jit(f);
    for (int call = 0; call < 4; ++call) {
      const std::vector<Tensor> out = jit({a, b});
      out[1].data<float>();
    }
    *peak = in_use();
  };
  uint64_t peak = 0;
  life(&peak);
  const uint64_t baseline = in_use();
  life(&peak);
  EXPECT_GT(peak, baseline) << "the JIT holds its captured buffers while it lives";
  EXPECT_EQ(in_use(), baseline);
}

}  // namespace
}  // namespace hcq
