// Tensor::Impl, what a Tensor handle shares with its copies, and the framework's access to it (autograd).
#pragma once

#include <memory>

#include "framework/ir/node.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

struct Tensor::Impl {
  fw::Node node;  // replaced by its buffer view when realized, by an ASSIGN when assigned to
  bool requires_grad = false;
  std::shared_ptr<Impl> grad;  // what backward() accumulated; null before and after zero_grad()
};

namespace fw {

struct TensorAccess {
  using Impl = Tensor::Impl;
  static const std::shared_ptr<Tensor::Impl>& impl(const Tensor& t) { return t.impl_; }
  static Tensor wrap(std::shared_ptr<Tensor::Impl> impl) {
    Tensor t;
    t.impl_ = std::move(impl);
    return t;
  }
};

// Whether a NoGrad scope is open on this thread (tensors made now are detached).
bool no_grad_active();

}  // namespace fw
}  // namespace hcq
