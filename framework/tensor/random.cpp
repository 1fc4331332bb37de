// Counter-based random numbers: element i of the k-th random tensor since manual_seed(s) is a hash of (s, k, i),
// computed inside the kernel with 32-bit integer ops, so it is the same on every device and under any fusion.
// The per-tensor key (from s and k) is a variable of its own, bound to the key (an anonymous hcq::Variable: a 32-bit
// kernel value) rather than a constant baked into the kernel: every random tensor of a shape is then the same kernel
// (a schedule-cache hit, nothing new to compile), nothing is written to the device to draw, and a TinyJit replay
// draws new numbers by binding new keys to the captured variables (framework/tensor/rng.hpp).
#include <atomic>
#include <cmath>
#include <limits>
#include <numbers>

#include "framework/engine/realize.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/tensor/build.hpp"
#include "framework/tensor/rng.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

using namespace fw;

namespace {

std::atomic<uint64_t> g_seed{0}, g_counter{0};
std::atomic<int64_t> g_next_key_variable{0};  // never reset: each draw's variable is its own

uint32_t mix64to32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

// The murmur3 finaliser over (index * golden ratio + key): 32 well-mixed bits per element.
Node random_bits(int64_t n, const std::string& dev) {
  const uint64_t k = g_counter.fetch_add(1);
  const uint32_t key = rng_key(g_seed.load(), k);
  const Shape s{n};
  auto c = [&](uint32_t v) { return t_full(s, static_cast<int64_t>(v), DType::uint32, dev); };
  Node key_node = c(key);  // no elements: nothing reads the key
  if (n > 0) {
    // Anonymous (no name): callify numbers it like any variable but leaves its identity out of the schedule.
    const Node var = make_node(
        Op::DEFINE_VAR, DType::int32, {},
        {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), g_next_key_variable.fetch_add(1)});
    const Node bound = make_node(Op::BIND, DType::int32, {var}, {static_cast<int32_t>(key)}, 0, dev);
    if (CaptureSink* capture = capture_sink()) capture->rng_draw(var, k);
    key_node = t_expand(t_reshape(t_cast(bound, DType::uint32), {1}), s);
  }
  Node h = t_alu(Op::ADD, DType::uint32,
                 {t_alu(Op::MUL, DType::uint32, {t_index(n, DType::uint32, dev), c(0x9e3779b1u)}), key_node});
  h = t_alu(Op::XOR, DType::uint32, {h, t_alu(Op::SHR, DType::uint32, {h, c(16)})});
  h = t_alu(Op::MUL, DType::uint32, {h, c(0x85ebca6bu)});
  h = t_alu(Op::XOR, DType::uint32, {h, t_alu(Op::SHR, DType::uint32, {h, c(13)})});
  h = t_alu(Op::MUL, DType::uint32, {h, c(0xc2b2ae35u)});
  h = t_alu(Op::XOR, DType::uint32, {h, t_alu(Op::SHR, DType::uint32, {h, c(16)})});
  return h;
}

// [0, 1) from the top bits of the hash: as many as the dtype's significand holds (24 for float32, 11 for float16, 8
// for bfloat16), so rounding to the dtype can never give 1.0.
Tensor unit_uniform(const Shape& shape, const std::string& device, DType dtype = DType::float32) {
  const int bits = dtype == DType::float16 ? 11 : dtype == DType::bfloat16 ? 8 : 24;
  for (int64_t d : shape)
    if (d < 0) throw ShapeError(hcq::cat("rand: negative dimension in ", shape_str(shape)));
  const std::string& dev = canonical_device(device);
  const int64_t n = fw::numel(shape);
  Node hash = random_bits(n, dev);
  Node top = t_alu(Op::SHR, DType::uint32, {hash, t_full({n}, 32 - bits, DType::uint32, dev)});
  Node f = t_alu(Op::MUL, DType::float32,
                 {t_cast(top, DType::float32), t_full({n}, std::ldexp(1.0, -bits), DType::float32, dev)});
  return Tensor(t_reshape(f, shape));
}

}  // namespace

namespace fw {
uint32_t rng_key(uint64_t seed, uint64_t k) { return mix64to32(seed * 0x9e3779b97f4a7c15ull + k); }
uint64_t rng_seed() { return g_seed.load(); }
uint64_t rng_take(uint64_t n) { return g_counter.fetch_add(n); }
uint64_t rng_counter() { return g_counter.load(); }
void set_rng_counter(uint64_t k) { g_counter = k; }
}  // namespace fw

void Tensor::manual_seed(uint64_t seed) {
  g_seed = seed;
  g_counter = 0;
}

Tensor Tensor::rand(Shape shape, DType dtype, std::string device) {
  return unit_uniform(shape, device, dtype).cast(dtype);
}

// Box-Muller over two independent uniform tensors.
Tensor Tensor::randn(Shape shape, DType dtype, std::string device) {
  const Tensor u1 = unit_uniform(shape, device), u2 = unit_uniform(shape, device);
  const Tensor r = u1.neg().add(1.0).log().mul(-2.0).sqrt();
  return r.mul(u2.mul(2.0 * std::numbers::pi).cos()).cast(dtype);
}

Tensor Tensor::uniform(Shape shape, double low, double high, DType dtype, std::string device) {
  if (!(low <= high)) throw InvalidArgument(hcq::cat("uniform: low ", low, " is greater than high ", high));
  return unit_uniform(shape, device, dtype).mul(high - low).add(low).cast(dtype);
}

}  // namespace hcq
