// The Tensor side of autograd: which tensors want gradients, backward() over the graph's rules
// (framework/autograd/gradient.hpp), accumulation into grad(), detach() and NoGrad.
#include <algorithm>
#include <mutex>

#include "framework/autograd/gradient.hpp"
#include "framework/engine/realize.hpp"
#include "framework/tensor/build.hpp"
#include "framework/tensor/impl.hpp"

namespace hcq {

using namespace fw;

namespace {

using Impl = TensorAccess::Impl;

thread_local bool t_no_grad = false;

// Every tensor that asked for gradients, weakly: backward() finds among them those the loss depends on. (A model's
// parameters are a few dozen; the list is pruned of dead ones as it is walked.)
std::mutex g_params_mu;
std::vector<std::weak_ptr<Impl>> g_params;

std::vector<std::shared_ptr<Impl>> live_params() {
  std::lock_guard lock(g_params_mu);
  std::vector<std::shared_ptr<Impl>> live;
  std::erase_if(g_params, [&](const std::weak_ptr<Impl>& w) {
    std::shared_ptr<Impl> p = w.lock();
    if (!p || !p->requires_grad) return true;
    live.push_back(std::move(p));
    return false;
  });
  return live;
}

}  // namespace

namespace fw {
bool no_grad_active() { return t_no_grad; }
}  // namespace fw

NoGrad::NoGrad() : previous_(std::exchange(t_no_grad, true)) {}
NoGrad::~NoGrad() { t_no_grad = previous_; }

Tensor& Tensor::requires_grad_(bool on) {
  const std::shared_ptr<Impl>& impl = TensorAccess::impl(*this);
  if (!impl) throw InvalidArgument("requires_grad_: the tensor is empty (default-constructed)");
  if (on && !is_float(dtype()))
    throw DTypeError(hcq::cat("requires_grad_: only float tensors have gradients, this one is ", dtype_name(dtype())));
  if (on && !impl->requires_grad) {
    std::lock_guard lock(g_params_mu);
    g_params.push_back(impl);
  }
  impl->requires_grad = on;
  return *this;
}

bool Tensor::requires_grad() const { return impl_ && impl_->requires_grad; }

Tensor Tensor::grad() const {
  if (!impl_ || !impl_->grad) return Tensor();
  return TensorAccess::wrap(impl_->grad);
}

void Tensor::zero_grad() {
  if (impl_) impl_->grad.reset();
}

void Tensor::set_grad(const Tensor& g) {
  if (!impl_) throw InvalidArgument("set_grad: the tensor is empty (default-constructed)");
  if (!g.defined()) throw InvalidArgument("set_grad: the gradient is empty (use zero_grad() to drop it)");
  if (g.shape() != shape())
    throw ShapeError(hcq::cat("set_grad: a gradient of shape ", shape_str(g.shape()), " for a tensor of shape ",
                              shape_str(shape())));
  if (g.dtype() != dtype())
    throw DTypeError(
        hcq::cat("set_grad: a ", dtype_name(g.dtype()), " gradient for a ", dtype_name(dtype()), " tensor"));
  if (g.device() != device())
    throw InvalidArgument(
        hcq::cat("set_grad: a gradient on ", g.device(), " for a tensor on ", device(), " (copy it with to() first)"));
  auto fresh = std::make_shared<Impl>();
  fresh->node = g.node();
  impl_->grad = std::move(fresh);
}

Tensor Tensor::detach() const {
  if (node()->op == Op::DETACH) return *this;
  return Tensor(make_node(Op::DETACH, dtype(), {node()}));
}

void Tensor::backward() const {
  if (!is_float(dtype()))
    throw DTypeError(hcq::cat("backward: the loss must be a float tensor, this one is ", dtype_name(dtype())));
  if (numel() != 1)
    throw ShapeError(hcq::cat("backward: the loss must have one element, this one has ", numel(), " ",
                              shape_str(shape()), " (sum or average it first)"));
  const std::vector<std::shared_ptr<Impl>> params = live_params();
  std::vector<Node> targets;
  targets.reserve(params.size());
  for (const auto& p : params) targets.push_back(gradient_target(p->node));
  const Node& root = impl_->computed_from ? impl_->computed_from : node();
  const std::unordered_map<const NodeData*, Node> grads =
      gradients(root, t_full(root->shape, 1.0, root->dtype, root->device()), targets);
  if (grads.empty())
    throw InvalidArgument(
        hcq::cat("backward: the loss does not depend on any tensor with requires_grad (mark the "
                 "parameters with requires_grad_(); a realize() or detach() between them cuts the "
                 "graph)"));
  for (const auto& p : params) {
    auto g = grads.find(gradient_target(p->node).get());
    if (g == grads.end()) continue;
    const Node grad = t_reshape(g->second, p->node->shape);
    Node sum = p->grad ? t_alu(Op::ADD, p->node->dtype, {p->grad->node, grad}) : grad;
    auto fresh = std::make_shared<Impl>();
    fresh->node = std::move(sum);
    p->grad = std::move(fresh);
  }
}

}  // namespace hcq
