// Register tiles for matmul-shaped reduces on the CPU device (render_c.cpp, choose_tile): which kernels get them and
// in what shape (rendered directly, asserted exactly), and that the tiled kernels compute what a double loop does,
// for the shapes that take each path: exact tiles, several workers, a strided right operand gathered into the
// packed panel, a batch axis outside the tile, an epilogue, one-element reduces; dot tiles (both operands contiguous
// in k) and column sums on lanes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework_sched/render_inputs.hpp"
#include "hcq/cpu_features.hpp"
#include "hcq/nn.hpp"
#include "hcq/tensor.hpp"

namespace hcq::fw {
namespace {

// A CPU device's facts with AVX-512 (16-float vectors, 32 registers), or with AVX2 and FMA only (8 floats, 16).
TargetFacts cpu_facts(unsigned workers, bool optimize = true, bool avx512 = true) {
  DeviceInfo info;
  info.name = "hand-made";
  info.interface = "cpu";
  info.arch = "x86_64";
  CpuIsa isa;
  isa.features.add(CpuFeature::avx2);
  isa.features.add(CpuFeature::fma);
  if (avx512) isa.features.add(CpuFeature::avx512f);
  info.cpu_isa = isa;
  return target_facts(info, workers, optimize);
}

TEST(FrameworkRegisterTile, ShapeAndOptsFollowTheOutput) {
  // 48 rows, 128 columns: 6 rows by 4 vectors (24 accumulators), the panel packed (4 row steps per worker).
  const RenderedKernel mm = render_c(matmul_kernel(48, 173, 128), cpu_facts(2));
  EXPECT_EQ(mm.name, "r_48_128_173_up6x64");
  EXPECT_EQ(mm.opts, "THREAD(0,2) UPCAST(0,6) UPCAST(1,64) PACK(1)");
  EXPECT_EQ(mm.global, (std::array<uint32_t, 3>{2, 1, 1}));
  // Under 2^20 iterations (kSplitWork) a kernel stays on one worker: waking another costs more than it saves.
  const RenderedKernel one = render_c(matmul_kernel(48, 37, 128), cpu_facts(2));
  EXPECT_EQ(one.opts, "UPCAST(0,6) UPCAST(1,64) PACK(1)");
  EXPECT_EQ(one.global, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_NE(mm.source.find("typedef float hcq_vf __attribute__((ext_vector_type(16)));"), std::string::npos)
      << mm.source;

  // One worker, 4 rows: a single row step, so no packing.
  const RenderedKernel small = render_c(matmul_kernel(4, 5, 64), cpu_facts(1));
  EXPECT_EQ(small.opts, "UPCAST(0,4) UPCAST(1,64)") << small.source;
  EXPECT_EQ(small.source.find("pk"), std::string::npos) << small.source;

  // B read across its rows (b[j, k]): its lanes are gathered into the panel.
  const RenderedKernel t = render_c(matmul_kernel(24, 457, 96, true), cpu_facts(2));
  EXPECT_EQ(t.opts, "THREAD(0,2) UPCAST(0,12) UPCAST(1,32) PACK(1)") << t.source;
  EXPECT_NE(t.source.find("[tk][tw][tv] = (b2["), std::string::npos) << t.source;

  // A gathered panel over K = 8192 (1 MiB) does not fit the stack: it is packed 4096 k at a time, each row's sums
  // kept between the blocks (a read across k's rows, so no dot tile).
  const RenderedKernel blocked = render_c(matmul_kernel(24, 8192, 96, true, true), cpu_facts(2));
  EXPECT_EQ(blocked.opts, "THREAD(0,2) UPCAST(0,12) UPCAST(1,32) PACK(1)") << blocked.source;
  EXPECT_NE(blocked.source.find("for (int64_t tkb = 0; tkb < 8192; tkb += 4096) {"), std::string::npos)
      << blocked.source;

  // 24 columns, which no vector divides: the operands swap roles (a's rows become the tile's gathered columns).
  const RenderedKernel swapped = render_c(matmul_kernel(48, 911, 24), cpu_facts(2));
  EXPECT_EQ(swapped.name, "r_48_24_911_up12x16");
  EXPECT_EQ(swapped.opts, "THREAD(1,2) UPCAST(1,12) UPCAST(0,16) PACK(0)");
  // Neither side divisible, and no optimisation at all: the plain loops.
  EXPECT_EQ(render_c(matmul_kernel(7, 37, 10), cpu_facts(2)).name, "r_7_10_37");
  const RenderedKernel noopt = render_c(matmul_kernel(48, 37, 128), cpu_facts(2, false));
  EXPECT_EQ(noopt.name, "r_48_128_37");
  EXPECT_EQ(noopt.opts, "");
}

// Both operands read k contiguously (x . W^T, nn.Linear's forward) and V divides K: a dot tile, R rows by C columns
// of dot products advancing V floats of k at a time, no packed panel; the shape is the best-ranked R x C that divides
// the output and fits the registers (R*C accumulators, R vectors of A, one of B).
TEST(FrameworkRegisterTile, DotTilesWhenBothOperandsReadKContiguously) {
  const RenderedKernel mm = render_c(matmul_kernel(128, 784, 128, true), cpu_facts(2));
  EXPECT_EQ(mm.name, "r_128_128_784_up4x4");
  EXPECT_EQ(mm.opts, "THREAD(0,2) UPCAST(0,4) UPCAST(1,4) DOT(16)");
  EXPECT_EQ(mm.source.find("pk"), std::string::npos) << mm.source;
  EXPECT_NE(mm.source.find("tk += 16"), std::string::npos) << mm.source;
  // 10 columns: 4 x 5 (20 accumulators).
  EXPECT_EQ(render_c(matmul_kernel(128, 1024, 10, true), cpu_facts(2)).opts,
            "THREAD(0,2) UPCAST(0,4) UPCAST(1,5) DOT(16)");
  // AVX2: 8 floats of k per step, 16 registers: 2 x 4.
  const RenderedKernel avx2 = render_c(matmul_kernel(128, 784, 128, true), cpu_facts(2, true, false));
  EXPECT_EQ(avx2.opts, "THREAD(0,2) UPCAST(0,2) UPCAST(1,4) DOT(8)");
  // A K that no vector divides keeps the gathered panel.
  EXPECT_EQ(render_c(matmul_kernel(24, 457, 96, true), cpu_facts(2)).opts,
            "THREAD(0,2) UPCAST(0,12) UPCAST(1,32) PACK(1)");
}

// With AVX2 only (or AVX-512 masked off by HCQ_CPU_FEATURES): 8-float vectors and half the registers, so at most 12
// accumulators; without AVX2, no tiles.
TEST(FrameworkRegisterTile, Avx2TilesAreSmaller) {
  const RenderedKernel mm = render_c(matmul_kernel(48, 173, 128), cpu_facts(2, true, false));
  EXPECT_EQ(mm.name, "r_48_128_173_up6x16");
  EXPECT_EQ(mm.opts, "THREAD(0,2) UPCAST(0,6) UPCAST(1,16) PACK(1)");
  EXPECT_NE(mm.source.find("typedef float hcq_vf __attribute__((ext_vector_type(8)));"), std::string::npos)
      << mm.source;
  DeviceInfo sse;
  sse.name = "hand-made";
  sse.interface = "cpu";
  sse.arch = "x86_64";
  sse.cpu_isa = CpuIsa{};
  EXPECT_EQ(render_c(matmul_kernel(48, 37, 128), target_facts(sse, 2, true)).name, "r_48_128_37_up16");
}

std::vector<float> values(size_t n, float scale, size_t salt) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k) v[k] = scale * (static_cast<float>((k * 7919 + salt) % 23) - 11.0f) / 11.0f;
  return v;
}

// Runs optimised (register tiles) and under HCQ_NOOPT=1; both against double loops.
class FrameworkRegisterTileValues : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) ::setenv("HCQ_NOOPT", "1", 1);
  }
  void TearDown() override { ::unsetenv("HCQ_NOOPT"); }

  // relu(a @ b + bias) for a [batch, M, K] and b [K, N] (or b given as [N, K] and transposed).
  void check(int64_t batch, int64_t M, int64_t K, int64_t N, bool b_transposed) {
    const std::vector<float> av = values(batch * M * K, 1.0f, 1), bv = values(K * N, 0.5f, 2), cv = values(N, 2.0f, 3);
    Tensor a(av, {batch, M, K}), bias(cv, {N});
    Tensor b = b_transposed ? Tensor(bv, {N, K}).transpose() : Tensor(bv, {K, N});
    const std::vector<float> got = (a.matmul(b) + bias).relu().data<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(batch * M * N));
    for (int64_t s = 0; s < batch; ++s)
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double want = cv[static_cast<size_t>(j)];
          for (int64_t k = 0; k < K; ++k) {
            const double x = av[static_cast<size_t>((s * M + i) * K + k)];
            want += x * bv[static_cast<size_t>(b_transposed ? j * K + k : k * N + j)];
          }
          want = std::max(want, 0.0);
          ASSERT_NEAR(got[static_cast<size_t>((s * M + i) * N + j)], want, 1e-4 * (1 + std::abs(want)))
              << "batch " << s << ", row " << i << ", column " << j;
        }
  }
};

TEST_P(FrameworkRegisterTileValues, ExactTilesOverTwoWorkers) { check(1, 96, 128, 128, false); }
TEST_P(FrameworkRegisterTileValues, PrimeReduceAndOneElementReduce) {
  check(1, 48, 37, 128, false);
  check(1, 16, 1, 64, false);
}
TEST_P(FrameworkRegisterTileValues, StridedRightOperandIsGathered) { check(1, 24, 53, 96, true); }
TEST_P(FrameworkRegisterTileValues, BatchAxisOutsideTheTile) {
  check(3, 12, 17, 32, false);
  check(4, 64, 128, 64, false);  // 2^21 iterations: the batch is split over two workers
}
TEST_P(FrameworkRegisterTileValues, OperandsSwapRolesForNarrowColumns) { check(1, 48, 37, 24, false); }
TEST_P(FrameworkRegisterTileValues, TheMlpShapes) {
  check(1, 128, 784, 128, false);
  check(1, 128, 128, 784, true);  // the first layer's input gradient: g @ W^T
}

// Dot tiles (both operands contiguous in k): exact shapes, 5 columns per step with a bias and ReLU epilogue on 5
// lanes, a batch axis outside the tile, one vector of k, several workers.
TEST_P(FrameworkRegisterTileValues, DotTileForOperandsContiguousInK) {
  check(1, 64, 48, 40, true);
  check(1, 128, 128, 10, true);
  check(2, 8, 32, 12, true);
  check(1, 8, 16, 8, true);
  check(1, 128, 1024, 10, true);  // over two workers
}

// An operand that is an expression computed a vector at a time: a hidden layer's bias and ReLU (and a negation and
// a max) in the next layer's product, as a dot tile's A (both contiguous in k) and as a broadcast tile's
// panel (contiguous in the columns). Inputs include NaNs: the vector max and select keep the scalar rules (NaN wins
// in max; a comparison with NaN is false).
TEST_P(FrameworkRegisterTileValues, VectorExpressionOperands) {
  const int64_t B = 16, K = 32, N = 10;
  std::vector<float> hv = values(B * K, 1.0f, 11);
  hv[5] = std::nanf("");
  hv[40] = std::nanf("");
  const std::vector<float> cv = values(K, 0.5f, 12), wv = values(N * K, 0.5f, 13), gv = values(B * N, 1.0f, 14);
  const Tensor h(hv, {B, K}), bias(cv, {K}), w(wv, {N, K}), g(gv, {B, N});
  // relu(h + bias) as (0 < x) ? x : 0, and max(-(h + bias), -0.25) as MAX: both through a dot tile (N = 10 columns).
  const Tensor act = ((h + bias).relu() + (-(h + bias)).maximum(-0.25f)) * 0.5f;
  const std::vector<float> got = act.matmul(w.transpose()).data<float>();
  // act^T @ g: act, contiguous in its 32 columns, is the broadcast tile's panel operand, one vector per k.
  const std::vector<float> gw = act.transpose().matmul(g).data<float>();
  auto act_at = [&](int64_t b, int64_t k) {
    const double x = double(hv[static_cast<size_t>(b * K + k)]) + cv[static_cast<size_t>(k)];
    if (std::isnan(x)) return x;
    return (std::max(x, 0.0) + std::max(-x, -0.25)) * 0.5;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += act_at(b, k) * wv[static_cast<size_t>(n * K + k)];
      const float v = got[static_cast<size_t>(b * N + n)];
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(v)) << b << ", " << n;
      else ASSERT_NEAR(v, want, 1e-4 * (1 + std::abs(want))) << b << ", " << n;
    }
  for (int64_t k = 0; k < K; ++k)
    for (int64_t n = 0; n < N; ++n) {
      double want = 0;
      for (int64_t b = 0; b < B; ++b) want += act_at(b, k) * gv[static_cast<size_t>(b * N + n)];
      const float v = gw[static_cast<size_t>(k * N + n)];
      if (std::isnan(want)) EXPECT_TRUE(std::isnan(v)) << k << ", " << n;
      else ASSERT_NEAR(v, want, 1e-4 * (1 + std::abs(want))) << k << ", " << n;
    }
}

// A bias's gradient: a column sum of a masked gradient, every lane read contiguously (16 column sums at once).
TEST_P(FrameworkRegisterTileValues, ColumnSumOfAMaskedGradient) {
  const int64_t B = 37, O = 48;
  const std::vector<float> gv = values(B * O, 0.5f, 9), hv = values(B * O, 1.0f, 10);
  const std::vector<float> got = (Tensor(hv, {B, O}) > 0.0f).where(Tensor(gv, {B, O}), 0.0f).sum(0).data<float>();
  ASSERT_EQ(got.size(), static_cast<size_t>(O));
  for (int64_t o = 0; o < O; ++o) {
    double want = 0;
    for (int64_t b = 0; b < B; ++b)
      if (hv[static_cast<size_t>(b * O + o)] > 0) want += gv[static_cast<size_t>(b * O + o)];
    ASSERT_NEAR(got[static_cast<size_t>(o)], want, 1e-5) << o;
  }
}

// A ReLU layer's weight gradient: x^T @ (g where h > 0), the mask fused into the reduce; the masked operand is
// computed lane by lane into the panel.
TEST_P(FrameworkRegisterTileValues, MaskedOperandIsComputedIntoThePanel) {
  const int64_t B = 32, I = 40, O = 64;
  const std::vector<float> xv = values(B * I, 1.0f, 4), gv = values(B * O, 0.5f, 5), hv = values(B * O, 1.0f, 6);
  Tensor x(xv, {B, I}), g(gv, {B, O}), h(hv, {B, O});
  const std::vector<float> got = x.transpose().matmul((h > 0.0f).where(g, 0.0f)).data<float>();
  ASSERT_EQ(got.size(), static_cast<size_t>(I * O));
  for (int64_t i = 0; i < I; ++i)
    for (int64_t o = 0; o < O; ++o) {
      double want = 0;
      for (int64_t b = 0; b < B; ++b)
        if (hv[static_cast<size_t>(b * O + o)] > 0)
          want += double(xv[static_cast<size_t>(b * I + i)]) * gv[static_cast<size_t>(b * O + o)];
      ASSERT_NEAR(got[static_cast<size_t>(i * O + o)], want, 1e-4) << i << ", " << o;
    }
}

// A convolution reduces over three ranges (input channel, window row, window column): one flat k for the tile.
// Output columns 16 wide, so the input window is one vector load per k; the batch is the workers' split.
TEST_P(FrameworkRegisterTileValues, ConvolutionReducesOverThreeRanges) {
  const int64_t B = 2, C = 3, H = 6, Wd = 18, O = 8, KH = 3, KW = 3, OH = H - KH + 1, OW = Wd - KW + 1;
  const std::vector<float> xv = values(B * C * H * Wd, 1.0f, 7), wv = values(O * C * KH * KW, 0.5f, 8);
  const std::vector<float> got = nn::conv2d(Tensor(xv, {B, C, H, Wd}), Tensor(wv, {O, C, KH, KW})).data<float>();
  ASSERT_EQ(got.size(), static_cast<size_t>(B * O * OH * OW));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t y = 0; y < OH; ++y)
        for (int64_t x = 0; x < OW; ++x) {
          double want = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx)
                want += double(xv[static_cast<size_t>(((b * C + c) * H + y + ky) * Wd + x + kx)]) *
                        wv[static_cast<size_t>(((o * C + c) * KH + ky) * KW + kx)];
          ASSERT_NEAR(got[static_cast<size_t>(((b * O + o) * OH + y) * OW + x)], want, 1e-4)
              << b << ", " << o << ", " << y << ", " << x;
        }
}

// w's gradient of sum(conv2d(x, w) * g) (stride 1, no padding; x (B, C, H, Wd), w (O, C, KH, KW), g (B, O, OH, OW),
// their values drawn with seeds `seed`, + 1, + 2) against a double loop.
void check_conv_weight_gradient(int64_t B, int64_t C, int64_t H, int64_t Wd, int64_t O, int64_t KH, int64_t KW,
                                size_t seed) {
  const int64_t OH = H - KH + 1, OW = Wd - KW + 1;
  const std::vector<float> xv = values(B * C * H * Wd, 1.0f, seed), wv = values(O * C * KH * KW, 0.5f, seed + 1),
                           gv = values(B * O * OH * OW, 1.0f, seed + 2);
  Tensor w(wv, {O, C, KH, KW});
  w.requires_grad_();
  (nn::conv2d(Tensor(xv, {B, C, H, Wd}), w) * Tensor(gv, {B, O, OH, OW})).sum().backward();
  const std::vector<float> got = w.grad().data<float>();
  ASSERT_EQ(got.size(), static_cast<size_t>(O * C * KH * KW));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t ky = 0; ky < KH; ++ky)
        for (int64_t kx = 0; kx < KW; ++kx) {
          double want = 0;
          for (int64_t b = 0; b < B; ++b)
            for (int64_t y = 0; y < OH; ++y)
              for (int64_t x = 0; x < OW; ++x)
                want += double(gv[static_cast<size_t>(((b * O + o) * OH + y) * OW + x)]) *
                        xv[static_cast<size_t>(((b * C + c) * H + y + ky) * Wd + x + kx)];
          ASSERT_NEAR(got[static_cast<size_t>(((o * C + c) * KH + ky) * KW + kx)], want, 1e-3 * (1 + std::abs(want)))
              << o << ", " << c << ", " << ky << ", " << kx;
        }
}

// A convolution's weight gradient: the output gradient times the input windows, summed over batch, rows and
// columns (K = 40 * 16 * 16); the input is read across channels (gathered), and its panel is packed in blocks of
// the batch.
TEST_P(FrameworkRegisterTileValues, ConvolutionWeightGradientOverALargeBatch) {
  check_conv_weight_gradient(40, 16, 18, 18, 16, 3, 3, 9);
}

// Merged columns (MERGE): a convolution's output rows and columns (and its batch, when one image is no whole number
// of vectors) as one column range, gathered a run of an image row at a time. Checked against double loops: the
// forward with a bias, a ReLU on its input (an operand expression in the gather) and padding (masked window reads),
// and the input gradient (a transposed convolution: its windows read a zero-padded output gradient). The opts the
// kernels got are recorded, so a change that stops merging fails here too (under HCQ_NOOPT=1: none merge).
std::string merge_of(const RenderedKernel& rk);

class ConvolutionValues {
 public:
  ConvolutionValues() {
    set_render_hook([this](RenderedKernel& rk) {
      if (std::string m = merge_of(rk); !m.empty()) merged.push_back(m);
    });
  }
  ~ConvolutionValues() { set_render_hook({}); }
  std::vector<std::string> merged;

  void check(int64_t B, int64_t C, int64_t H, int64_t Wd, int64_t O, int64_t Kk, int64_t pad) {
    const int64_t OH = H + 2 * pad - Kk + 1, OW = Wd + 2 * pad - Kk + 1;
    const std::vector<float> xv = values(B * C * H * Wd, 1.0f, 21), wv = values(O * C * Kk * Kk, 0.5f, 22),
                             bv = values(O, 1.0f, 23), gv = values(B * O * OH * OW, 1.0f, 24);
    auto X = [&](int64_t b, int64_t c, int64_t y, int64_t x) -> double {  // relu(x), zero outside the image
      if (y < 0 || y >= H || x < 0 || x >= Wd) return 0.0;
      return std::max(0.0, double(xv[static_cast<size_t>(((b * C + c) * H + y) * Wd + x)]));
    };
    auto Wt = [&](int64_t o, int64_t c, int64_t ky, int64_t kx) {
      return double(wv[static_cast<size_t>(((o * C + c) * Kk + ky) * Kk + kx)]);
    };
    auto forward = [&](const Tensor& x) {
      return nn::conv2d(x.relu(), Tensor(wv, {O, C, Kk, Kk}), Tensor(bv, {O}), {1, 1}, {pad, pad});
    };
    const std::vector<float> got = forward(Tensor(xv, {B, C, H, Wd})).data<float>();
    ASSERT_EQ(got.size(), static_cast<size_t>(B * O * OH * OW));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t o = 0; o < O; ++o)
        for (int64_t y = 0; y < OH; ++y)
          for (int64_t xx = 0; xx < OW; ++xx) {
            double want = bv[static_cast<size_t>(o)];
            for (int64_t c = 0; c < C; ++c)
              for (int64_t ky = 0; ky < Kk; ++ky)
                for (int64_t kx = 0; kx < Kk; ++kx) want += X(b, c, y + ky - pad, xx + kx - pad) * Wt(o, c, ky, kx);
            ASSERT_NEAR(got[static_cast<size_t>(((b * O + o) * OH + y) * OW + xx)], want, 1e-4 * (1 + std::abs(want)))
                << "forward " << b << ", " << o << ", " << y << ", " << xx;
          }
    // The gradient on a graph of its own (reading the forward's values realized the first one).
    Tensor x(xv, {B, C, H, Wd});
    x.requires_grad_();
    (forward(x) * Tensor(gv, {B, O, OH, OW})).sum().backward();
    const std::vector<float> dx = x.grad().data<float>();
    ASSERT_EQ(dx.size(), xv.size());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t xx = 0; xx < Wd; ++xx) {
            double want = 0;
            const size_t at = static_cast<size_t>(((b * C + c) * H + y) * Wd + xx);
            if (xv[at] > 0)
              for (int64_t o = 0; o < O; ++o)
                for (int64_t ky = 0; ky < Kk; ++ky)
                  for (int64_t kx = 0; kx < Kk; ++kx) {
                    const int64_t oy = y + pad - ky, ox = xx + pad - kx;
                    if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                    want += double(gv[static_cast<size_t>(((b * O + o) * OH + oy) * OW + ox)]) * Wt(o, c, ky, kx);
                  }
            ASSERT_NEAR(dx[at], want, 1e-4 * (1 + std::abs(want)))
                << "input gradient " << b << ", " << c << ", " << y << ", " << xx;
          }
  }
};

// "name MERGE(...)" of a kernel whose opts merge ranges, the name without its tile suffix (_up4x64): which ranges
// merge does not depend on the vector width, the tile's shape does (AVX2 machines, HCQ_CPU_FEATURES=-avx512f).
std::string merge_of(const RenderedKernel& rk) {
  const size_t at = rk.opts.find("MERGE(");
  if (at == std::string::npos) return {};
  return rk.name.substr(0, rk.name.rfind("_up")) + " " + rk.opts.substr(at, rk.opts.find(')', at) + 1 - at);
}

// Merged ranges are a CPU device's (render_c.cpp): with HCQ_NOOPT, or with HCQ_DEVICE naming a GPU (CI's framework
// runs on the simulators), no kernel merges, and the values are checked all the same.
bool merges_expected(bool no_opt) { return !no_opt && Tensor::zeros({1}).device().rfind("CPU", 0) == 0; }

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

// 8 x 8 outputs: 64 lanes, one 4-vector column block per image (the batch stays outside the tile). (The input
// gradient's 3 channels are rows no tile divides: it keeps the plain loops.)
TEST_P(FrameworkRegisterTileValues, ConvolutionColumnsMergedPerImage) {
  ConvolutionValues v;
  v.check(2, 3, 10, 10, 8, 3, 0);
  if (!merges_expected(GetParam())) {
    EXPECT_TRUE(v.merged.empty()) << joined(v.merged);
    return;
  }
  EXPECT_EQ(joined(v.merged), "r_2_8_8_8_3_3_3 MERGE(2,3)\n");
}

// Padding 2 around 12 x 20 images (a 5 x 5 window): the forward's windows are masked at the borders, and runs of
// the 16 x 24 output rows straddle the column blocks. Enough work for two workers: with the batch merged the column
// blocks are split between them (THREAD on the merged range).
TEST_P(FrameworkRegisterTileValues, ConvolutionColumnsMergedWithPaddingAndWorkers) {
  ConvolutionValues v;
  v.check(4, 6, 12, 20, 8, 5, 2);
  v.check(16, 8, 10, 10, 16, 3, 0);
  if (!merges_expected(GetParam())) {
    EXPECT_TRUE(v.merged.empty()) << joined(v.merged);
    return;
  }
  // 12 x 20 = 15 vectors: the batch merged in; 8 x 8 per image: the batch split over the workers.
  EXPECT_EQ(joined(v.merged),
            "r_4_8_12_20_5_5_6 MERGE(0,2,3)\nr_4_6_12_20_5_5_8 MERGE(0,2,3)\nr_16_16_8_8_8_3_3 MERGE(2,3)\n"
            "r_16_8_10_10_3_3_16 MERGE(0,2,3)\n");
}

// Merged rows (MERGE on the rows): a weight gradient over a batch large enough that its gathered panel is packed in
// blocks has its ci, ky, kx merged into one row range, all of whose rows read one panel of the output gradient.
// One input channel (conv1 of the CNN: 5 x 5 = 25 rows) and eight (8 x 3 x 3 = 72), against double loops.
TEST_P(FrameworkRegisterTileValues, ConvolutionWeightGradientRowsMerged) {
  std::vector<std::string> merged;
  set_render_hook([&](RenderedKernel& rk) {
    if (std::string m = merge_of(rk); !m.empty()) merged.push_back(m);
  });
  auto check = [](int64_t B, int64_t C, int64_t H, int64_t O, int64_t Kk) {
    check_conv_weight_gradient(B, C, H, H, O, Kk, Kk, 31);
  };
  check(32, 1, 20, 32, 5);
  check(16, 8, 18, 16, 3);
  set_render_hook({});
  std::string m;
  for (const std::string& x : merged) m += x + "\n";
  if (!merges_expected(GetParam())) {
    EXPECT_EQ(m, "");
    return;
  }
  // Which of the two merges depends on the vector width (the panel's size decides whether it is packed in blocks:
  // with AVX-512 the first, with AVX2 the second); the values are checked for both.
  EXPECT_TRUE(m == "r_32_5_5_32_16_16 MERGE(1,2)\n" || m == "r_16_8_3_3_16_16_16 MERGE(1,2,3)\n") << m;
}

INSTANTIATE_TEST_SUITE_P(OptAndNoOpt, FrameworkRegisterTileValues, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "NoOpt" : "Opt"; });

}  // namespace
}  // namespace hcq::fw
