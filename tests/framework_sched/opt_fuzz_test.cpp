// The optimiser's fuzzer (issue 19): random shapes, each computed with the code generator's optimisations (register
// and dot tiles, blocked panels, upcasts, the work split) and again under HCQ_NOOPT=1 (plain loops), compared element
// by element. Shapes mix 1s, primes, powers of two and long reductions (blocked panels); the expressions are
// products with either operand transposed and an epilogue (float32, and bf16 and float16 for the bf16 and matrix tiles), convolutions with their two gradients, and reductions
// over random axes. Fixed seeds, so a failure names its case and reruns; HCQ_OPT_FUZZ_CASES=N runs N cases per kind.
// On a simulated GPU (scripts/test.sh's GPU runs) fewer cases: its kernels run on the simulator's host twins, a
// convolution's gradients for tens of seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "framework_sched/gpu_under_test.hpp"
#include "hcq/error.hpp"
#include "hcq/nn.hpp"
#include "hcq/tensor.hpp"

namespace hcq {
namespace {

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  int64_t in(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }
  bool chance(int percent) { return static_cast<int>(next() % 100) < percent; }
  // A dimension: a 1, a prime, a power of two, a multiple of the vector width, or anything up to `most`.
  int64_t dim(int64_t most) {
    static const int64_t kDims[] = {1, 2, 3, 5, 7, 13, 16, 17, 24, 31, 32, 48, 64, 96, 97, 128};
    if (chance(60)) {
      int64_t d;
      do d = kDims[next() % std::size(kDims)];
      while (d > most);
      return d;
    }
    return in(1, most);
  }
  std::vector<float> floats(int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = static_cast<float>(static_cast<double>(next() % 2001) / 1000.0 - 1.0);
    return v;
  }
};

// One random case: a description, and a function computing its outputs from scratch (new input buffers each time,
// so a second run computes again instead of finding the first run's realized nodes). `reduce_length` scales the
// tolerance: float32 sums of that many terms in another order.
struct Case {
  std::string what;
  int64_t reduce_length;
  std::function<std::vector<Tensor>()> compute;
  double rel = 1e-4;  // relative tolerance: float32 sums in another order
  double abs = 0;     // absolute tolerance besides the sums' (a rounding before a cancelling epilogue)
};

Case matmul_case(Rng& r) {
  const int64_t batch = r.chance(70) ? 1 : r.in(2, 3), M = r.dim(128), N = r.dim(128);
  const int64_t K = r.chance(20) ? r.in(4096, 12000) : r.dim(200);  // long: gathered panels packed in blocks
  const bool at = r.chance(50), bt = r.chance(50), epilogue = r.chance(50);
  const std::vector<float> av = r.floats(batch * M * K), bv = r.floats(K * N), cv = r.floats(N);
  Case c;
  c.what = cat("matmul batch ", batch, " M ", M, " K ", K, " N ", N, at ? " A^T" : "", bt ? " B^T" : "",
               epilogue ? " + bias, relu" : "");
  c.reduce_length = K;
  c.compute = [=] {
    const Tensor a = at ? Tensor(av, {batch, K, M}).transpose(1, 2) : Tensor(av, {batch, M, K});
    const Tensor b = bt ? Tensor(bv, {N, K}).transpose() : Tensor(bv, {K, N});
    Tensor out = a.matmul(b);
    if (epilogue) out = (out + Tensor(cv, {N})).relu();
    return std::vector<Tensor>{out};
  };
  return c;
}

// A bf16 or float16 product (the CPU device's bf16 tiles and the GPUs' matrix tiles, render_c.cpp): rows and
// columns often multiples of 16 (the tiles' blocks), K anything (padded to 32 in the tiles), read as floats after the
// product's one rounding to the half type.
Case half_matmul_case(Rng& r, DType half) {
  static const int64_t kBlocks[] = {16, 32, 48, 64, 96, 128};
  auto side = [&] { return r.chance(60) ? kBlocks[r.next() % std::size(kBlocks)] : r.dim(128); };
  const int64_t M = side(), N = side(), K = r.dim(200);
  const bool at = r.chance(30), bt = r.chance(30), epilogue = r.chance(50);
  const std::vector<float> av = r.floats(M * K), bv = r.floats(K * N), cv = r.floats(N);
  Case c;
  c.what = cat(half == DType::bfloat16 ? "bf16" : "float16", " matmul M ", M, " K ", K, " N ", N, at ? " A^T" : "",
               bt ? " B^T" : "", epilogue ? " + bias, relu" : "");
  c.reduce_length = K;
  // The same float32 sum in another order may round to the neighbouring half value: one ulp (2^-8 relative for
  // bf16, 2^-11 for float16).
  c.rel = std::ldexp(1.0, half == DType::bfloat16 ? -7 : -10);
  // That ulp is the product's, before the bias: as absolute, the type's ulp at the largest sum of |a| |b|.
  double largest = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += std::abs(static_cast<double>(av[static_cast<size_t>(at ? k * M + i : i * K + k)]) *
                      bv[static_cast<size_t>(bt ? j * K + k : k * N + j)]);
      largest = std::max(largest, s);
    }
  c.abs = c.rel * largest;
  c.compute = [=] {
    const Tensor a = at ? Tensor(av, {K, M}).cast(half).transpose() : Tensor(av, {M, K}).cast(half);
    const Tensor b = bt ? Tensor(bv, {N, K}).cast(half).transpose() : Tensor(bv, {K, N}).cast(half);
    Tensor out = a.matmul(b).cast(DType::float32);
    if (epilogue) out = (out + Tensor(cv, {N})).relu();
    return std::vector<Tensor>{out};
  };
  return c;
}

Case conv_case(Rng& r) {
  const int64_t n = r.in(1, 6), cin = r.dim(16), cout = r.dim(16), k = r.in(1, 5), stride = r.in(1, 2);
  const int64_t pad = r.in(0, 2), h = r.in(k, 20), w = r.in(k, 20);
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  const std::vector<float> xv = r.floats(n * cin * h * w), wv = r.floats(cout * cin * k * k),
                           gv = r.floats(n * cout * oh * ow);
  Case c;
  c.what = cat("conv2d x (", n, ", ", cin, ", ", h, ", ", w, ") w (", cout, ", ", cin, ", ", k, ", ", k, ") stride ",
               stride, " padding ", pad, ", and both gradients");
  c.reduce_length = std::max(n * oh * ow, cin * k * k);
  c.compute = [=] {
    Tensor x(xv, {n, cin, h, w}), wt(wv, {cout, cin, k, k});
    x.requires_grad_();
    wt.requires_grad_();
    const Tensor out = nn::conv2d(x, wt, {}, {stride, stride}, {pad, pad});
    (out * Tensor(gv, {n, cout, oh, ow})).sum().backward();
    return std::vector<Tensor>{out, x.grad(), wt.grad()};
  };
  return c;
}

Case reduce_case(Rng& r) {
  const int rank = static_cast<int>(r.in(1, 4));
  Shape shape;
  int64_t total = 1;
  for (int d = 0; d < rank; ++d) {
    shape.push_back(r.dim(rank > 2 ? 40 : 300));
    total *= shape.back();
  }
  std::vector<int> axes;
  int64_t length = 1;
  for (int d = 0; d < rank; ++d)
    if (r.chance(50)) {
      axes.push_back(d);
      length *= shape[static_cast<size_t>(d)];
    }
  if (axes.empty()) {
    axes.push_back(rank - 1);
    length = shape.back();
  }
  const bool max = r.chance(30);
  const std::vector<float> xv = r.floats(total);
  Case c;
  std::string axes_s;
  for (int a : axes) axes_s += cat(axes_s.empty() ? "" : ",", a);
  std::string shape_s;
  for (int64_t d : shape) shape_s += cat(shape_s.empty() ? "" : ", ", d);
  c.what = cat(max ? "max" : "sum of exp", " over axes ", axes_s, " of (", shape_s, ")");
  c.reduce_length = length;
  c.compute = [=] {
    const Tensor x(xv, shape);
    return std::vector<Tensor>{max ? x.max(axes) : (x * 0.5f).exp().sum(axes)};
  };
  return c;
}

int cases_per_kind(int on_cpu, int on_gpu) {
  const char* v = std::getenv("HCQ_OPT_FUZZ_CASES");
  if (v && *v) return std::atoi(v);
  return fwtest::gpu_under_test() ? on_gpu : on_cpu;
}

// Optimised, then the same case under HCQ_NOOPT=1 (part of the schedule cache's key: the kernels are built anew).
void check_case(const Case& c) {
  std::vector<std::vector<float>> opt, plain;
  for (const Tensor& t : c.compute()) opt.push_back(t.data<float>());
  ::setenv("HCQ_NOOPT", "1", 1);
  try {
    for (const Tensor& t : c.compute()) plain.push_back(t.data<float>());
  } catch (...) {
    ::unsetenv("HCQ_NOOPT");
    throw;
  }
  ::unsetenv("HCQ_NOOPT");
  ASSERT_EQ(opt.size(), plain.size()) << c.what;
  const double atol = 2e-6 * static_cast<double>(c.reduce_length) + c.abs;
  for (size_t o = 0; o < opt.size(); ++o) {
    ASSERT_EQ(opt[o].size(), plain[o].size()) << c.what << ", output " << o;
    for (size_t e = 0; e < opt[o].size(); ++e) {
      const double got = opt[o][e], want = plain[o][e];
      ASSERT_LE(std::abs(got - want), atol + c.rel * std::abs(want))
          << c.what << ": output " << o << " element " << e << ", optimised " << got << ", HCQ_NOOPT " << want;
    }
  }
}

TEST(FrameworkOptFuzz, ProductsMatchTheUnoptimisedKernels) {
  Rng r{0x9e3779b97f4a7c15ull};
  for (int k = 0; k < cases_per_kind(10, 3); ++k) check_case(matmul_case(r));
}

TEST(FrameworkOptFuzz, Bf16ProductsMatchTheUnoptimisedKernels) {
  Rng r{0x2545f4914f6cdd1dull};
  for (int k = 0; k < cases_per_kind(8, 2); ++k) check_case(half_matmul_case(r, DType::bfloat16));
}

// float16 products: on the simulated gfx1100 and the NVIDIA GPUs through the matrix unit's float16 form.
TEST(FrameworkOptFuzz, Float16ProductsMatchTheUnoptimisedKernels) {
  Rng r{0x6a09e667f3bcc909ull};
  for (int k = 0; k < cases_per_kind(4, 2); ++k) check_case(half_matmul_case(r, DType::float16));
}

TEST(FrameworkOptFuzz, ConvolutionsAndTheirGradientsMatchTheUnoptimisedKernels) {
  Rng r{0xc2b2ae3d27d4eb4full};
  const int cases = cases_per_kind(3, 0);
  if (cases == 0) GTEST_SKIP() << "a convolution's gradients take tens of seconds on a simulated GPU";
  for (int k = 0; k < cases; ++k) check_case(conv_case(r));
}

TEST(FrameworkOptFuzz, ReductionsMatchTheUnoptimisedKernels) {
  Rng r{0x165667b19e3779f9ull};
  for (int k = 0; k < cases_per_kind(6, 3); ++k) check_case(reduce_case(r));
}

}  // namespace
}  // namespace hcq
