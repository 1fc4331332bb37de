// Compile once (framework.md, contract 9): kernels are deduplicated by (device, source), compiled in parallel
// through the device compiler's disk cache (Compiler::compile_cached), loaded, and kept in an in-process cache.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "framework/codegen/render.hpp"
#include "hcq/program.hpp"

namespace hcq::fw {

struct CompiledKernel {
  std::string device;
  RenderedKernel rendered;
  std::unique_ptr<Program> program;
};

struct KernelRequest {
  std::string device;
  RenderedKernel rendered;
};

// One CompiledKernel per request (equal requests share one). Misses compile on up to one thread per core.
// A failed compile throws CompileError with the generated source, numbered, beside the compiler's message.
std::vector<std::shared_ptr<const CompiledKernel>> compile_kernels(const std::vector<KernelRequest>& requests);

// In-process cache misses so far (each was compiled, or read from the disk cache).
uint64_t kernels_compiled();

}  // namespace hcq::fw
