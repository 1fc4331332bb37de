// Which CPU kernels are split over the device's workers (render_c.cpp, kSplitWork): from 2^20 innermost iterations,
// where a square root, division, exponential, logarithm or sine inside the loops counts as 8 more per iteration.
// Adam's update of a 128 x 784 weight (a square root and a division per element) is split; the plain updates of
// the same size are not (rendered directly, asserted exactly).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework_sched/render_inputs.hpp"

namespace hcq::fw {
namespace {

// out[i, j] = op(a[i, j], b[i, j]) over rows x cols, op built from the two loads.
template <class Op2>
Node elementwise_kernel(int64_t rows, int64_t cols, Op2 op) {
  const Node out = make_node(Op::PARAM, DType::float32, {}, {0, rows * cols});
  const Node a = make_node(Op::PARAM, DType::float32, {}, {1, rows * cols});
  const Node b = make_node(Op::PARAM, DType::float32, {}, {2, rows * cols});
  const Node i = make_node(Op::RANGE, kIndex, {}, {0, rows, 0});
  const Node j = make_node(Op::RANGE, kIndex, {}, {1, cols, 0});
  const Node idx = make_node(Op::ADD, kIndex, {make_node(Op::MUL, kIndex, {i, const_node(kIndex, cols)}), j});
  const Node value = op(make_node(Op::LOAD, DType::float32, {a, idx}), make_node(Op::LOAD, DType::float32, {b, idx}));
  return make_node(Op::KERNEL, DType::float32, {make_node(Op::STORE, DType::float32, {out, idx, value})});
}

Node plus(const Node& x, const Node& y) { return make_node(Op::ADD, DType::float32, {x, y}); }
// Adam's step's shape: x / (sqrt(y) + eps).
Node over_root(const Node& x, const Node& y) {
  const Node root = make_node(Op::SQRT, DType::float32, {y});
  return make_node(Op::FDIV, DType::float32, {x, plus(root, const_node(DType::float32, 1e-8))});
}

TEST(FrameworkWorkerSplit, SlowOperationsCountTowardsTheSplit) {
  const RenderedKernel plain = render_c(elementwise_kernel(128, 784, plus), avx512_cpu_facts(2));
  EXPECT_EQ(plain.global[0], 1u);
  EXPECT_EQ(plain.opts, "");
  const RenderedKernel adam = render_c(elementwise_kernel(128, 784, over_root), avx512_cpu_facts(2));
  EXPECT_EQ(adam.global[0], 2u);
  EXPECT_EQ(adam.opts, "THREAD(0,2)");
  // One worker: nothing to split over.
  EXPECT_EQ(render_c(elementwise_kernel(128, 784, over_root), avx512_cpu_facts(1)).global[0], 1u);
  // A plain kernel of 2^20 elements is split, one just below it is not.
  EXPECT_EQ(render_c(elementwise_kernel(1024, 1024, plus), avx512_cpu_facts(2)).global[0], 2u);
  EXPECT_EQ(render_c(elementwise_kernel(1023, 1024, plus), avx512_cpu_facts(2)).global[0], 1u);
  // A slow operation outside the loops (on a value the kernel reads once) does not count.
  const RenderedKernel hoisted = render_c(
      elementwise_kernel(128, 784,
                         [](const Node& x, const Node&) {
                           return plus(x, make_node(Op::SQRT, DType::float32, {const_node(DType::float32, 2.0)}));
                         }),
      avx512_cpu_facts(2));
  EXPECT_EQ(hoisted.global[0], 1u);
}

}  // namespace
}  // namespace hcq::fw
