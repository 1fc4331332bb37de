// AQL encoders: 64-byte packets appended as 16 words. On a real queue the header half-word must be stored last (it
// publishes the packet); the caller copies words 1..15 first, then word 0.
#include "amd/encode.hpp"
#include "hcq/backend/heap_cache.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

using namespace aql;

const Field& F(const Layout& l, std::string_view name) { return *l.find(name); }

// grid = groups * local, as one Sym. A patch adds and shifts but cannot multiply.
Sym grid_dim(const Sym& groups, const Sym& local, char axis) {
  if (groups.is_const() && local.is_const()) return Sym(groups.add * local.add);
  if (local.is_const() && local.add == 1) return groups;
  if (groups.is_const() && groups.add == 1) return local;
  throw InvalidArgument(cat("AQL dispatch: grid size ", axis,
                            " = groups x local with a symbolic factor and the other not 1 cannot be patched"));
}

}  // namespace

void AqlEncoder::dispatch(const AqlDispatch& d) {
  const Layout& l = kKernelDispatch;
  const uint32_t hdr = header(KERNEL_DISPATCH, d.barrier, SCOPE_SYSTEM, SCOPE_SYSTEM);
  w_.u32(hdr | F(l, "dimensions").place(3));
  w_.sym_field(0, F(l, "workgroup_size_x"), d.local[0]);
  // workgroup_size_y shares the word with x: patch it as a field of the word just written.
  if (d.local[1].is_const()) {
    w_.words().back() |= F(l, "workgroup_size_y").place(d.local[1].add);
  } else {
    // Re-report the same word for the y half; x's bits are kept by Kind::field.
    std::vector<uint32_t>& w = w_.words();
    const uint32_t x_word = w.back();
    w.pop_back();
    w_.sym_field(x_word, F(l, "workgroup_size_y"), d.local[1]);
  }
  w_.sym_field(0, F(l, "workgroup_size_z"), d.local[2]);  // + reserved0
  w_.sym32(grid_dim(d.groups[0], d.local[0], 'x'));
  w_.sym32(grid_dim(d.groups[1], d.local[1], 'y'));
  w_.sym32(grid_dim(d.groups[2], d.local[2], 'z'));
  w_.u32(d.private_segment_size);
  w_.u32(d.group_segment_size);
  w_.sym64(d.kernel_object);
  w_.sym64(d.kernarg_addr);
  w_.u64(0);  // reserved2
  w_.sym64(d.completion_signal);
  (void)t_;
}

void AqlEncoder::barrier_and(std::span<const Sym> deps, Sym completion_signal) {
  if (deps.size() > 5) throw InvalidArgument(cat("AQL barrier-and takes at most 5 signals, got ", deps.size()));
  w_.u32(header(BARRIER_AND, true, SCOPE_SYSTEM, SCOPE_SYSTEM));
  w_.u32(0);  // reserved1
  for (size_t i = 0; i < 5; ++i) {
    if (i < deps.size()) w_.sym64(deps[i]);
    else w_.u64(0);
  }
  w_.u64(0);  // reserved2
  w_.sym64(completion_signal);
}

void AqlEncoder::pm4_ib(Sym addr, uint32_t size_dwords) {
  // Once per dispatch on every AQL submit: the field is looked up once, the PM4 words built in a reused vector.
  static const uint32_t vendor_format = F(kVendorPm4Ib, "vendor_format").place(kVendorFormatPm4Ib);
  w_.u32(header(VENDOR_SPECIFIC, true, SCOPE_SYSTEM, SCOPE_SYSTEM) | vendor_format);
  // The IB packet itself, then how many dwords of the 64-byte slot follow it (ROCr and tinygrad write 10). Its words
  // are built in a vector from this thread's cache, not in a thread_local vector: that one is destroyed when the
  // thread exits, and the main thread's goes before the device registry's exit-time teardown, which may still
  // encode. The cache hands out a fresh vector once it is gone.
  std::vector<uint32_t> ib = VectorCache<uint32_t>::take(pm4::kIndirectBuffer.words);
  Pm4Encoder(t_, ib).indirect_buffer(0u, size_dwords);
  w_.u32(ib[0]);
  w_.sym64(addr);
  w_.u32(ib[3]);
  w_.u32(10);
  VectorCache<uint32_t>::give(ib);
  for (int i = 0; i < 8; ++i) w_.u32(0);
  w_.u64(0);  // completion signal
}

}  // namespace hcq::amd
