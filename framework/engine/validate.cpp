#include "framework/engine/validate.hpp"

#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/compile.hpp"
#include "framework/engine/fault_context.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/jit.hpp"
#include "hcq/knobs.hpp"
#include "hcq/program.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

// The CPU device's build of a kernel's AST, rendered for the CPU target; kept per AST (the schedule cache keeps the
// ASTs alive, and the map keeps its keys).
std::shared_ptr<const CompiledKernel> cpu_kernel(const Node& ast) {
  static std::mutex mu;
  static auto* built =
      new std::unordered_map<const NodeData*, std::pair<Node, std::shared_ptr<const CompiledKernel>>>();
  {
    std::lock_guard lock(mu);
    if (auto it = built->find(ast.get()); it != built->end()) return it->second.second;
  }
  Device& cpu = open_device("CPU");
  RenderedKernel rk = render_c(ast, target_facts(cpu.info(), knobs::cpu_threads(), !knobs::noopt()));
  std::shared_ptr<const CompiledKernel> k = compile_kernels({KernelRequest{cpu.name(), std::move(rk)}}).front();
  std::lock_guard lock(mu);
  built->emplace(ast.get(), std::make_pair(ast, k));
  return k;
}

// A float's tolerance: relative to the CPU's value, plus an absolute floor for values near zero. Integers and bools
// are exact.
struct Tolerance {
  double rel = 0, abs = 0;
};
Tolerance tolerance(DType t) {
  switch (t) {
    case DType::float32: return {1e-4, 1e-5};
    case DType::float16: return {1e-2, 1e-3};
    case DType::bfloat16: return {2e-2, 1e-2};
    default: return {};
  }
}

double widen_half(uint16_t h, bool bf16) {
  uint32_t bits = 0;
  if (bf16) {
    bits = uint32_t{h} << 16;
  } else {  // IEEE half: sign, 5-bit exponent, 10-bit fraction
    const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, frac = h & 0x3ff;
    if (exp == 0) return (sign ? -1.0 : 1.0) * std::ldexp(frac, -24);
    if (exp == 31) return frac ? NAN : (sign ? -INFINITY : INFINITY);
    bits = (sign << 31) | ((exp + 112) << 23) | (frac << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double value(DType t, const std::byte* p) {
  auto load = [p]<class T>(T) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  };
  switch (t) {
    case DType::float32: return load(float{});
    case DType::float16: return widen_half(load(uint16_t{}), false);
    case DType::bfloat16: return widen_half(load(uint16_t{}), true);
    case DType::int32: return load(int32_t{});
    case DType::uint32: return load(uint32_t{});
    case DType::int64: return static_cast<double>(load(int64_t{}));
    case DType::int8: return load(int8_t{});
    case DType::uint8:
    case DType::bool_: return load(uint8_t{});
  }
  return 0;
}

bool close(double got, double want, Tolerance tol) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (std::isinf(got) || std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol.abs + tol.rel * std::abs(want);
}

}  // namespace

std::optional<Mismatch> first_mismatch(DType t, std::span<const std::byte> got, std::span<const std::byte> want,
                                       std::optional<DType> tolerance_of) {
  const size_t size = dtype_size(t);
  const DType tt = tolerance_of.value_or(t);
  const Tolerance tol = tolerance(tt);
  for (size_t at = 0; at + size <= got.size() && at + size <= want.size(); at += size) {
    const double g = value(t, got.data() + at), w = value(t, want.data() + at);
    if (!close(g, w, tol))
      return Mismatch{at / size, g, w, cat(dtype_name(tt), " tolerance ", tol.abs, " + ", tol.rel)};
  }
  return std::nullopt;
}

bool validates(const Step& step) {
  return step.kind == Step::Kind::kernel && knobs::validate() &&
         step.kernel->program->device().info().interface != "cpu";
}

void run_validated(const Step& step, const Node& ast, DType out, std::span<Buffer* const> bufs,
                   std::span<const uint32_t> vals) {
  const Program& prog = *step.kernel->program;
  Device& dev = prog.device();
  explaining_faults(dev, [&] { dev.synchronize(); });
  // The buffers as the kernel finds them (an assign reads its output too).
  std::vector<std::vector<std::byte>> before(bufs.size());
  std::vector<uint64_t> addrs(bufs.size(), 0);
  for (size_t j = 0; j < bufs.size(); ++j) {
    if (!bufs[j]) continue;
    before[j].resize(bufs[j]->size());
    bufs[j]->copyout(std::span<std::byte>(before[j]));
    addrs[j] = bufs[j]->va();
  }
  try {
    prog(addrs, vals, step.global, step.local, true);
  } catch (const DeviceFault& e) {
    throw DeviceFault(cat(e.what(), "\n  in kernel ", step.what));
  }
  if (!bufs[0]) return;
  std::vector<std::byte> got(bufs[0]->size());
  bufs[0]->copyout(std::span<std::byte>(got));

  // The same on the CPU device.
  const std::shared_ptr<const CompiledKernel> cpu = cpu_kernel(ast);
  Device& cpu_dev = cpu->program->device();
  std::vector<Buffer> copies;
  copies.reserve(bufs.size());
  std::vector<uint64_t> cpu_addrs(bufs.size(), 0);
  for (size_t j = 0; j < bufs.size(); ++j) {
    if (!bufs[j]) continue;
    copies.emplace_back(cpu_dev, bufs[j]->size());
    copies.back().copyin(std::span<const std::byte>(before[j]));
    cpu_addrs[j] = copies.back().va();
  }
  (*cpu->program)(cpu_addrs, vals, cpu->rendered.global, cpu->rendered.local, true);
  std::vector<std::byte> want(got.size());
  copies.front().copyout(std::span<std::byte>(want));

  if (const std::optional<Mismatch> m = first_mismatch(out, got, want))
    throw ValidationError(cat("HCQ_VALIDATE: kernel ", step.what, " on ", dev.name(),
                              " differs from the CPU device at element ", m->element, ": ", dev.name(), " ", m->got,
                              ", CPU ", m->want, " (", m->tolerance,
                              " * |CPU|). The kernel is wrong on this device (its generated code, its compiler or the "
                              "device): report it with this message; HCQ_NOOPT=1 may avoid it"));
}

}  // namespace hcq::fw
