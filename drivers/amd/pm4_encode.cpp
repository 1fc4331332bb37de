// PM4 encoders. Each packet is built from the layouts in pm4_facts (the decoder reads the same ones), with the
// register addresses and cache recipes of the target's tables.
#include <algorithm>
#include <array>
#include <stdexcept>

#include "amd/encode.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

using namespace pm4;

// A field of a layout, by name (the names are checked by the round-trip tests). A lookup is a scan with string
// compares, so the encoders below resolve each field once (per layout, or per target) rather than per packet.
const Field& F(const Layout& l, std::string_view name) { return *l.find(name); }

// Fields of the target-independent layouts, resolved on first use.
struct FixedFields {
  Field wrm_mem_function, wrm_mem_mem_space, wrm_mem_operation, wrm_mem_engine_sel, wrm_mem_poll_interval;
  Field wrm_reg_function, wrm_reg_mem_space, wrm_reg_operation, wrm_reg_engine_sel, wrm_reg_poll_reg,
      wrm_reg_write_reg2, wrm_reg_poll_interval;
  Field ew_event_type, ew_event_index;
  Field sh_reg_offset;
  Field ib_size, ib_valid;
};

const FixedFields& fixed() {
  static const FixedFields f{
      F(kWaitRegMemMem, "function"),   F(kWaitRegMemMem, "mem_space"),     F(kWaitRegMemMem, "operation"),
      F(kWaitRegMemMem, "engine_sel"), F(kWaitRegMemMem, "poll_interval"), F(kWaitRegMemReg, "function"),
      F(kWaitRegMemReg, "mem_space"),  F(kWaitRegMemReg, "operation"),     F(kWaitRegMemReg, "engine_sel"),
      F(kWaitRegMemReg, "poll_reg"),   F(kWaitRegMemReg, "write_reg2"),    F(kWaitRegMemReg, "poll_interval"),
      F(kEventWrite, "event_type"),    F(kEventWrite, "event_index"),      F(kSetShReg, "reg_offset"),
      F(kIndirectBuffer, "ib_size"),   F(kIndirectBuffer, "valid"),
  };
  return f;
}

// What the per-target packets need, derived from the target's tables once. Kept per thread for the last target
// seen: a process drives one or a few targets, and a one-entry cache needs no lock.
struct TargetFields {
  const Target* target = nullptr;
  uint32_t release_word1 = 0;  // RELEASE_MEM event_type | event_index (end of pipe), without cache bits
  Field release_dst_sel, release_int_sel, release_data_sel;
  uint32_t acquire_size_hi = 0;            // ACQUIRE_MEM coher_size_hi: all ones within its field
  const Field* num_thread_full = nullptr;  // COMPUTE_NUM_THREAD_X/Y/Z num_thread_full
  uint32_t initiator = 0;                  // DISPATCH_INITIATOR compute_shader_en | force_start_at_000
  uint32_t initiator_w32 = 0;              // DISPATCH_INITIATOR cs_w32_en (0 where the register has none)
};

const TargetFields& target_fields(const Target& t) {
  thread_local TargetFields c;
  if (c.target == &t) [[likely]]
    return c;
  TargetFields n;
  if (const Layout* rel = t.pm4->release_mem) {
    n.release_word1 =
        F(*rel, "event_type").place(CACHE_FLUSH_AND_INV_TS_EVENT) | F(*rel, "event_index").place(kEventIndexEndOfPipe);
    n.release_dst_sel = F(*rel, "dst_sel");
    n.release_int_sel = F(*rel, "int_sel");
    n.release_data_sel = F(*rel, "data_sel");
  }
  if (const Layout* acq = t.pm4->acquire_mem) n.acquire_size_hi = F(*acq, "coher_size_hi").mask();
  if (const Register* r = t.regs->find(t.cregs.num_thread_x)) n.num_thread_full = &r->fields[0];
  if (const Register* r = t.regs->find(t.cregs.dispatch_initiator)) {
    for (const Field& f : r->fields) {
      if (f.name == "compute_shader_en" || f.name == "force_start_at_000") n.initiator |= f.place(1);
      if (f.name == "cs_w32_en") n.initiator_w32 |= f.place(1);
    }
  }
  n.target = &t;
  c = n;
  return c;
}

}  // namespace

void Pm4Encoder::release_mem(uint32_t cache_bits, DataSel data_sel, IntSel int_sel, Sym addr, Sym data,
                             uint32_t ctxid) {
  const Layout& l = *t_.pm4->release_mem;
  const TargetFields& tf = target_fields(t_);
  WordWriter::Packet p = w_.packet(l.words);
  p.u32(header(RELEASE_MEM, l.words - 1));
  p.u32(tf.release_word1 | cache_bits);
  p.u32(tf.release_dst_sel.place(0) | tf.release_int_sel.place(int_sel) | tf.release_data_sel.place(data_sel));
  p.sym64(addr);
  p.sym64(data);
  p.u32(ctxid);
}

void Pm4Encoder::acquire_mem(uint32_t cache_control) {
  const Layout& l = *t_.pm4->acquire_mem;
  WordWriter::Packet p = w_.packet(l.words);
  p.u32(header(ACQUIRE_MEM, l.words - 1));
  // Whole address space: size all ones within the field widths. tinygrad writes 0xffffffff into COHER_SIZE_HI, whose
  // field is 8 bits (nvd.h PACKET3_ACQUIRE_MEM__COHER_SIZE_HI & 0xFF); we follow the header and write 0xff.
  const uint32_t size_hi = target_fields(t_).acquire_size_hi;
  if (t_.pm4->acquire_has_gcr) {
    p.u32(0);  // CP_COHER_CNTL: unused when GCR_CNTL is given
    p.u32(0xffffffffu);
    p.u32(size_hi);
    p.u64(0);  // base
    p.u32(t_.pm4->acquire_poll_interval);
    p.u32(cache_control);
  } else {
    p.u32(cache_control);
    p.u32(0xffffffffu);
    p.u32(size_hi);
    p.u64(0);
    p.u32(t_.pm4->acquire_poll_interval);
  }
}

void Pm4Encoder::wait_reg_mem(WaitFunction fn, Sym addr, Sym ref, uint32_t mask, uint32_t poll_interval) {
  const Layout& l = kWaitRegMemMem;
  const FixedFields& f = fixed();
  WordWriter::Packet p = w_.packet(l.words);
  p.u32(header(WAIT_REG_MEM, l.words - 1));
  p.u32(f.wrm_mem_function.place(fn) | f.wrm_mem_mem_space.place(1) | f.wrm_mem_operation.place(0) |
        f.wrm_mem_engine_sel.place(0));
  p.sym64(addr);
  p.sym32(ref);
  p.u32(mask);
  p.u32(f.wrm_mem_poll_interval.place(poll_interval));
}

void Pm4Encoder::hdp_flush() {
  // The CP writes the mask to HDP_FLUSH_REQ, then polls HDP_FLUSH_DONE until (DONE & mask) == mask: Linux's
  // emit_hdp_flush for compute rings (function "equal", poll interval 0x20). tinygrad polls with ">=" against
  // 0xffffffff, which a 12-bit DONE register can only satisfy on a lenient mock; we follow the kernel.
  const Layout& l = kWaitRegMemReg;
  const FixedFields& f = fixed();
  WordWriter::Packet p = w_.packet(l.words);
  p.u32(header(WAIT_REG_MEM, l.words - 1));
  p.u32(f.wrm_reg_function.place(FN_EQ) | f.wrm_reg_mem_space.place(0) | f.wrm_reg_operation.place(1) |
        f.wrm_reg_engine_sel.place(0));
  p.u32(f.wrm_reg_poll_reg.place(t_.hdp_flush_req));
  p.u32(f.wrm_reg_write_reg2.place(t_.hdp_flush_done));
  p.u32(t_.hdp_flush_mask);
  p.u32(t_.hdp_flush_mask);
  p.u32(f.wrm_reg_poll_interval.place(0x20));
}

void Pm4Encoder::event_write(uint32_t event_type, uint32_t event_index) {
  const Layout& l = kEventWrite;
  WordWriter::Packet p = w_.packet(l.words);
  p.u32(header(EVENT_WRITE, l.words - 1));
  p.u32(fixed().ew_event_type.place(event_type) | fixed().ew_event_index.place(event_index));
}

void Pm4Encoder::set_sh_header(WordWriter::Packet& p, uint32_t reg, uint32_t count) {
  p.u32(header(SET_SH_REG, count + 1));
  p.u32(fixed().sh_reg_offset.place(reg - kShRegBase));
}

void Pm4Encoder::signal(Sym addr, Sym value) {
  release_mem(t_.pm4->release_flush_all, DATA_32_LOW, INT_NONE, addr, value, 0);
}

void Pm4Encoder::signal_event(Sym mailbox_addr, uint32_t event_id) {
  // Ordered after the value write by the pipeline; no flush needed for the mailbox. The context id routes the
  // interrupt to the event on every generation (tinygrad zeroes it on GC 9, which makes KFD scan all events).
  release_mem(0, DATA_32_LOW, INT_AFTER_WRITE_CONFIRM, mailbox_addr, event_id, event_id);
}

void Pm4Encoder::wait(Sym addr, Sym value) { wait_reg_mem(FN_GE, addr, value, 0xffffffffu, 4); }

void Pm4Encoder::poll_bits(Sym addr, uint32_t mask, uint32_t ref) { wait_reg_mem(FN_EQ, addr, ref, mask, 4); }

void Pm4Encoder::write(Sym addr, Sym value, bool b64) {
  release_mem(0, b64 ? DATA_64 : DATA_32_LOW, INT_NONE, addr, value, 0);
}

void Pm4Encoder::timestamp(Sym addr) {
  // An end-of-pipe event first, so the clock is read after all prior work; then the clock write; then an acquire so
  // later packets see it. tinygrad's first RELEASE_MEM asks for an interrupt (int_sel 2) with nothing written and no
  // context id: an interrupt no one waits for. We send none.
  release_mem(0, DATA_NONE, INT_NONE, 0u, 0u, 0);
  release_mem(0, DATA_GPU_CLOCK, INT_NONE, addr, 0u, 0);
  acquire_mem(t_.pm4->acquire_all);
}

void Pm4Encoder::memory_barrier() {
  // Its words depend only on the target: encoded once (per thread, for the last target seen), then copied. It is
  // on every launch's path.
  struct Cached {
    const Target* target = nullptr;
    std::array<uint32_t, 32> words{};
    size_t size = 0;
  };
  thread_local Cached c;
  if (c.target != &t_) [[unlikely]] {
    std::vector<uint32_t> words;
    Pm4Encoder e(t_, words);
    e.hdp_flush();
    e.acquire_mem(t_.pm4->acquire_all);
    if (words.size() > c.words.size()) throw std::logic_error("PM4 memory barrier longer than its cache");
    std::copy(words.begin(), words.end(), c.words.begin());
    c.size = words.size();
    c.target = &t_;
  }
  w_.packet(c.size).words({c.words.data(), c.size});
}

namespace {

bool all_const(const DispatchArgs& a) {
  for (const Sym* s : {&a.code_addr, &a.kernarg_addr, &a.dispatch_packet_addr, &a.scratch_addr})
    if (!s->is_const()) return false;
  for (int i = 0; i < 3; ++i)
    if (!a.groups[i].is_const() || !a.local[i].is_const()) return false;
  return true;
}

// The words of the last exec() on this thread. Launches of one kernel with the same dims and scratch differ only in
// their kernarg (and dispatch packet) address, so the next such launch copies these words and rewrites those two:
// the ~55 words of register setup are on every eager launch's path. Only for constant operands (nothing to patch).
struct ExecMemo {
  const Target* target = nullptr;
  KernelInfo k;
  DispatchArgs a;  // kernarg_addr and dispatch_packet_addr are not part of the key
  std::array<uint32_t, 64> words{};
  uint32_t size = 0;
  uint32_t kernarg_at = 0, packet_at = 0;  // word offsets of those two 64-bit addresses

  bool matches(const Target& t, const KernelInfo& k2, const DispatchArgs& a2) const {
    return target == &t && k.rsrc1 == k2.rsrc1 && k.rsrc2 == k2.rsrc2 && k.rsrc3 == k2.rsrc3 && k.wave32 == k2.wave32 &&
           k.dispatch_ptr == k2.dispatch_ptr && a.code_addr.add == a2.code_addr.add &&
           a.scratch_addr.add == a2.scratch_addr.add && a.tmpring_size == a2.tmpring_size &&
           a.resource_limits == a2.resource_limits && a.groups[0].add == a2.groups[0].add &&
           a.groups[1].add == a2.groups[1].add && a.groups[2].add == a2.groups[2].add &&
           a.local[0].add == a2.local[0].add && a.local[1].add == a2.local[1].add && a.local[2].add == a2.local[2].add;
  }
};

void put64(uint32_t* at, uint64_t v) {
  at[0] = static_cast<uint32_t>(v);
  at[1] = static_cast<uint32_t>(v >> 32);
}

}  // namespace

void Pm4Encoder::exec(const KernelInfo& k, const DispatchArgs& a) {
  const bool memoizable = all_const(a);
  thread_local ExecMemo memo;
  if (memoizable && memo.matches(t_, k, a)) {
    WordWriter::Packet p = w_.packet(memo.size);
    uint32_t* at = p.words({memo.words.data(), memo.size});
    put64(at + memo.kernarg_at, a.kernarg_addr.add);
    if (k.dispatch_ptr) put64(at + memo.packet_at, a.dispatch_packet_addr.add);
    return;
  }
  const size_t start = w_.size();
  size_t kernarg_at = 0, packet_at = 0;
  encode_exec(k, a, kernarg_at, packet_at);
  const size_t n = w_.size() - start;
  if (memoizable && n <= memo.words.size()) {
    memo.target = &t_;
    memo.k = k;
    memo.a = a;
    std::copy(w_.words().begin() + static_cast<std::ptrdiff_t>(start), w_.words().end(), memo.words.begin());
    memo.size = static_cast<uint32_t>(n);
    memo.kernarg_at = static_cast<uint32_t>(kernarg_at - start);
    memo.packet_at = static_cast<uint32_t>(packet_at - start);
  }
}

void Pm4Encoder::encode_exec(const KernelInfo& k, const DispatchArgs& a, size_t& kernarg_at, size_t& packet_at) {
  const ComputeRegs& r = t_.cregs;
  if (k.wave32 && !t_.wave32) throw InvalidArgument(cat("wave32 kernel on ", t_.name, ", which runs wave64 only"));
  acquire_mem(t_.pm4->acquire_exec);

  // Register setup and DISPATCH_DIRECT as one run of words: SET_SH_REG packets of 2 + n words each.
  const uint32_t user_sgprs = k.dispatch_ptr ? 4 : 2;
  const uint32_t setup_words =
      (2 + 2) + (2 + 2) + (2 + 1) + (2 + 1) + (2 + 2) + (2 + 3) + (2 + user_sgprs) + (2 + 1) + (2 + 8);
  {
    WordWriter::Packet p = w_.packet(setup_words + kDispatchDirect.words);
    set_sh_header(p, r.pgm_lo, 2);  // COMPUTE_PGM_LO/HI: the code address >> 8
    p.sym32(a.code_addr, 8);
    p.sym32(a.code_addr, 40);
    set_sh_header(p, r.rsrc1, 2);  // RSRC1, RSRC2
    p.u32(k.rsrc1);
    p.u32(k.rsrc2);
    set_sh_header(p, r.rsrc3, 1);
    p.u32(k.rsrc3);
    set_sh_header(p, r.tmpring_size, 1);
    p.u32(a.tmpring_size);
    set_sh_header(p, r.scratch_base_lo, 2);  // architected flat scratch base >> 8
    p.sym32(a.scratch_addr, 8);
    p.sym32(a.scratch_addr, 40);
    set_sh_header(p, r.restart_x, 3);
    p.u32(0);
    p.u32(0);
    p.u32(0);
    // User SGPRs in AMDHSA order: [dispatch packet pointer], kernarg segment pointer.
    set_sh_header(p, r.user_data_0, user_sgprs);
    packet_at = p.index();
    if (k.dispatch_ptr) p.sym64(a.dispatch_packet_addr);
    kernarg_at = p.index();
    p.sym64(a.kernarg_addr);
    set_sh_header(p, r.resource_limits, 1);
    p.u32(a.resource_limits);

    // START_X/Y/Z, NUM_THREAD_X/Y/Z, PIPELINESTAT_ENABLE, PERFCOUNT_ENABLE are consecutive.
    const TargetFields& tf = target_fields(t_);
    const Field& full = *tf.num_thread_full;
    set_sh_header(p, r.start_x, 8);
    p.u32(0);
    p.u32(0);
    p.u32(0);
    for (const Sym& l : a.local) p.sym_field(0, full, l);
    p.u32(0);
    p.u32(0);

    // DISPATCH_DIRECT: workgroup counts, then COMPUTE_DISPATCH_INITIATOR.
    const uint32_t initiator = tf.initiator | (k.wave32 ? tf.initiator_w32 : 0u);
    p.u32(header(DISPATCH_DIRECT, kDispatchDirect.words - 1));
    for (const Sym& g : a.groups) p.sym32(g);
    p.u32(initiator);
  }  // the packet is closed before the next one opens
  // Wait for the dispatch's waves before anything later in the queue (signals, timestamps) runs.
  event_write(CS_PARTIAL_FLUSH, kEventIndexPartialFlush);
}

void Pm4Encoder::indirect_buffer(Sym addr, uint32_t size_dwords) {
  const Layout& l = kIndirectBuffer;
  const FixedFields& f = fixed();
  if (size_dwords == 0 || size_dwords > f.ib_size.mask())
    throw InvalidArgument(
        cat("indirect buffer of ", size_dwords, " dwords: the size field holds 1..", f.ib_size.mask()));
  w_.u32(header(INDIRECT_BUFFER, l.words - 1));
  w_.sym64(addr);
  w_.u32(f.ib_size.place(size_dwords) | f.ib_valid.place(1));
}

void Pm4Encoder::nop(uint32_t total_words) {
  if (total_words == 0) return;
  if (total_words == 1) return w_.u32((3u << 30) | kHdrCount.place(kNopCountHeaderOnly) | kHdrOpcode.place(NOP));
  if (total_words - 1 > kNopCountHeaderOnly)  // payload - 1 must stay below the header-only marker
    throw InvalidArgument(cat("NOP of ", total_words, " words is longer than one PM4 packet"));
  w_.u32(header(NOP, total_words - 1));
  for (uint32_t i = 1; i < total_words; ++i) w_.u32(0);
}

}  // namespace hcq::amd
