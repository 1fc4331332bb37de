// Embedding and dropout.
#include "hcq/error.hpp"
#include "hcq/nn.hpp"

namespace hcq::nn {

Embedding::Embedding(int64_t count, int64_t dim, const std::string& device) {
  if (count < 1 || dim < 1) throw InvalidArgument(cat("Embedding: sizes must be positive, got ", count, " x ", dim));
  weight = parameter(Tensor::randn({count, dim}, DType::float32, device));
}

// A one-hot row per index times the table: a gather that the gradient rules differentiate (scatter-adds into the
// rows that were used), at the cost of count multiplies per output element.
Tensor Embedding::operator()(const Tensor& indices) const {
  if (is_float(indices.dtype()) || indices.dtype() == DType::bool_)
    throw DTypeError(cat("Embedding: the indices must be integers, they are ", dtype_name(indices.dtype())));
  const int64_t count = weight.shape(0);
  const Tensor one_hot =
      indices.unsqueeze(-1).eq(Tensor::arange(0, count, 1, indices.dtype(), indices.device())).cast(weight.dtype());
  return one_hot.matmul(weight);
}

NamedTensors Embedding::named_parameters(const std::string& prefix) const { return {{prefix + "weight", weight}}; }

Tensor dropout(const Tensor& x, double p, bool training) {
  if (!(p >= 0 && p < 1)) throw InvalidArgument(cat("dropout: p must be in [0, 1), got ", p));
  if (!training || p == 0) return x;
  const Tensor keep = Tensor::rand(x.shape(), DType::float32, x.device()).ge(p);
  return keep.where(x / (1 - p), 0.0);
}

}  // namespace hcq::nn
