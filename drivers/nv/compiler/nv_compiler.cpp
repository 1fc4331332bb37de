#include "nv/compiler/nv_compiler.hpp"

#include "common/kernel_abi_text.hpp"
#include "hcq/error.hpp"
#include "nv/compiler/nvrtc.hpp"
#include "nv/cubin/cubin.hpp"

namespace hcq::nv {
namespace {

constexpr const char* kSourceSection = ".hcq.source";

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

}  // namespace

NvCompiler::NvCompiler(std::string arch, std::vector<std::string> nvrtc_candidates)
    : arch_(std::move(arch)),
      candidates_(nvrtc_candidates.empty() ? Nvrtc::default_candidates() : std::move(nvrtc_candidates)) {}

NvCompiler::~NvCompiler() = default;

const Nvrtc& NvCompiler::nvrtc() const {
  std::call_once(once_, [this] {
    try {
      nvrtc_ = Nvrtc::open(candidates_);
    } catch (const CompileError& e) {
      open_error_ = e.what();
    }
  });
  if (!nvrtc_) throw CompileError(open_error_);
  return *nvrtc_;
}

std::vector<std::string> NvCompiler::nvrtc_options() const {
  // -default-device: kernel sources are C, whose helper functions carry no __device__.
  return {"--gpu-architecture=" + arch_, "-default-device", "--std=c++17", "-diag-suppress=177,550"};
}

std::string NvCompiler::options() const {
  std::string s = "lang=c";
  for (const std::string& o : nvrtc_options()) s += " " + o;
  return s + cat(" prelude=", hex(fnv1a(drivers::kKernelAbiText)), " +.hcq.source");
}

std::string NvCompiler::identity() const {
  try {
    const Nvrtc& n = nvrtc();
    return cat("NVRTC ", n.major(), ".", n.minor());
  } catch (const CompileError&) {
    return "NVRTC unavailable";
  }
}

std::vector<uint8_t> NvCompiler::compile(std::string_view source) {
  if (arch_.size() < 4 || arch_.compare(0, 3, "sm_") != 0)
    throw CompileError(cat("NV compiler: target '", arch_, "' is not an SM version like sm_90"));
  const Nvrtc& n = nvrtc();
  std::string text = drivers::kKernelAbiText;
  text += "\n#line 1 \"kernel.c\"\n";
  text += source;
  const Nvrtc::Result r = n.compile(text, "kernel.cu", nvrtc_options());
  if (!r.ok)
    throw CompileError(
        cat("NV kernel compile for ", arch_, " failed (NVRTC ", n.major(), ".", n.minor(), "):\n", r.log));
  // What we hand out must load: an NVRTC surprise is caught here, not at launch.
  const Cubin plain = Cubin::parse(r.cubin);
  if (std::to_string(plain.sm()) != arch_.substr(3, arch_.find_first_not_of("0123456789", 3) - 3))
    throw CompileError(cat("NV compile: asked for ", arch_, ", the cubin says ", plain.arch()));
  if (plain.kernels().empty())
    throw CompileError(
        cat("NV compile for ", arch_, ": no kernel found: declare one with HCQ_KERNEL(name, nbufs, nvals)"));
  const std::span<const uint8_t> src(reinterpret_cast<const uint8_t*>(source.data()), source.size());
  return append_section(r.cubin, kSourceSection, src);
}

}  // namespace hcq::nv
