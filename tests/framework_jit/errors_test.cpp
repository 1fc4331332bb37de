// TinyJit's footguns, each a JitError whose whole message is checked: it must say what went wrong and what to do.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "framework_jit/jit_test_util.hpp"
#include "hcq/jit.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using jittest::jit_error;

std::vector<Tensor> twice(const std::vector<Tensor>& in) { return {in[0] * 2}; }

TEST(FrameworkJitErrors, ReadingDataWhileCaptured) {
  TinyJit jit([](const std::vector<Tensor>& in) {
    const double s = in[0].sum().item();  // fine eagerly (call 0), not in a capture
    return std::vector<Tensor>{in[0] * s};
  });
  Tensor x(std::vector<float>{1, 2}, {2});
  EXPECT_EQ(jit({x})[0].data<float>(), (std::vector<float>{3, 6}));
  EXPECT_EQ(jit_error([&] { jit({x}); }),
            "TinyJit: the jitted function reads tensor data (data(), tolist(), item()) while it is captured (call 1): "
            "the replay runs only the captured kernels, so the value would be read once and baked in. Return the "
            "tensor from the function and read it after the call (or keep the read outside the jitted function)");
  // The capture failed as a whole: the next call tries again (and fails the same way), nothing half-built is kept.
  EXPECT_EQ(jit.info().calls, 1u);
  EXPECT_EQ(jit.info().graphs, 0u);
}

TEST(FrameworkJitErrors, InputNotRealised) {
  TinyJit jit(twice);
  Tensor x(std::vector<float>{1, 2, 3, 4}, {4});
  EXPECT_EQ(jit_error([&] { jit({x + 1}); }),
            "TinyJit: input 0 ((4,) float32 on " + x.device() +
                ") is not realised: the replay binds inputs by their buffers. "
                "Call realize() on it before the call (for a view, contiguous().realize()), or compute it inside the "
                "jitted function");
  // A view other than a reshape is not a buffer either.
  EXPECT_EQ(jit_error([&] { jit({x.slice(0, 1, 3)}); }),
            "TinyJit: input 0 ((2,) float32 on " + x.device() +
                ") is not realised: the replay binds inputs by their buffers. "
                "Call realize() on it before the call (for a view, contiguous().realize()), or compute it inside the "
                "jitted function");
  EXPECT_EQ(jit_error([&] { jit({Tensor()}); }),
            "TinyJit: input 0 is an empty (default-constructed) Tensor: pass a realised tensor");
  EXPECT_EQ(jit({(x + 1).realize()})[0].data<float>(), (std::vector<float>{4, 6, 8, 10}));
}

TEST(FrameworkJitErrors, InputPassedTwice) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1].reshape({4})}; });
  Tensor x(std::vector<float>{1, 2, 3, 4}, {4});
  const std::string want =
      "TinyJit: inputs 0 and 1 are the same buffer: the replay binds each input to a buffer of its own. Pass it "
      "once and use it twice inside the function (or pass a copy: contiguous().realize())";
  EXPECT_EQ(jit_error([&] { jit({x, x}); }), want);
  EXPECT_EQ(jit_error([&] { jit({x, x.reshape({2, 2})}); }), want) << "two views of one buffer";
}

// A tensor the function closes over, passed as an input too: the replay binds inputs by memory, so a later call's
// input would be read where the function reads the closed-over tensor. Refused at the capture.
TEST(FrameworkJitErrors, InputAlsoClosedOver) {
  Tensor w(std::vector<float>{1, 2, 3, 4}, {2, 2});
  TinyJit jit([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + w.reshape({4})}; });
  EXPECT_EQ(jit({w.reshape({4})})[0].data<float>(), (std::vector<float>{2, 4, 6, 8}));  // call 0 runs eagerly
  EXPECT_EQ(jit_error([&] { jit({w.reshape({4})}); }),
            "TinyJit: input 0 ((4,) float32 on " + w.device() +
                ") is also a tensor the jitted function closes over (the same buffer): the replay binds inputs by "
                "memory, so later calls would read their own input 0 where the function reads the closed-over "
                "tensor. Pass it only as an input (use the function's argument), or only close over it");
  // Another tensor as the input is fine: the closed-over one stays fixed.
  Tensor x(std::vector<float>{10, 20, 30, 40}, {4});
  TinyJit ok([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + w.reshape({4})}; });
  for (int k = 0; k < 3; ++k) EXPECT_EQ(ok({x})[0].data<float>(), (std::vector<float>{11, 22, 33, 44}));
}

TEST(FrameworkJitErrors, ChangedSignatureNamesWhatChanged) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; });
  Tensor a(std::vector<float>{1, 2, 3, 4}, {4}), b(std::vector<float>{1, 1, 1, 1}, {4});
  jit({a, b});
  const std::string instead =
      ": the replay's kernels were made for the first call's inputs. Call it as it was first called, or use another "
      "TinyJit for these inputs";
  Tensor five(std::vector<float>{1, 2, 3, 4, 5}, {5});
  Tensor ints(std::vector<int32_t>{1, 2, 3, 4}, {4});
  Tensor other(std::vector<float>{1, 2, 3, 4}, {4}, "CPU:1");  // the default device is CPU:0 or a GPU
  Tensor square(std::vector<float>{1, 2, 3, 4}, {2, 2});
  for (int stage = 0; stage < 2; ++stage) {  // before the capture (call 1), then at a replay
    EXPECT_EQ(jit_error([&] { jit({a, five}); }),
              "TinyJit: input 1's shape changed: (5,), first called with (4,)" + instead);
    EXPECT_EQ(jit_error([&] { jit({a, square}); }),
              "TinyJit: input 1's shape changed: (2, 2), first called with (4,)" + instead);
    EXPECT_EQ(jit_error([&] { jit({ints, b}); }),
              "TinyJit: input 0's dtype changed: int32, first called with float32" + instead);
    EXPECT_EQ(jit_error([&] { jit({other, b}); }),
              "TinyJit: input 0's device changed: CPU:1, first called with " + a.device() + instead);
    EXPECT_EQ(jit_error([&] { jit({a}); }), "TinyJit: called with 1 inputs, first called with 2" + instead);
    EXPECT_EQ(jit({a, b})[0].data<float>(), (std::vector<float>{2, 3, 4, 5}));
  }
  EXPECT_EQ(jit.info().calls, 3u);
}

TEST(FrameworkJitErrors, EmptyTensorReturned) {
  TinyJit jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1, Tensor()}; });
  Tensor x(std::vector<float>{1}, {1});
  EXPECT_EQ(jit_error([&] { jit({x}); }),
            "TinyJit: output 1 of the jitted function is an empty (default-constructed) Tensor: a replay can return "
            "only tensors the function computed. Return a tensor there, or return fewer outputs and keep other "
            "values outside the function");
  EXPECT_EQ(jit.info().calls, 0u);
}

TEST(FrameworkJitErrors, NestedJit) {
  TinyJit inner(twice);
  TinyJit outer([&](const std::vector<Tensor>& in) { return inner({in[0]}); });
  Tensor x(std::vector<float>{1}, {1});
  EXPECT_EQ(jit_error([&] { outer({x}); }),
            "TinyJit: called from inside another TinyJit's function: nested JITs are not supported. Call the inner "
            "function directly (the outer JIT captures its kernels), or jit the two separately and call them one "
            "after the other");
  // Neither is left marked as running: both work on their own afterwards.
  EXPECT_EQ(inner({x})[0].data<float>(), (std::vector<float>{2}));
  TinyJit again(twice);
  EXPECT_EQ(again({x})[0].data<float>(), (std::vector<float>{2}));
}

}  // namespace
}  // namespace hcq
