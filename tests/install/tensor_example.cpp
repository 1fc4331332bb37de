// The README's first framework program, built by tests/install/consumer_test.sh against the installed tree.
#include <hcq/tensor.hpp>

#include <cstdio>

int main() {
  hcq::Tensor x = hcq::Tensor::arange(6).reshape({2, 3}).cast(hcq::dtypes::float32);
  hcq::Tensor w(std::vector<float>{1, 0, -1, 2, 0.5f, 1}, {3, 2});
  hcq::Tensor y = (x.matmul(w) + 1).relu().sum(1);        // lazy: nothing has run yet
  for (float v : y.data<float>()) std::printf("%g ", v);  // one fused kernel runs here: prints "6 16.5 "
  std::printf("\n");
}
