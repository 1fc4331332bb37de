// Host twins: how the simulated GPUs run a kernel. A twin is a CPU build of the same kernel source (the host section
// of the kernel ABI, include/hcq/kernel_abi.h), registered under the identity of the GPU binary it stands for
// (amd::CodeObject::identity(), nv::Cubin::identity()) and the kernel's name. A dispatch names the kernel by the
// address the GPU was told (COMPUTE_PGM_LO/HI or the QMD's program address: its first instruction; AQL
// kernel_object: its descriptor); the registry knows which image lives at which GPU VA, finds the twin and runs it
// over the grid, reading the arguments exactly as the GPU ABI lays them out (8-byte buffer addresses, then 32-bit
// values): from the kernarg segment on AMD, from the parameter space of constant bank 0 on NV.
//
// The registry itself is vendor-neutral (ImageDesc, SourceKernel); the AMD overloads below and nv_twins.hpp turn a
// code object or a cubin into those.
//
// The code is checked where the GPU would fetch it: at each dispatch the image's bytes are read from GPU memory and
// compared with what was loaded there (a garbled or missing upload faults), and with a GPU view the kernel entry must
// be mapped executable. The twin then runs on the GPU's mirror (sim/common/gpu_view.hpp) under a GuardedRun, so its
// every access is checked against the GPU's page tables.
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
#include <string_view>
#include <vector>

#include "cpu/host_kernel.hpp"  // cpu::KernelEntry: what the CPU backend publishes for host twins
#include "hcq/error.hpp"
#include "sim/common/guarded_run.hpp"

namespace hcq {
class Compiler;
namespace amd {
class CodeObject;
}
}  // namespace hcq

namespace hcq::sim {

class GpuView;

struct Twin {
  cpu::KernelEntry entry;             // the CPU function and its argument counts (from <name>_hcq_desc)
  std::shared_ptr<const void> owner;  // keeps the code mapped (a cpu::ElfImage)
};

// How the GPU named the kernel.
enum class KernelRef {
  code_address,   // COMPUTE_PGM_LO/HI << 8: the first instruction (PM4 DISPATCH_DIRECT)
  kernel_object,  // the kernel descriptor's address (AQL kernel dispatch packet)
};

struct TwinDispatch {
  KernelRef by = KernelRef::code_address;
  uint64_t address = 0;
  // AMD: the kernarg segment. NV: constant bank 0 (the arguments start at the kernel's ImageKernel::kernarg_offset).
  uint64_t kernarg_va = 0;
  std::array<uint32_t, 3> groups{1, 1, 1};  // workgroup counts
  std::array<uint32_t, 3> local{1, 1, 1};   // work-items per workgroup
  // NV: the constant banks 1..7 the QMD binds (bank 0 is kernarg_va). AMD: none.
  struct Bank {
    uint32_t bank = 0;
    uint64_t va = 0;
    uint32_t size = 0;
  };
  std::vector<Bank> banks;
};

// GPU VA -> host pointer for [va, va + size), or nullptr when any of it is unmapped (the KFD simulator's translate).
using Translate = std::function<std::byte*(uint64_t va, uint64_t size)>;

// What a dispatch reaches GPU memory through.
struct TwinMemory {
  Translate translate;      // the kernarg segment, the code check, buffers outside the view
  GpuView* view = nullptr;  // the GPU's mirror (null: buffers through translate, unguarded but for stand-ins)
};

// The GPU could not fetch what the dispatch needs, its code or its kernarg segment: not mapped on it, or code
// (`no_execute`) mapped without execute permission. A page fault at `address`, on hardware as here.
class FetchFault : public DeviceFault {
 public:
  FetchFault(uint64_t address, bool no_execute, const std::string& what)
      : DeviceFault(what), address_(address), no_execute_(no_execute) {}
  uint64_t address() const { return address_; }
  bool no_execute() const { return no_execute_; }

 private:
  uint64_t address_;
  bool no_execute_;
};

// A kernel of a GPU image, as the registry needs it whatever the vendor.
struct ImageKernel {
  std::string name;
  uint64_t code_offset = 0;                   // first instruction, from the image base
  std::optional<uint64_t> descriptor_offset;  // AMD: the kernel descriptor (AQL kernel_object); NV: none
  uint32_t kernarg_offset = 0;                // where the arguments start in the memory TwinDispatch::kernarg_va names
  uint32_t kernarg_size = 0;                  // bytes the binary reserves for them there
  // NV: constant banks the kernel's code reads (c[bank][...]) from bytes of the image; a dispatch must bind each
  // to memory holding those bytes (TwinDispatch::banks). AMD: none.
  struct Bank {
    uint32_t bank = 0;
    uint64_t offset = 0;  // in the image
    uint32_t size = 0;
  };
  std::vector<Bank> banks;
};
// A GPU image: its identity (the key of its twins), the bytes uploaded to GPU memory (relocated for where they
// are) and its kernels.
struct ImageDesc {
  std::string id;
  std::vector<uint8_t> bytes;
  std::vector<ImageKernel> kernels;
  uint64_t size() const { return bytes.size(); }
};
// A kernel to build a twin for, with the argument counts the GPU binary declares (nullopt: it does not say).
struct SourceKernel {
  std::string name;
  std::optional<uint32_t> nbufs, nvals;
  uint32_t kernarg_size = 0;  // the twin may read at most this many argument bytes (0: unchecked)
};

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
  // The same for any vendor: builds `source` with `cpu_compiler` and registers a twin for each of `kernels` under
  // `image_id`; `what` names the binary in errors ("sm_90 cubin"). Returns kernels.size(); 0 when source is empty.
  // Throws CompileError when the CPU build lacks a kernel or its HCQ_KERNEL counts disagree with the binary's.
  size_t add_from_source(const std::string& image_id, std::string_view what, std::string_view source,
                         const std::vector<SourceKernel>& kernels, Compiler& cpu_compiler);

  // ---- where code objects live ----
  // The image of `co` was uploaded at GPU VA `base` (its bytes as AmdDevice uploads them: image_at(base) where it
  // has relocations). Throws InvalidArgument if it overlaps an image already mapped.
  void map_image(uint64_t base, const amd::CodeObject& co);
  // The same for any vendor's image.
  void map_image(uint64_t base, ImageDesc image);
  // Forgets the image mapped at `base` (no-op when none is).
  void unmap_image(uint64_t base);

  struct Resolved {
    std::string code_object_id, kernel;
    uint64_t image_base = 0;
    uint32_t kernarg_segment_size = 0;                  // ImageKernel::kernarg_size
    uint32_t kernarg_offset = 0;                        // ImageKernel::kernarg_offset
    uint64_t code_offset = 0;                           // ImageKernel::code_offset
    std::shared_ptr<const std::vector<uint8_t>> bytes;  // what was uploaded at image_base
    Twin twin;
    std::vector<ImageKernel::Bank> banks;  // ImageKernel::banks
  };
  // The kernel at `address`. Throws DeviceFault naming the address and what is there instead (no image, an image
  // but no kernel entry at that offset, or a kernel with no twin: "no host twin for kernel 'k' of code object ...").
  Resolved resolve(KernelRef by, uint64_t address) const;

  // Runs the dispatch on the calling thread, guarded (guarded_run.hpp). Returns the kernel's first access that
  // faulted (the kernel stopped there), or nullopt when it ran to its end. Throws FetchFault when the code is not
  // mapped (executable) on the GPU or the kernargs are not mapped, DeviceFault when the kernel cannot be resolved,
  // its code in GPU memory differs from what was loaded there, or the grid is empty.
  std::optional<GuestFault> run(const TwinDispatch& d, const TwinMemory& mem) const;

 private:
  void check_code(const Resolved& r, const std::string& what, const TwinMemory& mem) const;
  // Each bank the kernel reads is bound, big enough, mapped, and holds the image's bytes (a twin reads its
  // constants from its own build, so a wrong bank would otherwise pass here and fail on the GPU).
  void check_banks(const Resolved& r, const TwinDispatch& d, const std::string& what, const TwinMemory& mem) const;

  mutable std::shared_mutex mu_;
  std::map<std::pair<std::string, std::string>, Twin> twins_;  // (image id, kernel) -> twin
  struct Mapped {
    std::string id;
    std::shared_ptr<const std::vector<uint8_t>> bytes;  // shared with dispatches that resolved it
    std::vector<ImageKernel> kernels;
  };
  std::map<uint64_t, Mapped> images_;  // base VA -> image
};

}  // namespace hcq::sim
