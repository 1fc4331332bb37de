// What the renderer's tests (register tiles, bf16 tiles, the search) render: a CPU device's facts, and a
// matmul-shaped kernel as the lowering builds one: out[i, j] = sum over k of a[i, k] * b[k, j] (b[j, k] when `b_transposed`, a[k, i] when `a_transposed`).
// float32 operands are loaded as they are; bfloat16 ones are widened to float32 for the product and the sum is
// rounded back to bfloat16 at the store, as Tensor::matmul writes a half-type product.
#pragma once

#include <cstdint>

#include "framework/codegen/target.hpp"
#include "framework/ir/node.hpp"
#include "hcq/cpu_features.hpp"

namespace hcq::fw {

// A CPU device's facts with AVX-512 (16-float vectors, 32 registers) and the given bf16 matmul path.
inline TargetFacts avx512_cpu_facts(unsigned workers, bool optimize = true,
                                    Bf16MatmulPath bf16 = Bf16MatmulPath::scalar) {
  DeviceInfo info;
  info.name = "hand-made";
  info.interface = "cpu";
  info.arch = "x86_64";
  CpuIsa isa;
  for (CpuFeature f : {CpuFeature::avx2, CpuFeature::fma, CpuFeature::avx512f}) isa.features.add(f);
  isa.bf16_matmul = bf16;
  info.cpu_isa = isa;
  return target_facts(info, workers, optimize);
}

inline Node matmul_kernel(int64_t M, int64_t K, int64_t N, bool b_transposed = false, bool a_transposed = false,
                          DType operands = DType::float32) {
  const Node out = make_node(Op::PARAM, operands, {}, {0, M * N});
  const Node a = make_node(Op::PARAM, operands, {}, {1, M * K});
  const Node b = make_node(Op::PARAM, operands, {}, {2, K * N});
  const Node i = make_node(Op::RANGE, kIndex, {}, {0, M, 0});
  const Node j = make_node(Op::RANGE, kIndex, {}, {1, N, 0});
  const Node k = make_node(Op::RANGE, kIndex, {}, {2, K, 1});
  auto mul = [](const Node& x, int64_t c) { return make_node(Op::MUL, kIndex, {x, const_node(kIndex, c)}); };
  auto add = [](const Node& x, const Node& y) { return make_node(Op::ADD, kIndex, {x, y}); };
  auto load = [&](const Node& p, const Node& idx) {
    const Node v = make_node(Op::LOAD, operands, {p, idx});
    return operands == DType::float32 ? v : make_node(Op::CAST, DType::float32, {v});
  };
  const Node a_idx = a_transposed ? add(mul(k, M), i) : add(mul(i, K), k);
  const Node b_idx = b_transposed ? add(mul(j, K), k) : add(mul(k, N), j);
  const Node product = make_node(Op::MUL, DType::float32, {load(a, a_idx), load(b, b_idx)});
  const Node sum = make_node(Op::REDUCE, DType::float32, {product, k}, {static_cast<int64_t>(Op::ADD)});
  const Node value = operands == DType::float32 ? sum : make_node(Op::CAST, operands, {sum});
  return make_node(Op::KERNEL, operands, {make_node(Op::STORE, operands, {out, add(mul(i, N), j), value})});
}

}  // namespace hcq::fw
