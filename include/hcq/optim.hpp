// Optimisers: SGD (momentum, Nesterov, weight decay), Adam and AdamW, as PyTorch defines their updates. A step is
// one realize of every parameter's update and every piece of optimiser state, so it is a handful of fused kernels
// whatever the model, and under TinyJit it replays with the rest of the training step.
//
//   hcq::optim::Adam opt(model.parameters(), 1e-3);
//   opt.zero_grad(); loss.backward(); opt.step();
//
// The learning rate and Adam's step count live in device buffers, not in the kernels: changing the rate
// (set_lr) neither recompiles nor invalidates a captured TinyJit. Parameters without a gradient (not reached by
// the last backward) are left as they are, as PyTorch does.
#pragma once

#include <vector>

#include "hcq/tensor.hpp"

namespace hcq::optim {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Applies one update to every parameter that has a gradient, in one realize. Tensors in `with` (the loss,
  // metrics) are realized in the same realize, so they see the parameters from before the update; realized
  // afterwards they would be computed from the updated ones.
  void step(const std::vector<Tensor>& with = {});
  // What step() realizes, built but not realized (the parameters and state hold pending assigns until realized):
  // for realizing with more, or timing the schedule alone.
  std::vector<Tensor> schedule_step(const std::vector<Tensor>& with = {});
  // Drops every parameter's gradient (the next backward() starts from nothing).
  void zero_grad();
  void set_lr(double lr);
  double lr() const { return lr_value_; }
  const std::vector<Tensor>& parameters() const { return params_; }

 protected:
  // params: float tensors with requires_grad (InvalidArgument otherwise), on one device.
  Optimizer(std::vector<Tensor> params, double lr, const char* name);
  // Called first in each step (under NoGrad): per-step state, e.g. Adam's bias-correction powers, assigned anew.
  virtual void begin_step() {}
  // The new value of parameter k given its gradient g; may assign() to its own state tensors. Called under NoGrad.
  virtual Tensor update(size_t k, const Tensor& g) = 0;
  // Every state tensor (besides the parameters): realized with them, so what the step assigned is stored.
  virtual std::vector<Tensor> state() { return {}; }
  // A zero tensor like parameter k, realized, for per-parameter state (momentum, moments).
  Tensor zeros_like(size_t k) const;

  std::vector<Tensor> params_;
  Tensor lr_;  // shape (), on the parameters' device

 private:
  double lr_value_;
};

class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, double momentum = 0, double weight_decay = 0, bool nesterov = false);

 private:
  Tensor update(size_t k, const Tensor& g) override;
  std::vector<Tensor> state() override { return velocity_; }
  double momentum_, weight_decay_;
  bool nesterov_;
  std::vector<Tensor> velocity_;  // one per parameter when momentum != 0
};

// Adam (weight_decay as an L2 term added to the gradient, as torch.optim.Adam) and AdamW (decoupled weight decay,
// as torch.optim.AdamW, default 0.01).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Tensor> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
       double weight_decay = 0);

 protected:
  Adam(std::vector<Tensor> params, double lr, double beta1, double beta2, double eps, double weight_decay,
       bool decoupled, const char* name);

 private:
  void begin_step() override;
  Tensor update(size_t k, const Tensor& g) override;
  std::vector<Tensor> state() override;
  double beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_;
  std::vector<Tensor> m_, v_;
  Tensor beta1_t_, beta2_t_;  // beta^t after t steps, advanced once per step
};

class AdamW : public Adam {
 public:
  AdamW(std::vector<Tensor> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
        double weight_decay = 0.01);
};

}  // namespace hcq::optim
