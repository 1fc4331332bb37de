// The QMD builder: one code path for V3 and V5, reading every position (and every "shifted" unit) from
// qmd::QmdLayout::roles. The fixed values follow what tinygrad's NV runtime writes on hardware, except where the
// field's name says otherwise (see the comments at CONSTANT_BUFFER_SIZE_SHIFTED4 and the release semaphores).
#include <algorithm>
#include <stdexcept>
#include <utility>

#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"
#include "nv/encode.hpp"

namespace hcq::nv {
namespace {

void check_size(std::span<const uint32_t> qmd, const qmd::QmdLayout& l) {
  if (qmd.size() < l.size_words)
    throw InvalidArgument(cat("QMD V", int(l.major_version), " needs ", l.size_words, " dwords, got ", qmd.size()));
}

// The throws are out of line so that the checks on every launch stay a compare and a branch.
[[noreturn, gnu::noinline]] void throw_misaligned(uint64_t addr, uint64_t alignment, const char* what) {
  throw InvalidArgument(cat(what, " ", hex(addr), " must be ", alignment, "-byte aligned"));
}

[[noreturn, gnu::noinline]] void throw_address_too_wide(uint64_t addr, const BitField& lo, const BitField& hi) {
  throw InvalidArgument(cat("address ", hex(addr), " does not fit QMD fields ", lo.name, "/", hi.name));
}

// `alignment` is a power of two.
void check_aligned(const Sym& addr, uint64_t alignment, const char* what) {
  if (addr.is_const() && (addr.add & (alignment - 1)) != 0) throw_misaligned(addr.add, alignment, what);
}

}  // namespace

QmdBuilder::AddressSlot QmdBuilder::address_slot(const BitField& lo, const BitField& hi, uint8_t shift) {
  AddressSlot s{&lo, &hi, shift};
  s.direct = lo.width == 32 && lo.lo % 32 == 0 && hi.lo / 32 == hi.hi() / 32;
  s.lo_word = lo.lo / 32u;
  s.hi_word = hi.lo / 32u;
  s.hi_bit = hi.lo % 32u;
  s.hi_mask = static_cast<uint32_t>(hi.mask());
  return s;
}

// Inline (in this file): every launch writes three addresses through it.
[[gnu::always_inline]] inline void QmdBuilder::put_address(std::span<uint32_t> q, const AddressSlot& s, const Sym& addr,
                                                           PatchSink* sink) const {
  if (!addr.is_const() || !s.direct) return put_address(q, *s.lo, *s.hi, addr, s.shift, sink);
  const uint64_t v = addr.add >> s.shift;
  const uint64_t high = v >> 32;
  if (high > s.hi_mask) throw_address_too_wide(addr.add, *s.lo, *s.hi);
  q[s.lo_word] = static_cast<uint32_t>(v);
  q[s.hi_word] = (q[s.hi_word] & ~(s.hi_mask << s.hi_bit)) | (static_cast<uint32_t>(high) << s.hi_bit);
}

QmdBuilder::QmdBuilder(const NvArchInfo& arch) : arch_(arch), layout_(qmd::layout(arch.qmd_version)) {
  const qmd::QmdRoles& r = layout_.roles;
  bank0_ = address_slot(*r.cbuf[0].address_lower, *r.cbuf[0].address_upper, r.cbuf_address_shift);
  for (uint32_t slot = 0; slot < qmd::kReleases; ++slot) {
    const qmd::ReleaseRoles& rel = r.release[slot];
    release_address_[slot] = address_slot(*rel.address_lower, *rel.address_upper, 0);
    release_payload_[slot] = address_slot(*rel.payload_lower, *rel.payload_upper, 0);
    // hcq signals are a 64-bit value then a 64-bit timestamp: a release is a four-word structure with a 64-bit
    // payload, after a system membar so the grid's writes are visible first (tinygrad leaves PAYLOAD64B and the
    // membar at 0). Those values and the enable, as (dword, bits to clear, bits to set).
    std::array<uint32_t, 128> clear{}, bits{};
    if (layout_.size_words > clear.size()) throw std::logic_error("QMD larger than the release stamp's scratch");
    const std::span<uint32_t> c(clear.data(), layout_.size_words), b(bits.data(), layout_.size_words);
    for (auto [f, v] : {std::pair{rel.structure_size, qmd::kStructureFourWords}, std::pair{rel.payload64b, 1u},
                        std::pair{rel.membar_type, qmd::kMembarFeSysmembar}, std::pair{rel.enable, 1u}}) {
      qmd::set(c, *f, f->mask());
      qmd::set(b, *f, v);
    }
    ReleaseStamp& st = release_stamps_[slot];
    for (uint32_t w = 0; w < layout_.size_words; ++w) {
      if (clear[w] == 0) continue;
      if (st.count == st.fixed.size()) throw std::logic_error("QMD release fields span more dwords than a stamp holds");
      st.fixed[st.count++] = {w, clear[w], bits[w]};
    }
  }
}

void QmdBuilder::put(std::span<uint32_t> q, const BitField& f, const Sym& v, uint8_t shift, PatchSink* sink) const {
  if (v.is_const()) return qmd::set(q, f, v.add >> shift);
  if (f.lo / 32u != f.hi() / 32u)
    throw InvalidArgument(cat("QMD field ", f.name, " straddles two dwords and cannot take a symbolic value"));
  if (!sink) throw InvalidArgument(cat("symbolic QMD field ", f.name, " (variable v", v.var, ") but no patch sink"));
  const bool whole = f.width == 32;
  sink->on_symbol(f.lo / 32u, v, whole ? PatchList::Kind::u32 : PatchList::Kind::field, shift,
                  static_cast<uint8_t>(f.lo % 32u), f.width);
  qmd::set(q, f, 0);
}

// A 64-bit value (an address) split over a 32-bit low field and a high field, both holding (value >> shift).
void QmdBuilder::put_address(std::span<uint32_t> q, const BitField& lo, const BitField& hi, const Sym& addr,
                             uint8_t shift, PatchSink* sink) const {
  if (addr.is_const()) {
    const uint64_t v = addr.add >> shift;
    if (!hi.fits(v >> 32)) throw_address_too_wide(addr.add, lo, hi);
    qmd::set(q, lo, v & 0xffffffffu);
    qmd::set(q, hi, v >> 32);
    return;
  }
  put(q, lo, addr, shift, sink);
  put(q, hi, addr, static_cast<uint8_t>(shift + 32), sink);
}

void QmdBuilder::program(std::span<uint32_t> q, const QmdProgram& p) const {
  check_size(q, layout_);
  const qmd::QmdRoles& r = layout_.roles;
  std::fill(q.begin(), q.begin() + layout_.size_words, 0u);

  if (p.registers > arch_.max_registers_per_thread)
    throw InvalidArgument(cat("kernel uses ", p.registers, " registers per thread; sm_", arch_.sm, " allows ",
                              arch_.max_registers_per_thread));
  if (p.shared_bytes > arch_.max_shared_per_block)
    throw InvalidArgument(cat("kernel uses ", p.shared_bytes, " bytes of shared memory per block; sm_", arch_.sm,
                              " allows ", arch_.max_shared_per_block));
  if (p.code_address % (uint64_t{1} << std::max<uint8_t>(r.program_address_shift, 7)) != 0)
    throw InvalidArgument(cat("kernel code address ", hex(p.code_address), " must be 128-byte aligned"));

  qmd::set(q, *r.major_version, layout_.major_version);
  qmd::set(q, *r.minor_version, layout_.minor_version);
  if (r.qmd_type) qmd::set(q, *r.qmd_type, qmd::kQmdTypeGridCta);
  qmd::set(q, *r.qmd_group_id, 0x3f);
  if (r.sm_global_caching_enable) qmd::set(q, *r.sm_global_caching_enable, 1);
  for (const BitField* f : {r.invalidate_texture_header_cache, r.invalidate_texture_sampler_cache,
                            r.invalidate_texture_data_cache, r.invalidate_shader_data_cache})
    qmd::set(q, *f, 1);
  qmd::set(q, *r.cwd_membar_type, qmd::kCwdMembarL1Sysmembar);
  qmd::set(q, *r.api_visible_call_limit, qmd::kApiVisibleCallLimitNoCheck);
  qmd::set(q, *r.sampler_index, 1);  // VIA_HEADER_INDEX
  qmd::set(q, *r.sass_version, arch_.sass_version());
  qmd::set(q, *r.barrier_count, std::max<uint32_t>(1, p.barriers));
  qmd::set(q, *r.register_count, p.registers);

  put_address(q, *r.program_address_lower, *r.program_address_upper, Sym(p.code_address), r.program_address_shift,
              nullptr);
  qmd::set(q, *r.program_prefetch_addr_lower_shifted, (p.code_address >> 8) & 0xffffffffu);
  qmd::set(q, *r.program_prefetch_addr_upper_shifted, p.code_address >> 40);
  qmd::set(q, *r.program_prefetch_size, std::min<uint64_t>(p.code_size >> 8, r.program_prefetch_size->mask()));

  // Shared memory: what the block asks for plus the system's reserve, in 128-byte units. The SM carveout is the
  // smallest configuration of at least 32 KiB that holds it (as tinygrad chooses on hardware); the largest one the
  // SM has is the maximum.
  const uint64_t shared = align_up(p.shared_bytes + arch_.reserved_shared_per_block, 128);
  qmd::set(q, *r.shared_memory_size, shared >> r.shared_memory_shift);
  uint32_t carveout = 0;
  for (uint16_t kib : arch_.shared_carveouts_kib)
    if (kib >= 32 && uint64_t{kib} * 1024 >= shared) {
      carveout = kib;
      break;
    }
  if (carveout == 0)
    throw InvalidArgument(cat(shared, " bytes of shared memory per block exceed sm_", arch_.sm, "'s largest carveout"));
  qmd::set(q, *r.min_sm_config_shared_mem_size, carveout / 4 + 1);
  qmd::set(q, *r.target_sm_config_shared_mem_size, carveout / 4 + 1);
  qmd::set(q, *r.max_sm_config_shared_mem_size, arch_.shared_carveouts_kib.back() / 4u + 1);

  // Local memory per thread, in the units of the field (bytes in V3, 16 bytes in V5), rounded up to 16 bytes.
  qmd::set(q, *r.shader_local_memory_high_size, align_up(p.local_bytes_per_thread, 16) >> r.local_memory_shift);

  // Bank 0 is the kernarg segment, set per launch; the hardware re-reads it each launch.
  qmd::set(q, *r.cbuf[0].invalidate, 1);
  for (uint32_t i = 1; i < qmd::kConstantBuffers; ++i) {
    const QmdProgram::Bank& b = p.banks[i];
    if (b.address == 0) continue;
    check_aligned(Sym(b.address), uint64_t{1} << std::max<uint8_t>(r.cbuf_address_shift, 4), "constant bank address");
    put_address(q, *r.cbuf[i].address_lower, *r.cbuf[i].address_upper, Sym(b.address), r.cbuf_address_shift, nullptr);
    qmd::set(q, *r.cbuf[i].size_shifted4, align_up(b.size, 16) >> 4);
    qmd::set(q, *r.cbuf[i].valid, 1);
  }
}

void QmdBuilder::launch(std::span<uint32_t> q, Sym cbank0_addr, uint32_t cbank0_size, const Dims& grid,
                        const Dims& block, PatchSink* sink) const {
  set_bank0_address(q, cbank0_addr, sink);
  const qmd::QmdRoles& r = layout_.roles;
  // CONSTANT_BUFFER_SIZE_SHIFTED4 holds the size in 16-byte units, as its name says (13 bits cover the 64 KiB a
  // bank can have). tinygrad writes the byte count unshifted, which asks for 16 times the bank it has; the golden
  // vectors carry that value (0x160 for 0x160 bytes) and the test documents the difference.
  qmd::set(q, *r.cbuf[0].size_shifted4, align_up(cbank0_size, 16) >> 4);
  qmd::set(q, *r.cbuf[0].valid, 1);
  for (size_t i = 0; i < 3; ++i) {
    if ((grid[i].is_const() && grid[i].add == 0) || (block[i].is_const() && block[i].add == 0))
      throw InvalidArgument(cat("launch dims must be at least 1 (dimension ", i, ")"));
    put(q, *r.grid[i], grid[i], 0, sink);
    put(q, *r.block[i], block[i], 0, sink);
  }
  if (block[0].is_const() && block[1].is_const() && block[2].is_const() &&
      block[0].add * block[1].add * block[2].add > arch_.max_threads_per_block)
    throw InvalidArgument(cat("block of ", block[0].add, "x", block[1].add, "x", block[2].add, " threads exceeds sm_",
                              arch_.sm, "'s ", arch_.max_threads_per_block));
}

void QmdBuilder::set_bank0_address(std::span<uint32_t> q, Sym cbank0_addr, PatchSink* sink) const {
  check_size(q, layout_);
  const qmd::QmdRoles& r = layout_.roles;
  check_aligned(cbank0_addr, uint64_t{1} << std::max<uint8_t>(r.cbuf_address_shift, 4), "constant bank 0 address");
  put_address(q, bank0_, cbank0_addr, sink);
}

int QmdBuilder::free_release_slot(std::span<const uint32_t> q) const {
  for (uint32_t i = 0; i < qmd::kReleases; ++i)
    if (qmd::get(q, *layout_.roles.release[i].enable) == 0) return static_cast<int>(i);
  return -1;
}

bool QmdBuilder::release(std::span<uint32_t> q, uint32_t slot, Sym addr, Sym payload, PatchSink* sink) const {
  check_size(q, layout_);
  if (slot >= qmd::kReleases) throw InvalidArgument(cat("QMD release slot ", slot, " is not 0 or 1"));
  const qmd::ReleaseRoles& rel = layout_.roles.release[slot];
  if (qmd::get(q, *rel.enable) != 0) return false;
  check_aligned(addr, 8, "QMD release semaphore address");
  put_address(q, release_address_[slot], addr, sink);
  put_address(q, release_payload_[slot], payload, sink);  // a 64-bit value split the same way
  // The structure size, payload width, membar and enable (see the constructor).
  const ReleaseStamp& st = release_stamps_[slot];
  for (uint32_t i = 0; i < st.count; ++i) {
    const Stamp& s = st.fixed[i];
    q[s.word] = (q[s.word] & ~s.clear) | s.bits;
  }
  return true;
}

void QmdBuilder::chain(std::span<uint32_t> prev, Sym next_addr, PatchSink* sink) const {
  check_size(prev, layout_);
  const qmd::QmdRoles& r = layout_.roles;
  if (next_addr.is_const() && (next_addr.add % qmd::kAlignment != 0 || next_addr.add > qmd::kMaxAddress))
    throw InvalidArgument(cat("chained QMD address ", hex(next_addr.add), " must be 256-byte aligned and below 2^40"));
  put(prev, *r.dependent_qmd0_pointer, next_addr, 8, sink);
  qmd::set(prev, *r.dependent_qmd0_action, qmd::kDependentActionSchedule);
  qmd::set(prev, *r.dependent_qmd0_prefetch, 1);
  qmd::set(prev, *r.dependent_qmd0_enable, 1);
}

}  // namespace hcq::nv
