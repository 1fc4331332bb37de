// Host twins: how the simulated AMD GPU runs a kernel. A twin is a CPU build of the same kernel source (the CPU
// device's kernel ABI, drivers/cpu/kernel_abi.h), registered under the identity of the AMD code object it stands
// for (amd::CodeObject::identity()) and the kernel's name. A dispatch names the kernel by the address the GPU was
// told (COMPUTE_PGM_LO/HI: its first instruction; AQL kernel_object: its descriptor); the registry knows which code
// object image lives at which GPU VA, finds the twin and runs it over the grid, reading the arguments from the
// kernarg segment exactly as the GPU ABI lays them out (8-byte buffer addresses, then 32-bit values).
//
// One registry per simulated GPU, owned by it. Thread-safe: queues dispatch concurrently while programs load and
// unload; a running twin keeps its code alive (shared ownership) even if it is unregistered meanwhile.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "cpu_mappings.hpp"  // cpu::KernelFn, cpu::KernelEntry (the CPU kernel ABI)

namespace hcq {
class Compiler;
namespace amd {
class CodeObject;
}
namespace cpu {
class CpuThreadPool;
}
}  // namespace hcq

namespace hcq::sim {

struct Twin {
  cpu::KernelEntry entry;              // the CPU function and its argument counts (from <name>_hcq_desc)
  std::shared_ptr<const void> owner;   // keeps the code mapped (a cpu::ElfImage)
};

// How the GPU named the kernel.
enum class KernelRef {
  code_address,   // COMPUTE_PGM_LO/HI << 8: the first instruction (PM4 DISPATCH_DIRECT)
  kernel_object,  // the kernel descriptor's address (AQL kernel dispatch packet)
};

struct TwinDispatch {
  KernelRef by = KernelRef::code_address;
  uint64_t address = 0;
  uint64_t kernarg_va = 0;
  std::array<uint32_t, 3> groups{1, 1, 1};  // workgroup counts
  std::array<uint32_t, 3> local{1, 1, 1};   // work-items per workgroup
};

// GPU VA -> host pointer for [va, va + size), or nullptr when any of it is unmapped (the KFD simulator's translate).
using Translate = std::function<std::byte*(uint64_t va, uint64_t size)>;

class TwinRegistry {
 public:
  // ---- twins ----
  // Registers (or replaces) the twin of `kernel` in the code object `code_object_id`.
  void add(const std::string& code_object_id, const std::string& kernel, Twin twin);
  std::optional<Twin> find(const std::string& code_object_id, const std::string& kernel) const;
  // Builds the twins of every kernel of `co` from the C source the AMD compiler embedded (.hcq.source), with
  // `cpu_compiler` (the CPU device's compiler; its cache serves repeated loads) and the CPU ELF loader. Returns the
  // number of kernels registered: 0 when the object carries no source (then dispatches fault until someone adds a
  // twin). Throws CompileError when the CPU build fails or disagrees with the code object (a kernel missing, other
  // buffer/value counts).
  size_t add_from_source(const amd::CodeObject& co, Compiler& cpu_compiler);

  // ---- where code objects live ----
  // The image of `co` was uploaded at GPU VA `base`. Throws InvalidArgument if it overlaps an image already mapped.
  void map_image(uint64_t base, const amd::CodeObject& co);
  // Forgets the image mapped at `base` (no-op when none is).
  void unmap_image(uint64_t base);

  struct Resolved {
    std::string code_object_id, kernel;
    uint64_t image_base = 0;
    uint32_t kernarg_segment_size = 0;
    Twin twin;
  };
  // The kernel at `address`. Throws DeviceFault naming the address and what is there instead (no image, an image
  // but no kernel entry at that offset, or a kernel with no twin: "no host twin for kernel 'k' of code object ...").
  Resolved resolve(KernelRef by, uint64_t address) const;

  // Runs the dispatch on the calling thread (or on `pool`, which then must not be in use by anyone else). Throws
  // DeviceFault when the kernel cannot be resolved, the kernargs or a buffer are unmapped, or the grid is empty.
  void run(const TwinDispatch& d, const Translate& translate, cpu::CpuThreadPool* pool = nullptr) const;

 private:
  struct KernelAt {
    std::string name;
    uint64_t descriptor_offset, code_offset;
    uint32_t kernarg_segment_size;
  };
  struct Image {
    uint64_t size;
    std::string id;
    std::vector<KernelAt> kernels;
  };
  mutable std::shared_mutex mu_;
  std::map<std::pair<std::string, std::string>, Twin> twins_;  // (code object id, kernel) -> twin
  std::map<uint64_t, Image> images_;                           // base VA -> image
};

}  // namespace hcq::sim
