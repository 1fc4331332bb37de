// Layers and losses for training, as PyTorch and tinygrad define them. A layer is a plain struct of parameter
// tensors (realized buffers of their own, with requires_grad) and a call operator; parameters() lists them for an
// optimiser and named_parameters() names them for a safetensors file ("weight", "bias", with the caller's
// prefix, as PyTorch's state_dict does).
//
// Initialisation is PyTorch's (and tinygrad's): Linear's weight and bias uniform in +-1/sqrt(in_features), which
// is kaiming_uniform_(a = sqrt(5)); draws come from Tensor's counter-based generator (Tensor::manual_seed).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hcq/tensor.hpp"

namespace hcq::nn {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// A realized buffer of its own holding init's value, marked requires_grad: what every layer's parameters are.
Tensor parameter(const Tensor& init);

class Linear {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true, const std::string& device = {});
  // x: (..., in_features) -> (..., out_features): x @ weight^T + bias.
  Tensor operator()(const Tensor& x) const;
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters(const std::string& prefix = {}) const;

  Tensor weight;  // (out_features, in_features)
  Tensor bias;    // (out_features), or empty
};

// Cross entropy of logits (N, C) (or (C)) against class indices (N) of an integer dtype, or against class
// probabilities of the logits' shape; the mean over the batch. Indices outside [0, C) contribute 0 (they are not
// checked: that would read the labels back to the host).
Tensor cross_entropy(const Tensor& logits, const Tensor& target);
// Mean of (prediction - target)^2.
Tensor mse_loss(const Tensor& prediction, const Tensor& target);
// Binary cross entropy of probabilities p against targets t in [0, 1], the mean; each log is clamped at -100 as
// PyTorch's is, so p = 0 or 1 gives a large finite loss, not inf.
Tensor binary_cross_entropy(const Tensor& p, const Tensor& t);

}  // namespace hcq::nn
