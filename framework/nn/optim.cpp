// The optimisers' updates (include/hcq/optim.hpp), written as PyTorch documents them for torch.optim.SGD, Adam and
// AdamW; each is a lazy expression per parameter, and step() realizes all of them at once.
#include "hcq/optim.hpp"

#include "hcq/error.hpp"

namespace hcq::optim {

namespace {
// A buffer of its own holding v, for optimiser state.
Tensor filled_buffer(const Shape& shape, double v, DType dtype, const std::string& device) {
  Tensor t = Tensor::empty(shape, dtype, device);
  t.assign(Tensor::full(shape, v, dtype, device)).realize();
  return t;
}
}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, double lr, const char* name)
    : params_(std::move(params)), lr_value_(lr) {
  if (params_.empty()) throw InvalidArgument(cat(name, ": no parameters to optimise"));
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor& p = params_[k];
    if (!p.defined() || !p.requires_grad())
      throw InvalidArgument(cat(name, ": parameter ", k, " does not require a gradient (call requires_grad_())"));
    if (p.device() != params_[0].device())
      throw InvalidArgument(cat(name, ": parameter ", k, " is on ", p.device(), ", parameter 0 on ",
                                params_[0].device(), " (one optimiser per device)"));
  }
  lr_ = filled_buffer({}, lr, DType::float32, params_[0].device());
}

void Optimizer::set_lr(double lr) {
  lr_value_ = lr;
  // From host memory, not a constant: a constant would be compiled into the assign's kernel, one kernel per rate.
  lr_.assign(Tensor(std::vector<float>{static_cast<float>(lr)}, {}, lr_.device())).realize();
}

Tensor Optimizer::zeros_like(size_t k) const {
  const Tensor& p = params_[k];
  return filled_buffer(p.shape(), 0, p.dtype(), p.device());
}

void Optimizer::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

std::vector<Tensor> Optimizer::schedule_step(const std::vector<Tensor>& with) {
  NoGrad no_grad;
  begin_step();
  std::vector<Tensor> out = with;
  for (size_t k = 0; k < params_.size(); ++k) {
    const Tensor g = params_[k].grad();
    if (!g.defined()) continue;
    params_[k].assign(update(k, g.cast(params_[k].dtype())));
    out.push_back(params_[k]);
  }
  for (Tensor& s : state()) out.push_back(s);
  return out;
}

void Optimizer::step(const std::vector<Tensor>& with) { Tensor::realize(schedule_step(with)); }

SGD::SGD(std::vector<Tensor> params, double lr, double momentum, double weight_decay, bool nesterov)
    : Optimizer(std::move(params), lr, "SGD"), momentum_(momentum), weight_decay_(weight_decay), nesterov_(nesterov) {
  if (nesterov && momentum == 0) throw InvalidArgument("SGD: Nesterov momentum needs a momentum other than 0");
  if (momentum != 0)
    for (size_t k = 0; k < params_.size(); ++k) velocity_.push_back(zeros_like(k));
}

// torch.optim.SGD: g += wd * p; b = momentum * b + g (b = g at the first step, which a zero b also gives with
// dampening 0); g = nesterov ? g + momentum * b : b; p -= lr * g.
Tensor SGD::update(size_t k, const Tensor& grad) {
  const Tensor& p = params_[k];
  Tensor g = weight_decay_ != 0 ? grad + p * weight_decay_ : grad;
  if (momentum_ != 0) {
    Tensor& b = velocity_[k];
    b.assign(b * momentum_ + g);
    g = nesterov_ ? g + b * momentum_ : b;
  }
  return p - g * lr_;
}

Adam::Adam(std::vector<Tensor> params, double lr, double beta1, double beta2, double eps, double weight_decay)
    : Adam(std::move(params), lr, beta1, beta2, eps, weight_decay, false, "Adam") {}

Adam::Adam(std::vector<Tensor> params, double lr, double beta1, double beta2, double eps, double weight_decay,
           bool decoupled, const char* name)
    : Optimizer(std::move(params), lr, name),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay),
      decoupled_(decoupled) {
  for (size_t k = 0; k < params_.size(); ++k) {
    m_.push_back(zeros_like(k));
    v_.push_back(zeros_like(k));
  }
  const std::string& dev = params_[0].device();
  beta1_t_ = filled_buffer({}, 1, DType::float32, dev);
  beta2_t_ = filled_buffer({}, 1, DType::float32, dev);
}

void Adam::begin_step() {
  beta1_t_.assign(beta1_t_ * beta1_);
  beta2_t_.assign(beta2_t_ * beta2_);
}

// torch.optim.Adam / AdamW: (AdamW: p *= 1 - lr * wd; Adam: g += wd * p); m = b1 m + (1 - b1) g;
// v = b2 v + (1 - b2) g^2; p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), computed as PyTorch's
// implementation does: the scalars step_size = lr / (1 - b1^t) and 1 / sqrt(1 - b2^t) once per kernel (outside its
// loop), so an element costs one division and one square root, not three divisions and a root.
Tensor Adam::update(size_t k, const Tensor& grad) {
  Tensor p = params_[k];
  Tensor g = grad;
  if (weight_decay_ != 0) {
    if (decoupled_) p = p * (1.0 - lr_ * weight_decay_);
    else g = g + p * weight_decay_;
  }
  m_[k].assign(m_[k] * beta1_ + g * (1 - beta1_));
  v_[k].assign(v_[k] * beta2_ + g * g * (1 - beta2_));
  const Tensor step_size = lr_ / (1.0 - beta1_t_), inv_bc2_sqrt = (1.0 - beta2_t_).sqrt().reciprocal();
  return p - m_[k] * step_size / (v_[k].sqrt() * inv_bc2_sqrt + eps_);
}

std::vector<Tensor> Adam::state() {
  std::vector<Tensor> s = m_;
  s.insert(s.end(), v_.begin(), v_.end());
  s.push_back(beta1_t_);
  s.push_back(beta2_t_);
  return s;
}

AdamW::AdamW(std::vector<Tensor> params, double lr, double beta1, double beta2, double eps, double weight_decay)
    : Adam(std::move(params), lr, beta1, beta2, eps, weight_decay, true, "AdamW") {}

}  // namespace hcq::optim
