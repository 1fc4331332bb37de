// The losses of include/hcq/nn.hpp, from Tensor ops (so their gradients come from the ops' rules).
#include "hcq/error.hpp"
#include "hcq/nn.hpp"

namespace hcq::nn {

namespace {
std::string dims(const Tensor& t) {
  std::string s = "(";
  for (size_t k = 0; k < t.ndim(); ++k) s += cat(k ? ", " : "", t.shape()[k]);
  return s + (t.ndim() == 1 ? ",)" : ")");
}
}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target) {
  if (logits.ndim() != 1 && logits.ndim() != 2)
    throw ShapeError(cat("cross_entropy: the logits must be (N, C) or (C), got ", dims(logits)));
  const Tensor log_p = logits.log_softmax(-1);
  const int64_t classes = logits.shape(-1);
  Tensor picked;
  if (!is_float(target.dtype()) && target.dtype() != DType::bool_) {
    if (target.ndim() + 1 != logits.ndim() || (target.ndim() == 1 && target.shape(0) != logits.shape(0)))
      throw ShapeError(
          cat("cross_entropy: ", dims(target), " class indices for logits ", dims(logits), " (one index per row)"));
    const Tensor one_hot = target.unsqueeze(-1).eq(Tensor::arange(0, classes, 1, target.dtype(), target.device()));
    picked = log_p.mul(one_hot.cast(log_p.dtype())).sum(-1);
  } else {
    if (target.shape() != logits.shape())
      throw ShapeError(cat("cross_entropy: class probabilities ", dims(target), " for logits ", dims(logits),
                           " (the same shape, or integer class indices)"));
    picked = log_p.mul(target).sum(-1);
  }
  return picked.mean().neg();
}

Tensor mse_loss(const Tensor& prediction, const Tensor& target) {
  const Tensor d = prediction - target;
  return (d * d).mean();
}

Tensor binary_cross_entropy(const Tensor& p, const Tensor& t) {
  const Tensor log_p = p.log().maximum(-100.0), log_q = (1.0 - p).log().maximum(-100.0);
  return (t * log_p + (1.0 - t) * log_q).mean().neg();
}

}  // namespace hcq::nn
