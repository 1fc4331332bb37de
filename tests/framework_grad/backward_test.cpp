// backward()'s contract, with hand-computed expected values: where gradients go at the points where ops are not
// differentiable (ties, relu at 0), accumulation and zero_grad, detach and NoGrad, gradients through casts and
// device copies, backward() after reading the loss, and each misuse's exact message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/message_of.hpp"
#include "framework_grad/grad_test_util.hpp"
#include "hcq/error.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

using gradtest::param;

using test::message_of;

TEST(AutogradBackward, TiesShareTheGradient) {
  Tensor x = param({1, 3, 3, -2});
  x.max().backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{0, 0.5f, 0.5f, 0}));

  Tensor a = param({1, 2, 5}), b = param({1, 3, 4});
  a.maximum(b).sum().backward();
  EXPECT_EQ(a.grad().data<float>(), (std::vector<float>{0.5f, 0, 1}));
  EXPECT_EQ(b.grad().data<float>(), (std::vector<float>{0.5f, 1, 0}));
}

TEST(AutogradBackward, ReluAtZeroHasZeroGradient) {  // as PyTorch's and tinygrad's
  Tensor x = param({-1, 0, 2});
  x.relu().sum().backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{0, 0, 1}));
}

TEST(AutogradBackward, GradientsAccumulateUntilZeroGrad) {
  Tensor x = param({1, 2, 3});
  EXPECT_FALSE(x.grad().defined());
  (x * x).sum().backward();
  (x * 3.0).sum().backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{5, 7, 9}));  // 2x + 3
  x.zero_grad();
  EXPECT_FALSE(x.grad().defined());
  x.sum().backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(AutogradBackward, OnlyTheTensorsTheLossDependsOnGetGradients) {
  Tensor x = param({1, 2}), unused = param({5});
  Tensor copy = x;  // a copy of the handle shares the gradient
  (x * 2.0).sum().backward();
  EXPECT_EQ(copy.grad().data<float>(), (std::vector<float>{2, 2}));
  EXPECT_FALSE(unused.grad().defined());
  EXPECT_TRUE(x.requires_grad());
  EXPECT_FALSE((x * 2.0).requires_grad());
}

TEST(AutogradBackward, DetachAndNoGradStopGradients) {
  Tensor x = param({1, 2, 3});
  (x * x.detach()).sum().backward();  // d/dx of x * c = c
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{1, 2, 3}));

  x.zero_grad();
  Tensor y;
  {
    NoGrad scope;
    y = x * 10.0;
  }
  (x * y).sum().backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{10, 20, 30}));
  EXPECT_EQ(y.data<float>(), (std::vector<float>{10, 20, 30}));  // a detached tensor still computes its value
}

TEST(AutogradBackward, ReadingTheLossFirstKeepsItsGraph) {  // a training loop that logs before backward()
  Tensor x = param({1, 2});
  Tensor loss = (x * x).sum();
  EXPECT_EQ(loss.item(), 5.0);
  loss.backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{2, 4}));
}

TEST(AutogradBackward, AnIntermediateTensorGetsItsGradient) {
  Tensor x = param({1, 2});
  Tensor h = (x * 3.0).requires_grad_();
  (h * h).sum().backward();
  EXPECT_EQ(h.grad().data<float>(), (std::vector<float>{6, 12}));   // 2h
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{18, 36}));  // 2h * 3
}

TEST(AutogradBackward, ThroughHalfPrecisionAndBack) {
  Tensor x = param({1.5f, -2});
  x.cast(DType::float16).mul(4).cast(DType::float32).sum().backward();
  EXPECT_EQ(x.grad().dtype(), DType::float32);
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{4, 4}));
}

TEST(AutogradBackward, ThroughACopyToAnotherDevice) {
  Tensor x = param({1, 2, 3});
  (x.to("CPU:1") * x.to("CPU:1")).sum().to("CPU").backward();
  EXPECT_EQ(x.grad().device(), x.device());
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{2, 4, 6}));
}

TEST(AutogradBackward, IntegerInputsGetNoGradient) {
  Tensor x = param({1, 2, 3});
  Tensor idx = Tensor(std::vector<int32_t>{2, 0, 1}, {3});
  (x * idx.cast(DType::float32)).sum().backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{2, 0, 1}));
}

// What data-parallel training does after the allreduce: the gradient is replaced, and the next backward() adds to
// the new one.
TEST(AutogradBackward, SetGradReplacesTheGradient) {
  Tensor x = param({1, 2, 3});
  (x * x).sum().backward();
  x.set_grad(Tensor(std::vector<float>{10, 20, 30}, {3}));
  (x * 3.0).sum().backward();
  EXPECT_EQ(x.grad().data<float>(), (std::vector<float>{13, 23, 33}));
  EXPECT_EQ(message_of<ShapeError>([&] { x.set_grad(Tensor::zeros({2})); }),
            "set_grad: a gradient of shape (2,) for a tensor of shape (3,)");
  EXPECT_EQ(message_of<DTypeError>([&] { x.set_grad(Tensor::zeros({3}, DType::float16)); }),
            "set_grad: a float16 gradient for a float32 tensor");
  EXPECT_EQ(message_of<InvalidArgument>([&] { x.set_grad(Tensor::zeros({3}).to("CPU:1")); }),
            "set_grad: a gradient on CPU:1 for a tensor on CPU:0 (copy it with to() first)");
  EXPECT_EQ(message_of<InvalidArgument>([&] { x.set_grad(Tensor()); }),
            "set_grad: the gradient is empty (use zero_grad() to drop it)");
}

TEST(AutogradBackward, Misuse) {
  Tensor x = param({1, 2});
  EXPECT_EQ(message_of<ShapeError>([&] { (x * 2.0).backward(); }),
            "backward: the loss must have one element, this one has 2 (2,) (sum or average it first)");
  EXPECT_EQ(message_of<DTypeError>([&] { x.sum().cast(DType::int32).backward(); }),
            "backward: the loss must be a float tensor, this one is int32");
  EXPECT_EQ(message_of<DTypeError>([] { Tensor(std::vector<int32_t>{1}, {1}).requires_grad_(); }),
            "requires_grad_: only float tensors have gradients, this one is int32");
  const std::string cut =
      "backward: the loss does not depend on any tensor with requires_grad (mark the parameters with "
      "requires_grad_(); a realize() or detach() between them cuts the graph)";
  Tensor h = (x * 2.0).sum();
  h.realize();  // an intermediate realized, then used: what follows reads its buffer
  EXPECT_EQ(message_of<InvalidArgument>([&] { (h * 3.0).backward(); }), cut);
  EXPECT_EQ(message_of<InvalidArgument>([&] { x.detach().sum().backward(); }), cut);
  EXPECT_EQ(message_of<InvalidArgument>([] { Tensor().requires_grad_(); }),
            "requires_grad_: the tensor is empty (default-constructed)");
}

}  // namespace
}  // namespace hcq
