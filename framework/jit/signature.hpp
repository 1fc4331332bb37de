// The inputs of a jitted call: each must be a realised buffer (or a reshape of one), passed once; and every call
// after the first must match the first call's signature (count, then per input shape, dtype and device), since the
// replay's kernels were generated for it. Violations are JitErrors that name the input and what to do instead.
#pragma once

#include <string>
#include <vector>

#include "framework/ir/node.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {

struct InputSignature {
  struct Input {
    Shape shape;
    DType dtype;
    std::string device;
    Node var;  // a bound Variable's DEFINE_VAR (hcq::Variable::bind): its value changes per call; else null
  };
  std::vector<Input> inputs;

  static InputSignature of(const std::vector<Tensor>& tensors);
  // Throws JitError naming the first input whose shape, dtype or device differs (or the count).
  void check(const std::vector<Tensor>& tensors) const;
};

// Each input's BUFFER node, or for a bound Variable its BIND node. Throws JitError for an empty tensor, one that is
// not realised, or a buffer or a Variable passed twice.
std::vector<Node> input_buffers(const std::vector<Tensor>& inputs);

}  // namespace hcq::fw
