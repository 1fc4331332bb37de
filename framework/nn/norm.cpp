// BatchNorm2d and LayerNorm.
#include "hcq/error.hpp"
#include "hcq/nn.hpp"

namespace hcq::nn {

namespace {
// A buffer of its own holding v (not a parameter: no gradient).
Tensor state_buffer(const Shape& shape, double v, const std::string& device) {
  Tensor t = Tensor::empty(shape, DType::float32, device);
  t.assign(Tensor::full(shape, v, DType::float32, device)).realize();
  return t;
}
}  // namespace

BatchNorm2d::BatchNorm2d(int64_t channels, double eps_, double momentum_, const std::string& device)
    : eps(eps_), momentum(momentum_) {
  if (channels < 1) throw InvalidArgument(cat("BatchNorm2d: the channel count must be positive, got ", channels));
  weight = parameter(Tensor::ones({channels}, DType::float32, device));
  bias = parameter(Tensor::zeros({channels}, DType::float32, device));
  running_mean = state_buffer({channels}, 0, device);
  running_var = state_buffer({channels}, 1, device);
}

Tensor BatchNorm2d::operator()(const Tensor& x) {
  const int64_t c = weight.shape(0);
  if (x.ndim() != 4 || x.shape(1) != c)
    throw ShapeError(cat("BatchNorm2d: the input must be (N, ", c, ", H, W), it has ", x.ndim(), " dimensions",
                         x.ndim() >= 2 ? cat(" and ", x.shape(1), " channels") : std::string()));
  const Shape per_channel{1, c, 1, 1};
  Tensor mean, var;
  if (training) {
    mean = x.mean({0, 2, 3});
    const Tensor centred = x - mean.reshape(per_channel);
    var = (centred * centred).mean({0, 2, 3});  // biased: what normalises
    const double n = static_cast<double>(x.numel() / c);
    {
      NoGrad no_grad;  // the running statistics are state, not part of the loss
      running_mean.assign(running_mean * (1 - momentum) + mean * momentum);
      running_var.assign(running_var * (1 - momentum) + var * (momentum * n / std::max(n - 1, 1.0)));
    }
  } else {
    mean = running_mean;
    var = running_var;
  }
  const Tensor scale = weight * (var + eps).rsqrt();
  return (x - mean.reshape(per_channel)) * scale.reshape(per_channel) + bias.reshape(per_channel);
}

NamedTensors BatchNorm2d::named_parameters(const std::string& prefix) const {
  return {{prefix + "weight", weight},
          {prefix + "bias", bias},
          {prefix + "running_mean", running_mean},
          {prefix + "running_var", running_var}};
}

LayerNorm::LayerNorm(Shape shape, double eps_, const std::string& device) : normalized_shape(shape), eps(eps_) {
  if (shape.empty()) throw InvalidArgument("LayerNorm: the normalised shape needs at least one dimension");
  weight = parameter(Tensor::ones(shape, DType::float32, device));
  bias = parameter(Tensor::zeros(shape, DType::float32, device));
}

Tensor LayerNorm::operator()(const Tensor& x) const {
  const size_t k = normalized_shape.size();
  if (x.ndim() < k || !std::equal(normalized_shape.begin(), normalized_shape.end(), x.shape().end() - k))
    throw ShapeError(cat("LayerNorm: the input's last ", k, " dimensions must be the normalised shape"));
  std::vector<int> axes;
  for (size_t a = x.ndim() - k; a < x.ndim(); ++a) axes.push_back(static_cast<int>(a));
  const Tensor centred = x - x.mean(axes, true);
  const Tensor var = (centred * centred).mean(axes, true);
  return centred * (var + eps).rsqrt() * weight + bias;
}

NamedTensors LayerNorm::named_parameters(const std::string& prefix) const {
  return {{prefix + "weight", weight}, {prefix + "bias", bias}};
}

}  // namespace hcq::nn
