// RM_ALLOC of the address-space and memory classes: FERMI_VASPACE_A, NV01_MEMORY_VIRTUAL (GPU VA ranges) and
// NV01_MEMORY_LOCAL_USER / NV01_MEMORY_SYSTEM (VRAM and system memory with their page size and placement).
#include <bit>
#include <cstring>
#include <memory>

#include "hcq/backend/align.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "sim/nv/sim_nv_rm_alloc.hpp"

namespace hcq::sim {

namespace abi = nv::abi;
namespace st = nv::abi::status;

namespace {
constexpr uint64_t kPage = SimNv::kPage;
constexpr uint64_t kBigPage = 64 << 10, kHugePage = 2 << 20;
}  // namespace

RmStatus alloc_vaspace(RmAllocRequest& r) {
  abi::VaspaceAllocParams p;
  std::memcpy(&p, r.params, sizeof p);
  auto range = std::make_shared<NvVirtualRange>();
  range->gpu = r.gpu.index;
  range->base = p.va_base;
  range->limit = p.va_size ? p.va_base + p.va_size - 1 : ~uint64_t{0};
  r.obj.payload = range;
  return st::ok;
}

RmStatus alloc_memory_virtual(RmAllocRequest& r) {
  abi::MemoryVirtualAllocParams p;
  std::memcpy(&p, r.params, sizeof p);
  if (p.limit != 0 && p.limit < p.offset) return st::err_invalid_limit;
  auto range = std::make_shared<NvVirtualRange>();
  range->gpu = r.gpu.index;
  range->base = p.offset;
  range->limit = p.limit ? p.limit : ~uint64_t{0};
  r.obj.payload = range;
  return st::ok;
}

RmStatus alloc_memory(RmAllocRequest& r) {
  abi::MemoryAllocParams p;
  std::memcpy(&p, r.params, sizeof p);
  if (p.size == 0) return st::err_invalid_argument;
  const uint32_t page_attr = (p.attr >> abi::nvos32::attr_page_size_shift) & 3;
  uint64_t page = page_attr == abi::nvos32::page_size_huge  ? kHugePage
                  : page_attr == abi::nvos32::page_size_big ? kBigPage
                                                            : kPage;
  if ((p.flags & abi::nvos32::alloc_alignment_force) && p.alignment > page) {
    if (!std::has_single_bit(p.alignment)) return st::err_invalid_argument;
    page = p.alignment;
  }
  const uint64_t bytes = align_up(p.size, page);
  const bool vram = r.obj.kind == RmKind::memory_local;
  if (vram && r.gpu.vram_used + bytes > r.gpu.spec->vram_bytes) return st::err_no_memory;
  auto m = std::make_shared<NvMemory>();
  m->where = vram ? NvMemory::Where::vram : NvMemory::Where::sysmem;
  m->gpu = r.gpu.index;
  m->size = bytes;
  m->page_size = page;
  auto b = NvBacking::make(vram ? "hcq-sim-nv-vram" : "hcq-sim-nv-sysmem", bytes);
  if (!b) return st::err_no_memory;
  m->backing = *b;
  p.size = bytes;
  p.offset = vram ? r.gpu.vram_used : 0;  // where in the framebuffer it landed
  p.limit = bytes - 1;
  if (vram) r.gpu.vram_used += bytes;
  std::memcpy(r.params, &p, sizeof p);
  r.obj.payload = m;
  return st::ok;
}

}  // namespace hcq::sim
