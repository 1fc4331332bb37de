// nn::Linear and nn::parameter.
#include <cmath>

#include "hcq/error.hpp"
#include "hcq/nn.hpp"

namespace hcq::nn {

Tensor parameter(const Tensor& init) {
  Tensor p = Tensor::empty(init.shape(), init.dtype(), init.device());
  p.assign(init.detach()).realize();
  return p.requires_grad_();
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias_too, const std::string& device) {
  if (in_features <= 0 || out_features <= 0)
    throw InvalidArgument(cat("Linear: the sizes must be positive, got ", in_features, " -> ", out_features));
  const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
  weight = parameter(Tensor::uniform({out_features, in_features}, -bound, bound, DType::float32, device));
  if (bias_too) bias = parameter(Tensor::uniform({out_features}, -bound, bound, DType::float32, device));
}

Tensor Linear::operator()(const Tensor& x) const {
  if (x.ndim() == 0 || x.shape(-1) != weight.shape(1))
    throw ShapeError(cat("Linear: the input's last dimension must be ", weight.shape(1),
                         " (in_features), the input is ",
                         x.ndim() == 0 ? std::string("a scalar") : cat(x.shape(-1), " wide")));
  Tensor y = x.matmul(weight.transpose(0, 1));
  return bias.defined() ? y + bias : y;
}

std::vector<Tensor> Linear::parameters() const {
  return bias.defined() ? std::vector<Tensor>{weight, bias} : std::vector<Tensor>{weight};
}

NamedTensors Linear::named_parameters(const std::string& prefix) const {
  NamedTensors out{{prefix + "weight", weight}};
  if (bias.defined()) out.emplace_back(prefix + "bias", bias);
  return out;
}

}  // namespace hcq::nn
