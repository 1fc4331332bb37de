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

// The sliding windows of x's last two axes: (..., H, W) -> (..., OH, OW, KH, KW), where
// out[..., oy, ox, ky, kx] = x[..., oy * stride_h + ky * dilation_h, ox * stride_w + kx * dilation_w] and
// OH = (H - dilation_h * (KH - 1) - 1) / stride_h + 1. Movement ops only (no copy): what conv2d and the pools
// reduce over, and what their gradients flow back through.
Tensor sliding_windows(const Tensor& x, std::pair<int64_t, int64_t> kernel, std::pair<int64_t, int64_t> stride = {1, 1},
                       std::pair<int64_t, int64_t> dilation = {1, 1});

// 2-d convolution, as torch.nn.functional.conv2d: x (N, Cin, H, W), weight (Cout, Cin / groups, KH, KW), bias
// (Cout) or empty; zero padding of `padding` on each side of H and W.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = {},
              std::pair<int64_t, int64_t> stride = {1, 1}, std::pair<int64_t, int64_t> padding = {0, 0},
              std::pair<int64_t, int64_t> dilation = {1, 1}, int64_t groups = 1);
// Max and average pooling over windows of x's last two axes (stride defaults to the kernel, as in PyTorch); max
// pads with -inf, average with zeros counted in the divisor (PyTorch's count_include_pad).
Tensor max_pool2d(const Tensor& x, std::pair<int64_t, int64_t> kernel, std::pair<int64_t, int64_t> stride = {0, 0},
                  std::pair<int64_t, int64_t> padding = {0, 0});
Tensor avg_pool2d(const Tensor& x, std::pair<int64_t, int64_t> kernel, std::pair<int64_t, int64_t> stride = {0, 0},
                  std::pair<int64_t, int64_t> padding = {0, 0});

class Conv2d {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, std::pair<int64_t, int64_t> kernel,
         std::pair<int64_t, int64_t> stride = {1, 1}, std::pair<int64_t, int64_t> padding = {0, 0},
         std::pair<int64_t, int64_t> dilation = {1, 1}, int64_t groups = 1, bool bias = true,
         const std::string& device = {});
  Tensor operator()(const Tensor& x) const;
  std::vector<Tensor> parameters() const;
  NamedTensors named_parameters(const std::string& prefix = {}) const;

  Tensor weight, bias;
  std::pair<int64_t, int64_t> stride, padding, dilation;
  int64_t groups;
};

// Batch normalisation over (N, H, W) of (N, C, H, W), as torch.nn.BatchNorm2d: in training the batch's statistics
// normalise (biased variance) and the running ones move by `momentum` (unbiased variance); in evaluation the
// running ones normalise. The running statistics are assigned lazily: realize buffers() with the optimiser's step
// (Optimizer::step(with)) so they are stored every step.
class BatchNorm2d {
 public:
  explicit BatchNorm2d(int64_t channels, double eps = 1e-5, double momentum = 0.1, const std::string& device = {});
  Tensor operator()(const Tensor& x);
  std::vector<Tensor> parameters() const { return {weight, bias}; }
  std::vector<Tensor> buffers() const { return {running_mean, running_var}; }
  NamedTensors named_parameters(const std::string& prefix = {}) const;  // weight, bias, running_mean, running_var

  Tensor weight, bias, running_mean, running_var;
  double eps, momentum;
  bool training = true;
};

// Normalisation over the last `dims` axes, as torch.nn.LayerNorm over a shape of that many dimensions.
class LayerNorm {
 public:
  explicit LayerNorm(Shape normalized_shape, double eps = 1e-5, const std::string& device = {});
  Tensor operator()(const Tensor& x) const;
  std::vector<Tensor> parameters() const { return {weight, bias}; }
  NamedTensors named_parameters(const std::string& prefix = {}) const;

  Tensor weight, bias;
  Shape normalized_shape;
  double eps;
};

// A table of `count` vectors of `dim` floats, initialised N(0, 1) as PyTorch's; indices of an integer dtype.
class Embedding {
 public:
  Embedding(int64_t count, int64_t dim, const std::string& device = {});
  Tensor operator()(const Tensor& indices) const;  // (...) -> (..., dim)
  std::vector<Tensor> parameters() const { return {weight}; }
  NamedTensors named_parameters(const std::string& prefix = {}) const;

  Tensor weight;
};

// Zeroes each element with probability p and scales the rest by 1 / (1 - p) in training; the identity otherwise.
Tensor dropout(const Tensor& x, double p, bool training = true);

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
