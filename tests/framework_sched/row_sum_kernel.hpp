// A kernel AST the GPU reduce tests render and run directly: out[o] = sum over r of in[o * len + r], for `outs`
// outputs of `len` elements each (buffer 0 the output, buffer 1 the input).
#pragma once

#include <cstdint>

#include "framework/ir/node.hpp"

namespace hcq::fw {

inline Node row_sum_kernel(int64_t outs, int64_t len) {
  const Node out = make_node(Op::PARAM, DType::float32, {}, {0, outs});
  const Node in = make_node(Op::PARAM, DType::float32, {}, {1, outs * len});
  const Node o = make_node(Op::RANGE, kIndex, {}, {0, outs, 0});
  const Node r = make_node(Op::RANGE, kIndex, {}, {1, len, 1});
  const Node idx = make_node(Op::ADD, kIndex, {make_node(Op::MUL, kIndex, {o, const_node(kIndex, len)}), r});
  const Node sum = make_node(Op::REDUCE, DType::float32, {make_node(Op::LOAD, DType::float32, {in, idx}), r},
                             {static_cast<int64_t>(Op::ADD)});
  return make_node(Op::KERNEL, DType::float32, {make_node(Op::STORE, DType::float32, {out, o, sum})});
}

}  // namespace hcq::fw
