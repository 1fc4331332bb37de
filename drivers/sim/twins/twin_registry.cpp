#include "twins/twin_registry.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "amd/codeobj/code_object.hpp"
#include "cpu/elf_loader.hpp"
#include "cpu/host_kernel.hpp"
#include "hcq/compiler.hpp"
#include "hcq/error.hpp"
#include "hcq/kernel_abi.h"
#include "hcq/knobs.hpp"
#include "sim/common/gpu_view.hpp"

namespace hcq::sim {
namespace {

constexpr const char* kSourceSection = ".hcq.source";
constexpr uint32_t kMaxArgs = 256;

std::string kernel_ref_text(KernelRef by, uint64_t address) {
  return cat(by == KernelRef::code_address ? "code address " : "kernel object ", hex(address));
}

}  // namespace

void TwinRegistry::add(const std::string& code_object_id, const std::string& kernel, Twin twin) {
  if (!twin.entry.fn) throw InvalidArgument(cat("host twin for kernel '", kernel, "' has no function"));
  std::unique_lock lock(mu_);
  twins_[{code_object_id, kernel}] = std::move(twin);
}

std::optional<Twin> TwinRegistry::find(const std::string& code_object_id, const std::string& kernel) const {
  std::shared_lock lock(mu_);
  const auto it = twins_.find({code_object_id, kernel});
  if (it == twins_.end()) return std::nullopt;
  return it->second;
}

size_t TwinRegistry::add_from_source(const amd::CodeObject& co, Compiler& cpu_compiler) {
  const std::span<const uint8_t> src = co.section(kSourceSection);
  std::vector<SourceKernel> kernels;
  for (const amd::CodeObjectKernel& k : co.kernels()) kernels.push_back({k.name, k.num_buffers, k.num_values, 0});
  return add_from_source(co.identity(), cat(co.gfx(), " code object"),
                         std::string_view(reinterpret_cast<const char*>(src.data()), src.size()), kernels,
                         cpu_compiler);
}

size_t TwinRegistry::add_from_source(const std::string& image_id, std::string_view what, std::string_view source,
                                     const std::vector<SourceKernel>& kernels, Compiler& cpu_compiler) {
  if (source.empty()) return 0;
  const std::vector<uint8_t> object = cpu_compiler.compile_cached(source);
  auto image = std::make_shared<const cpu::ElfImage>(cpu::ElfImage::load(object));
  size_t added = 0;
  for (const SourceKernel& k : kernels) {
    const std::optional<cpu::ElfSymbol> fn = image->find(k.name);
    const std::optional<cpu::ElfSymbol> desc_sym = image->find(k.name + "_hcq_desc");
    if (!fn || fn->type != STT_FUNC || !desc_sym || desc_sym->size < sizeof(hcq_kernel_desc))
      throw CompileError(cat("host twin of ", what, " ", image_id, ": the CPU build has no kernel '", k.name,
                             "' declared with HCQ_KERNEL"));
    hcq_kernel_desc desc;
    std::memcpy(&desc, reinterpret_cast<const void*>(desc_sym->addr), sizeof desc);
    if (desc.magic != HCQ_KERNEL_MAGIC || desc.nbufs > kMaxArgs || desc.nvals > kMaxArgs)
      throw CompileError(cat("host twin of kernel '", k.name, "': bad descriptor (magic ", hex(desc.magic), ")"));
    if ((k.nbufs && desc.nbufs != *k.nbufs) || (k.nvals && desc.nvals != *k.nvals))
      throw CompileError(cat("host twin of kernel '", k.name, "' takes ", desc.nbufs, " buffers and ", desc.nvals,
                             " values; the ", what, " says ", k.nbufs.value_or(desc.nbufs), " and ",
                             k.nvals.value_or(desc.nvals)));
    if (k.kernarg_size && uint64_t{desc.nbufs} * 8 + uint64_t{desc.nvals} * 4 > k.kernarg_size)
      throw CompileError(cat("host twin of kernel '", k.name, "' reads ", desc.nbufs, " buffers and ", desc.nvals,
                             " values; the ", what, " has only ", k.kernarg_size, " argument bytes"));
    add(image_id, k.name,
        Twin{cpu::KernelEntry{reinterpret_cast<cpu::KernelFn>(fn->addr), desc.nbufs, desc.nvals}, image});
    ++added;
  }
  return added;
}

void TwinRegistry::map_image(uint64_t base, const amd::CodeObject& co) {
  ImageDesc img{co.identity(), co.relocations().empty() ? co.image() : co.image_at(base), {}};
  for (const amd::CodeObjectKernel& k : co.kernels())
    img.kernels.push_back({k.name, k.code_offset, k.descriptor_offset, 0, k.kernarg_segment_size, {}});
  map_image(base, std::move(img));
}

void TwinRegistry::map_image(uint64_t base, ImageDesc img) {
  const uint64_t size = img.size();
  if (size == 0 || base + size < base)
    throw InvalidArgument(cat("GPU image of ", size, " bytes at ", hex(base), " does not fit"));
  for (const ImageKernel& k : img.kernels)
    for (const ImageKernel::Bank& b : k.banks)
      if (b.offset > size || b.size > size - b.offset)
        throw InvalidArgument(cat("GPU image ", img.id, ": constant bank ", b.bank, " of kernel '", k.name, "' [",
                                  hex(b.offset), ", +", b.size, ") lies outside its ", size, " bytes"));
  std::unique_lock lock(mu_);
  auto next = images_.lower_bound(base);
  if (next != images_.end() && next->first < base + size)
    throw InvalidArgument(cat("GPU image at ", hex(base), " (+", size, ") overlaps the one at ", hex(next->first)));
  if (next != images_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second.bytes->size() > base)
      throw InvalidArgument(cat("GPU image at ", hex(base), " (+", size, ") overlaps the one at ", hex(prev->first)));
  }
  images_.emplace(base, Mapped{std::move(img.id), std::make_shared<const std::vector<uint8_t>>(std::move(img.bytes)),
                               std::move(img.kernels)});
}

void TwinRegistry::unmap_image(uint64_t base) {
  std::unique_lock lock(mu_);
  images_.erase(base);
}

TwinRegistry::Resolved TwinRegistry::resolve(KernelRef by, uint64_t address) const {
  std::shared_lock lock(mu_);
  auto it = images_.upper_bound(address);
  if (it == images_.begin() || address - std::prev(it)->first >= std::prev(it)->second.bytes->size())
    throw DeviceFault(cat("dispatch of ", kernel_ref_text(by, address), ": no code object is loaded there"));
  --it;
  const Mapped& img = it->second;
  const uint64_t off = address - it->first;
  const ImageKernel* k = nullptr;
  for (const ImageKernel& c : img.kernels)
    if (by == KernelRef::code_address ? c.code_offset == off : c.descriptor_offset == off) k = &c;
  if (!k)
    throw DeviceFault(cat("dispatch of ", kernel_ref_text(by, address), ": offset ", hex(off), " of code object ",
                          img.id, " (at ", hex(it->first), ") is not a kernel ",
                          by == KernelRef::code_address ? "entry" : "descriptor"));
  const auto twin = twins_.find({img.id, k->name});
  if (twin == twins_.end())
    throw DeviceFault(cat("dispatch of kernel '", k->name, "' (", kernel_ref_text(by, address), ", code object ",
                          img.id,
                          "): no host twin is registered for it, so the simulator cannot run it; build the "
                          "kernel from C source with the GPU's compiler (AMD or NV), or register a twin"));
  return Resolved{img.id,         k->name,   it->first,    k->kernarg_size, k->kernarg_offset,
                  k->code_offset, img.bytes, twin->second, k->banks};
}

void TwinRegistry::check_code(const Resolved& r, const std::string& what, const TwinMemory& mem) const {
  const uint64_t code_va = r.image_base + r.code_offset;
  if (mem.view && mem.view->covers(code_va, 1)) {
    const std::optional<GpuView::Range> at = mem.view->find(code_va);
    if (!at) throw FetchFault(code_va, false, cat(what, ": its code at ", hex(code_va), " is not mapped on the GPU"));
    if (!at->executable)
      throw FetchFault(code_va, true,
                       cat(what, ": its code at ", hex(code_va), " is mapped without execute permission"));
  }
  const std::vector<uint8_t>& loaded = *r.bytes;
  const std::byte* gpu = mem.translate(r.image_base, loaded.size());
  if (!gpu)
    throw FetchFault(
        r.image_base, false,
        cat(what, ": its code object at ", hex(r.image_base), " (", loaded.size(), " bytes) is not mapped on the GPU"));
  if (std::memcmp(gpu, loaded.data(), loaded.size()) != 0) {
    size_t off = 0;
    while (static_cast<uint8_t>(gpu[off]) == loaded[off]) ++off;
    throw DeviceFault(cat(what, ": the code in GPU memory differs from the code object loaded at ", hex(r.image_base),
                          " (first at byte ", off, ": ", hex(static_cast<uint8_t>(gpu[off])), ", loaded ",
                          hex(loaded[off]), "); a corrupt or overwritten upload"));
  }
}

void TwinRegistry::check_banks(const Resolved& r, const TwinDispatch& d, const std::string& what,
                               const TwinMemory& mem) const {
  for (const ImageKernel::Bank& need : r.banks) {
    const std::string bank = cat("constant bank ", need.bank);
    const auto bound =
        std::find_if(d.banks.begin(), d.banks.end(), [&](const TwinDispatch::Bank& b) { return b.bank == need.bank; });
    if (bound == d.banks.end())
      throw DeviceFault(
          cat(what, ": its code reads ", bank, " (", need.size, " bytes), which the launch does not bind"));
    if (bound->size < need.size)
      throw DeviceFault(cat(what, ": its code reads ", need.size, " bytes of ", bank, ", the launch binds ",
                            bound->size, " at ", hex(bound->va)));
    const std::byte* gpu = mem.translate(bound->va, need.size);
    if (!gpu)
      throw FetchFault(bound->va, false, cat(what, ": ", bank, " at ", hex(bound->va), " is not mapped on the GPU"));
    const uint8_t* want = r.bytes->data() + need.offset;
    for (uint32_t i = 0; i < need.size; ++i)
      if (static_cast<uint8_t>(gpu[i]) != want[i])
        throw DeviceFault(cat(what, ": ", bank, " at ", hex(bound->va), " differs from the image's bank at ",
                              hex(r.image_base + need.offset), " (first at byte ", i, ": ",
                              hex(static_cast<uint8_t>(gpu[i])), ", the image has ", hex(want[i]),
                              "); the launch binds the wrong memory"));
  }
}

std::optional<GuestFault> TwinRegistry::run(const TwinDispatch& d, const TwinMemory& mem) const {
  const Resolved r = resolve(d.by, d.address);
  const std::string what = cat("kernel '", r.kernel, "' (", kernel_ref_text(d.by, d.address), ")");
  for (int i = 0; i < 3; ++i) {
    if (d.groups[i] == 0 || d.local[i] == 0)
      throw DeviceFault(cat(what, ": empty grid {", d.groups[0], ",", d.groups[1], ",", d.groups[2], "} x {",
                            d.local[0], ",", d.local[1], ",", d.local[2], "}"));
  }
  check_code(r, what, mem);
  check_banks(r, d, what, mem);
  const cpu::KernelEntry& e = r.twin.entry;
  const uint64_t kernarg_bytes = uint64_t{e.nbufs} * 8 + uint64_t{e.nvals} * 4;
  if (kernarg_bytes > r.kernarg_segment_size)
    throw DeviceFault(cat(what, ": its twin reads ", kernarg_bytes, " kernarg bytes, the code object's segment has ",
                          r.kernarg_segment_size));
  // A private copy of the kernarg segment, with each buffer address replaced by where the twin reaches it: the
  // GPU's mirror where it has one, else the driver's translation, else a stand-in whose first access faults.
  std::vector<uint64_t> args((kernarg_bytes + 7) / 8 + 1, 0);
  if (kernarg_bytes) {
    const uint64_t va = d.kernarg_va + r.kernarg_offset;
    if (va % 8 || va < d.kernarg_va)
      throw DeviceFault(cat(what, ": kernarg address ", hex(va), " is not 8-byte aligned"));
    const std::byte* ka = mem.translate(va, kernarg_bytes);
    if (!ka)
      throw FetchFault(
          va, false,
          cat(what, ": kernarg segment ", hex(va), " (+", kernarg_bytes, " bytes) is not mapped on the GPU"));
    std::memcpy(args.data(), ka, kernarg_bytes);
  }
  if (mem.view) mem.view->refresh_clean_bytes();
  GuardedRun guard(mem.view);
  for (uint32_t i = 0; i < e.nbufs; ++i) {
    const std::byte* host = nullptr;
    if (mem.view && mem.view->covers(args[i], 1)) host = mem.view->at(args[i]);
    else if (!(host = mem.translate(args[i], 1))) host = guard.stand_in(args[i]);
    if (!host)
      throw DeviceFault(cat(what, ": buffer argument ", i, " at ", hex(args[i]),
                            " is not mapped on the GPU (and no address space is left to watch the kernel's access)"));
    args[i] = reinterpret_cast<uint64_t>(host);
  }
  const auto* bytes = reinterpret_cast<const unsigned char*>(args.data());
  hcq_dispatch base{};
  base.kernargs = bytes;
  base.vals = reinterpret_cast<const uint32_t*>(bytes + uint64_t{e.nbufs} * 8);
  for (int i = 0; i < 3; ++i) {
    base.num_groups[i] = d.groups[i];
    base.local_size[i] = d.local[i];
  }
  struct Grid {
    cpu::GridJob job;
    uint64_t groups;
  } grid{cpu::GridJob(e.fn, base, knobs::sim_thread_seed()), uint64_t{d.groups[0]} * d.groups[1] * d.groups[2]};
  std::optional<GuestFault> fault = guard.run(
      [](void* ctx) {
        auto* g = static_cast<Grid*>(ctx);
        cpu::GridJob::run_workgroups(&g->job, 0, g->groups);
      },
      &grid);
  if (fault) return fault;
  // A thread kernel that broke the barrier rules: a GPU would hang or compute garbage; the simulator says why.
  if (std::string why = grid.job.error(); !why.empty()) throw DeviceFault(cat(what, ": ", why));
  return std::nullopt;
}

}  // namespace hcq::sim
