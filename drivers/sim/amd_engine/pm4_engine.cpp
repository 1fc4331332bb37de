// PM4 execution. Packets are read whole into a local buffer before they run, so a packet that straddles the ring's
// end (legal for PM4) or a host that rewrites the ring afterwards cannot make the engine read outside its bounds.
#include "sim/amd_engine/pm4_engine.hpp"

#include <algorithm>
#include <exception>

#include "amd/pm4_facts.hpp"
#include "amd/regs.hpp"

namespace hcq::sim::amd_engine {

using namespace amd::pm4;
using amd::Field;
using amd::Layout;
using amd::Register;

namespace {

// IB1 (called from the ring or an AQL slot) and IB2 (called from IB1): the CP has no third level.
constexpr size_t kMaxIbDepth = 2;
// Threads per workgroup the hardware accepts.
constexpr uint64_t kMaxWorkgroupThreads = 1024;

const Register& reg_named(const amd::RegisterTable& t, std::string_view name) {
  const Register* r = t.find(name);
  if (!r) throw std::logic_error(std::string("register table lacks ") + std::string(name));
  return *r;
}
uint32_t field_bit(const Register& r, std::string_view name) {
  for (const Field& f : r.fields)
    if (f.name == name) return f.place(f.mask());
  return 0;
}
uint32_t all_fields(const Register& r) {
  uint32_t m = 0;
  for (const Field& f : r.fields) m |= f.place(f.mask());
  return m;
}

const Field& field_named(const Register& r, std::string_view name) {
  for (const Field& f : r.fields)
    if (f.name == name) return f;
  throw std::logic_error(std::string("register ") + std::string(r.name) + " lacks field " + std::string(name));
}

// A kernel with COMPUTE_PGM_RSRC2.SCRATCH_EN takes its waves' private memory from COMPUTE_DISPATCH_SCRATCH_BASE
// (architected flat scratch) cut into COMPUTE_TMPRING_SIZE slots: WAVES slots of WAVESIZE units. Hardware given a
// bad setup corrupts memory or faults later; we fault at the dispatch. On GC 11/12 WAVES counts per shader engine,
// so WAVES x WAVESIZE is what one engine's share must have mapped (the engine count is not ours to know). The PM4
// CP never sees the kernel's private segment size, so whether a slot is large enough is not checked here (the AQL
// path checks it against the packet). Empty when the setup is usable or scratch is off.
std::string scratch_setup_error(const amd::Target& t, uint32_t rsrc2, uint32_t tmpring, uint32_t base_lo,
                                uint32_t base_hi, QueueContext& ctx) {
  const amd::RegisterTable& regs = *t.regs;
  if (field_named(reg_named(regs, "COMPUTE_PGM_RSRC2"), "scratch_en").get(rsrc2) == 0) return {};
  const Register& ring = reg_named(regs, "COMPUTE_TMPRING_SIZE");
  const uint64_t waves = field_named(ring, "waves").get(tmpring), units = field_named(ring, "wavesize").get(tmpring);
  const uint64_t hi = field_named(reg_named(regs, "COMPUTE_DISPATCH_SCRATCH_BASE_HI"), "data").get(base_hi);
  const uint64_t base = ((hi << 32) | base_lo) << 8;
  const uint64_t bytes = waves * (units << regs.scratch_wave_shift);
  if (waves == 0 || units == 0)
    return "dispatch with SCRATCH_EN but COMPUTE_TMPRING_SIZE " + hex(tmpring) + " (WAVES " + std::to_string(waves) +
           ", WAVESIZE " + std::to_string(units) + "): no scratch slots";
  if (base == 0 || !ctx.ptr(base, bytes))
    return "dispatch with SCRATCH_EN: scratch base " + hex(base) +
           " (COMPUTE_DISPATCH_SCRATCH_BASE) does not map the " + std::to_string(bytes) +
           " bytes COMPUTE_TMPRING_SIZE " + hex(tmpring) + " describes";
  return {};
}

}  // namespace

Pm4Executor::Pm4Executor(QueueContext& ctx, bool ring) : ctx_(ctx), t_(*ctx.desc().target), ring_(ring) {
  const amd::RegisterTable& regs = *t_.regs;
  hdp_done_mask_ = all_fields(reg_named(regs, "BIF_BX_PF0_GPU_HDP_FLUSH_DONE"));
  const Register& hi = reg_named(regs, "COMPUTE_PGM_HI");
  pgm_hi_ = hi.addr;
  pgm_hi_mask_ = all_fields(hi);
  const char* nt[3] = {"COMPUTE_NUM_THREAD_X", "COMPUTE_NUM_THREAD_Y", "COMPUTE_NUM_THREAD_Z"};
  for (int i = 0; i < 3; ++i) {
    const Register& r = reg_named(regs, nt[i]);
    num_thread_[i] = r.addr;
    for (const Field& f : r.fields)
      if (f.name == "num_thread_full") num_thread_full_[i] = &f;
    if (!num_thread_full_[i]) throw std::logic_error("COMPUTE_NUM_THREAD_* lacks num_thread_full");
  }
  user_data_ = t_.cregs.user_data_0;
  const Register& init = reg_named(regs, "COMPUTE_DISPATCH_INITIATOR");
  initiator_shader_en_ = field_bit(init, "compute_shader_en");
  initiator_w32_ = field_bit(init, "cs_w32_en");
  if (ring_) {
    uint64_t r = 0;
    if (ctx_.load<uint64_t>(ctx_.desc().rptr_va, r)) rptr_ = r;
  }
}

Pm4Executor::Outcome Pm4Executor::fault(const Where& at, uint64_t address, bool memory, std::string reason) {
  ctx_.fault(at, pkt_, address, memory, std::move(reason));
  return Outcome::fault;
}

// ---- fetching ----

Step Pm4Executor::run_ring(size_t budget) {
  const SimQueueDesc& d = ctx_.desc();
  const uint64_t ring_dwords = d.ring_size / 4;
  for (size_t done = 0; done < budget; ++done) {
    if (!frames_.empty()) {
      switch (step_ib()) {
        case Outcome::wait: return Step::waiting;
        case Outcome::fault: return Step::faulted;
        default: continue;
      }
    }
    const Where at{rptr_, false, 0, 0};
    pkt_.clear();
    const std::optional<uint64_t> w = ctx_.read_wptr();
    if (!w) return ctx_.fault(at, {}, d.wptr_va, true, "write pointer not mapped");
    if (*w == rptr_) return Step::idle;
    if (ring_dwords == 0 || (ring_dwords & (ring_dwords - 1)) != 0)
      return ctx_.fault(at, {}, d.ring_va, false,
                        "ring size " + std::to_string(d.ring_size) + " is not a power of two");
    if (*w < rptr_ || *w - rptr_ > ring_dwords)
      return ctx_.fault(
          at, {}, 0, false,
          "write pointer " + std::to_string(*w) + " is behind the read pointer or more than a ring ahead");
    // Read the header, then the whole packet (which may wrap around the ring's end).
    auto slot_va = [&](uint64_t pos) { return d.ring_va + (pos & (ring_dwords - 1)) * 4; };
    uint32_t h = 0;
    if (!ctx_.read_words(slot_va(rptr_), &h, 1)) return ctx_.fault(at, {}, slot_va(rptr_), true, "ring not mapped");
    pkt_.assign(1, h);
    if (kHdrType.get(h) != 3)
      return ctx_.fault(at, pkt_, 0, false,
                        "type-" + std::to_string(kHdrType.get(h)) + " packet header " + hex(h) +
                            " (a GC 9+ compute queue takes type-3 packets only)");
    const uint32_t opcode = kHdrOpcode.get(h), count = kHdrCount.get(h);
    const uint64_t n = (opcode == NOP && count == kNopCountHeaderOnly) ? 1 : uint64_t{count} + 2;
    if (n > *w - rptr_)
      return ctx_.fault(
          at, pkt_, 0, false,
          "truncated packet: header says " + std::to_string(n) + " dwords, " + std::to_string(*w - rptr_) + " written");
    pkt_.resize(n);
    const uint64_t first = std::min<uint64_t>(n, ring_dwords - (rptr_ & (ring_dwords - 1)));
    if (!ctx_.read_words(slot_va(rptr_), pkt_.data(), first) ||
        (first < n && !ctx_.read_words(d.ring_va, pkt_.data() + first, n - first)))
      return ctx_.fault(at, pkt_, d.ring_va, true, "ring not mapped");
    switch (exec(at)) {
      case Outcome::done:
        rptr_ += n;
        ctx_.publish_rptr(rptr_);
        break;
      case Outcome::enter_ib: ring_resume_ = rptr_ + n; break;
      case Outcome::wait: return Step::waiting;
      case Outcome::fault: return Step::faulted;
    }
  }
  return Step::progress;
}

void Pm4Executor::begin_ib(uint64_t va, uint32_t dwords, const Where& at) {
  ib_from_ = at;
  frames_.push_back({va, dwords, 0});
}

Step Pm4Executor::run_ibs(size_t budget) {
  for (size_t done = 0; done < budget; ++done) {
    if (frames_.empty()) return Step::idle;
    switch (step_ib()) {
      case Outcome::wait: return Step::waiting;
      case Outcome::fault: return Step::faulted;
      default: break;
    }
  }
  return frames_.empty() ? Step::idle : Step::progress;
}

Pm4Executor::Outcome Pm4Executor::step_ib() {
  Frame& f = frames_.back();
  if (f.pos == f.size) {
    frames_.pop_back();
    if (frames_.empty() && ring_) {
      rptr_ = ring_resume_;
      ctx_.publish_rptr(rptr_);
    }
    return Outcome::done;
  }
  const Where at{ib_from_.ring_pos, true, f.va, f.pos};
  const uint64_t va = f.va + uint64_t{f.pos} * 4;
  uint32_t h = 0;
  pkt_.clear();
  if (!ctx_.read_words(va, &h, 1)) return fault(at, va, true, "indirect buffer not mapped");
  pkt_.assign(1, h);
  if (kHdrType.get(h) != 3)
    return fault(at, 0, false,
                 "type-" + std::to_string(kHdrType.get(h)) + " packet header " + hex(h) +
                     " (a GC 9+ compute queue takes type-3 packets only)");
  const uint32_t opcode = kHdrOpcode.get(h), count = kHdrCount.get(h);
  const uint64_t n = (opcode == NOP && count == kNopCountHeaderOnly) ? 1 : uint64_t{count} + 2;
  const uint64_t left = f.size - f.pos;
  if (n > left)
    return fault(at, 0, false,
                 "truncated packet: header says " + std::to_string(n) + " dwords, the indirect buffer has " +
                     std::to_string(left) + " left");
  pkt_.resize(n);
  if (!ctx_.read_words(va, pkt_.data(), n)) return fault(at, va, true, "indirect buffer not mapped");
  const Outcome o = exec(at);
  // The packet's frame may have moved (enter_ib pushes); advance it by index. An IB packet is consumed when called.
  if (o == Outcome::done || o == Outcome::enter_ib) frames_[frames_.size() - (o == Outcome::enter_ib ? 2 : 1)].pos += n;
  return o == Outcome::enter_ib ? Outcome::done : o;
}

// ---- execution ----

Pm4Executor::Outcome Pm4Executor::exec(const Where& at) {
  const uint32_t opcode = kHdrOpcode.get(pkt_[0]);
  auto expect = [&](uint32_t words) { return pkt_.size() == words; };
  auto bad_len = [&](const std::string& what) {
    return fault(at, 0, false,
                 std::string(opcode_name(opcode)) + " of " + std::to_string(pkt_.size()) + " dwords: expected " + what);
  };
  switch (opcode) {
    case NOP: return Outcome::done;
    case RELEASE_MEM:
      if (!expect(t_.pm4->release_mem->words)) return bad_len(std::to_string(t_.pm4->release_mem->words));
      return release_mem(at);
    case ACQUIRE_MEM:
      if (!expect(t_.pm4->acquire_mem->words)) return bad_len(std::to_string(t_.pm4->acquire_mem->words));
      return acquire_mem(at);
    case EVENT_WRITE:
      if (!expect(2) && !expect(4)) return bad_len("2 or 4");
      return event_write(at);
    case WAIT_REG_MEM:
      if (!expect(kWaitRegMemMem.words)) return bad_len(std::to_string(kWaitRegMemMem.words));
      return wait_reg_mem(at);
    case WRITE_DATA:
      if (pkt_.size() < 5) return bad_len("at least 5 (control, address, data)");
      return write_data(at);
    case SET_SH_REG:
      if (pkt_.size() < 3) return bad_len("at least 3 (offset and one value)");
      return set_sh_reg(at);
    case DISPATCH_DIRECT:
      if (!expect(kDispatchDirect.words)) return bad_len(std::to_string(kDispatchDirect.words));
      return dispatch_direct(at);
    case INDIRECT_BUFFER:
      if (!expect(kIndirectBuffer.words)) return bad_len(std::to_string(kIndirectBuffer.words));
      return indirect_buffer(at);
    default: {
      const std::string_view name = opcode_name(opcode);
      if (name.empty()) return fault(at, 0, false, "unknown PM4 opcode " + hex(opcode));
      return fault(at, 0, false, "PM4 opcode " + std::string(name) + " (" + hex(opcode) + ") is not simulated");
    }
  }
}

namespace {
// "7 (CS_PARTIAL_FLUSH)", or "63" for a value the event table does not name.
std::string event_text(uint32_t type) {
  const VgtEvent* e = vgt_event(type);
  return std::to_string(type) + (e ? " (" + std::string(e->name) + ")" : "");
}
// The CacheOps a RELEASE_MEM or ACQUIRE_MEM control word asks for, through the dialect's L2 masks.
uint8_t cache_ops(uint32_t control, uint32_t writeback_bits, uint32_t invalidate_bits) {
  return static_cast<uint8_t>(((control & writeback_bits) ? kCacheWriteback : 0) |
                              ((control & invalidate_bits) ? kCacheInvalidate : 0));
}
}  // namespace

// EVENT_WRITE on a compute queue: the event must be one the compute pipe has, sent with its own event_index; the
// timestamp events (end of pipe, end of shader) go through RELEASE_MEM on the MEC. Dispatches complete before the next
// packet runs here, so CS_PARTIAL_FLUSH has nothing left to wait for; the other compute events drive the performance
// counters and thread trace, which the simulated GPU does not have, and complete.
Pm4Executor::Outcome Pm4Executor::event_write(const Where& at) {
  const std::span<const uint32_t> p = pkt_;
  const uint32_t type = static_cast<uint32_t>(get(field(kEventWrite, "event_type"), p));
  const uint32_t index = static_cast<uint32_t>(get(field(kEventWrite, "event_index"), p));
  const VgtEvent* e = vgt_event(type);
  if (!e || !e->compute)
    return fault(at, 0, false,
                 "EVENT_WRITE event_type " + event_text(type) + " is not an event a compute queue executes");
  if (e->index == kEventIndexEndOfPipe || e->index == kEventIndexEndOfShader)
    return fault(at, 0, false,
                 "EVENT_WRITE event_type " + event_text(type) +
                     " is a timestamp event: a compute queue releases it with RELEASE_MEM");
  if (index != e->index)
    return fault(at, 0, false,
                 "EVENT_WRITE event_type " + event_text(type) + " with event_index " + std::to_string(index) +
                     ": the event takes event_index " + std::to_string(e->index));
  if (pkt_.size() != 2)
    return fault(
        at, 0, false,
        "EVENT_WRITE event_type " + event_text(type) + " of 4 dwords (a sample written to memory) is not simulated");
  return Outcome::done;
}

// ACQUIRE_MEM: the cache actions of the dialect's control word, once everything before it has completed (which, with
// dispatches running to completion in order, is now). The coherence range (base, size) is not checked against the
// caches: the simulated caches act on all of memory, as a full-range acquire does.
Pm4Executor::Outcome Pm4Executor::acquire_mem(const Where& at) {
  const Dialect& d = *t_.pm4;
  const Layout& l = *d.acquire_mem;
  const std::span<const uint32_t> p = pkt_;
  const uint32_t coher = static_cast<uint32_t>(get(field(l, "coher_cntl"), p));
  uint32_t control = coher;
  if (d.acquire_has_gcr) {
    if (const uint32_t foreign = coher & d.acquire_coher_foreign)
      return fault(at, 0, false,
                   "ACQUIRE_MEM CP_COHER_CNTL " + hex(coher) + " sets GC 9 cache actions " + hex(foreign) + ": the " +
                       std::string(d.name) + " CP takes cache control in GCR_CNTL");
    control = pkt_[field(l, "gcr_cntl").dword];
    if (const uint32_t reserved = control & d.acquire_gcr_reserved)
      return fault(at, 0, false,
                   "ACQUIRE_MEM GCR_CNTL " + hex(control) + " sets reserved bits " + hex(reserved) + " (" +
                       std::string(d.name) + ")");
  }
  if (const uint8_t ops = cache_ops(control, d.acquire_l2_writeback, d.acquire_l2_invalidate)) ctx_.host().caches(ops);
  return Outcome::done;
}

Pm4Executor::Outcome Pm4Executor::release_mem(const Where& at) {
  const Dialect& dialect = *t_.pm4;
  const Layout& l = *dialect.release_mem;
  const std::span<const uint32_t> p = pkt_;
  const uint64_t event_index = get(field(l, "event_index"), p);
  if (event_index != kEventIndexEndOfPipe && event_index != kEventIndexEndOfShader)
    return fault(at, 0, false,
                 "RELEASE_MEM event_index " + std::to_string(event_index) +
                     ": only end-of-pipe (5) and shader-done (6) release memory");
  const uint32_t type = static_cast<uint32_t>(get(field(l, "event_type"), p));
  if (const VgtEvent* e = vgt_event(type); !e || e->index != event_index || !e->compute)
    return fault(at, 0, false,
                 "RELEASE_MEM event_type " + event_text(type) + " is not " +
                     (event_index == kEventIndexEndOfPipe ? "an end-of-pipe" : "an end-of-shader") +
                     " event of the compute pipe (event_index " + std::to_string(event_index) + ")");
  const uint32_t control = pkt_[field(l, "event_type").dword];
  if (const uint32_t reserved = control & dialect.release_reserved)
    return fault(at, 0, false,
                 "RELEASE_MEM dword 1 " + hex(control) + " sets reserved bits " + hex(reserved) + " (" +
                     std::string(dialect.name) + ")");
  const uint64_t dst_sel = get(field(l, "dst_sel"), p);
  if (dst_sel > 1)
    return fault(at, 0, false,
                 "RELEASE_MEM dst_sel " + std::to_string(dst_sel) + " (queue write pointer) is not simulated");
  const uint64_t data_sel = get(field(l, "data_sel"), p), int_sel = get(field(l, "int_sel"), p);
  const uint64_t addr = get(field(l, "address"), p), data = get(field(l, "data"), p);
  switch (data_sel) {
    case DATA_NONE:
    case DATA_32_LOW:
    case DATA_64:
    case DATA_GPU_CLOCK: break;
    default: return fault(at, 0, false, "RELEASE_MEM data_sel " + std::to_string(data_sel) + " is not simulated");
  }
  switch (int_sel) {
    case INT_NONE:
    case 1:
    case INT_AFTER_WRITE_CONFIRM:
    case 3:
    case 4: break;
    default:
      return fault(at, 0, false, "RELEASE_MEM int_sel " + std::to_string(int_sel) + " (conditional) is not simulated");
  }
  // End of pipe: every earlier packet, dispatches included, has completed by the time this one runs. The cache
  // actions come first, then the data write and the interrupt: a reader that sees the data sees what the work wrote.
  if (const uint8_t ops = cache_ops(control, dialect.release_l2_writeback, dialect.release_l2_invalidate))
    ctx_.host().caches(ops);
  switch (data_sel) {
    case DATA_NONE: break;
    case DATA_32_LOW:
      if (addr % 4) return fault(at, addr, false, "RELEASE_MEM 32-bit write to unaligned address " + hex(addr));
      if (!ctx_.store<uint32_t>(addr, static_cast<uint32_t>(data)))
        return fault(at, addr, true, "RELEASE_MEM write to unmapped address " + hex(addr));
      break;
    case DATA_64:
    case DATA_GPU_CLOCK: {
      if (addr % 8) return fault(at, addr, false, "RELEASE_MEM 64-bit write to unaligned address " + hex(addr));
      const uint64_t v = data_sel == DATA_64 ? data : ctx_.host().gpu_clock();
      if (!ctx_.store<uint64_t>(addr, v))
        return fault(at, addr, true, "RELEASE_MEM write to unmapped address " + hex(addr));
      break;
    }
    default: break;  // checked above
  }
  switch (int_sel) {
    case 1:                        // interrupt only
    case INT_AFTER_WRITE_CONFIRM:  // interrupt once the write is visible
    case 4:                        // unconditionally send int_ctxid
      ctx_.host().interrupt(static_cast<uint32_t>(get(field(l, "int_ctxid"), p)));
      break;
    default: break;  // none, or (3) data after write confirm: no interrupt
  }
  return Outcome::done;
}

bool Pm4Executor::read_reg(uint32_t addr, uint32_t& value) const {
  if (addr >= amd::kShRegBase && addr < amd::kShRegEnd) {
    value = sh_[addr - amd::kShRegBase];
    return true;
  }
  if (addr == t_.hdp_flush_done) {
    value = hdp_done_;
    return true;
  }
  if (addr == t_.hdp_flush_req) {
    value = 0;
    return true;
  }
  return false;
}

bool Pm4Executor::write_reg(uint32_t addr, uint32_t value) {
  if (addr >= amd::kShRegBase && addr < amd::kShRegEnd) {
    sh_[addr - amd::kShRegBase] = value;
    return true;
  }
  if (addr == t_.hdp_flush_req) {
    // Host writes through the BAR are already in memory here: the flush completes at once, for the clients
    // (bits) that DONE has.
    hdp_done_ |= value & hdp_done_mask_;
    return true;
  }
  return false;
}

Pm4Executor::Outcome Pm4Executor::wait_reg_mem(const Where& at) {
  const std::span<const uint32_t> p = pkt_;
  const uint32_t function = static_cast<uint32_t>(get(field(kWaitRegMemMem, "function"), p));
  const uint64_t mem_space = get(field(kWaitRegMemMem, "mem_space"), p);
  const uint64_t operation = get(field(kWaitRegMemMem, "operation"), p);
  const uint32_t ref = static_cast<uint32_t>(get(field(kWaitRegMemMem, "reference"), p));
  const uint32_t mask = static_cast<uint32_t>(get(field(kWaitRegMemMem, "mask"), p));
  uint32_t value = 0;
  std::string what;
  if (mem_space == 1) {
    if (operation != 0)
      return fault(at, 0, false,
                   "WAIT_REG_MEM on memory with operation " + std::to_string(operation) + " is not simulated");
    const uint64_t addr = get(field(kWaitRegMemMem, "poll_address"), p);
    if (addr % 4) return fault(at, addr, false, "WAIT_REG_MEM on unaligned address " + hex(addr));
    if (!ctx_.load<uint32_t>(addr, value))
      return fault(at, addr, true, "WAIT_REG_MEM on unmapped address " + hex(addr));
    what = "memory " + hex(addr);
  } else if (mem_space == 0) {
    const uint32_t reg0 = static_cast<uint32_t>(get(field(kWaitRegMemReg, "poll_reg"), p));
    uint32_t poll = reg0;
    if (operation == 1) {
      // WR_WAIT_WR_REG (Linux's HDP flush and register write-then-wait): write the reference to the first register,
      // then poll the second. Writing again on a re-poll is harmless for the registers we have.
      poll = static_cast<uint32_t>(get(field(kWaitRegMemReg, "write_reg2"), p));
      if (!write_reg(reg0, ref))
        return fault(at, 0, false, "WAIT_REG_MEM writes register " + hex(reg0) + ", which is not simulated");
    } else if (operation != 0) {
      return fault(at, 0, false, "WAIT_REG_MEM operation " + std::to_string(operation) + " is not simulated");
    }
    if (!read_reg(poll, value))
      return fault(at, 0, false, "WAIT_REG_MEM polls register " + hex(poll) + ", which is not simulated");
    const Register* r = t_.regs->find(poll);
    what = "register " + (r ? std::string(r->name) : hex(poll));
  } else {
    return fault(at, 0, false, "WAIT_REG_MEM mem_space " + std::to_string(mem_space) + " is undefined");
  }
  const std::optional<bool> ok = compare(function, value, mask, ref);
  if (!ok) return fault(at, 0, false, "WAIT_REG_MEM function " + std::to_string(function) + " is undefined");
  if (*ok) return Outcome::done;
  waiting_ = "WAIT_REG_MEM on " + what + ": (" + hex(value) + " & " + hex(mask) + ") " +
             std::string(function_symbol(function)) + " " + hex(ref);
  return Outcome::wait;
}

Pm4Executor::Outcome Pm4Executor::write_data(const Where& at) {
  const std::span<const uint32_t> p = pkt_;
  const uint64_t dst_sel = get(field(kWriteData, "dst_sel"), p);
  const bool same_addr = get(field(kWriteData, "addr_incr"), p) != 0;  // ADDR_INCR=1: do not increment
  const uint64_t addr = get(field(kWriteData, "dst_addr"), p);
  const std::span<const uint32_t> data = p.subspan(4);
  if (dst_sel == 5) {  // memory
    if (addr % 4) return fault(at, addr, false, "WRITE_DATA to unaligned address " + hex(addr));
    for (size_t i = 0; i < data.size(); ++i) {
      const uint64_t a = same_addr ? addr : addr + i * 4;
      if (!ctx_.store<uint32_t>(a, data[i])) return fault(at, a, true, "WRITE_DATA to unmapped address " + hex(a));
    }
    return Outcome::done;
  }
  if (dst_sel == 0) {  // memory-mapped register (the address is a dword register offset)
    for (size_t i = 0; i < data.size(); ++i) {
      const uint64_t r = same_addr ? addr : addr + i;
      if (r > 0xffffffffu || !write_reg(static_cast<uint32_t>(r), data[i]))
        return fault(at, 0, false, "WRITE_DATA to register " + hex(r) + ", which is not simulated");
    }
    return Outcome::done;
  }
  return fault(at, 0, false, "WRITE_DATA dst_sel " + std::to_string(dst_sel) + " is not simulated");
}

Pm4Executor::Outcome Pm4Executor::set_sh_reg(const Where& at) {
  const uint64_t offset = get(field(amd::pm4::kSetShReg, "reg_offset"), pkt_);
  const size_t n = pkt_.size() - 2;
  if (offset + n > sh_.size())
    return fault(at, 0, false,
                 "SET_SH_REG of " + std::to_string(n) + " registers at offset " + hex(offset) +
                     " runs past the SH register space (" + hex(sh_.size()) + " registers)");
  std::copy(pkt_.begin() + 2, pkt_.end(), sh_.begin() + static_cast<ptrdiff_t>(offset));
  return Outcome::done;
}

Pm4Executor::Outcome Pm4Executor::dispatch_direct(const Where& at) {
  const std::span<const uint32_t> p = pkt_;
  const uint32_t initiator = static_cast<uint32_t>(get(field(kDispatchDirect, "dispatch_initiator"), p));
  if ((initiator & initiator_shader_en_) == 0)
    return fault(at, 0, false, "DISPATCH_DIRECT with compute_shader_en clear in the initiator " + hex(initiator));
  auto sh = [&](uint32_t addr) { return sh_[addr - amd::kShRegBase]; };
  DispatchInfo d;
  d.queue_id = ctx_.desc().queue_id;
  d.queue_type = ctx_.desc().type;
  d.code_addr = ((uint64_t{sh(pgm_hi_) & pgm_hi_mask_} << 32) | sh(t_.cregs.pgm_lo)) << 8;
  for (size_t i = 0; i < d.user_data.size(); ++i) d.user_data[i] = sh(user_data_ + static_cast<uint32_t>(i));
  d.kernarg_addr = d.user_data64(0);
  d.rsrc1 = sh(t_.cregs.rsrc1);
  d.rsrc2 = sh(t_.cregs.rsrc2);
  d.rsrc3 = sh(t_.cregs.rsrc3);
  d.wave32 = initiator_w32_ != 0 && (initiator & initiator_w32_) != 0;
  const char* dim[3] = {"dim_x", "dim_y", "dim_z"};
  uint64_t threads = 1, groups = 1;
  for (int i = 0; i < 3; ++i) {
    d.groups[i] = static_cast<uint32_t>(get(field(kDispatchDirect, dim[i]), p));
    d.local[i] = num_thread_full_[i]->get(sh(num_thread_[i]));
    d.grid[i] = uint64_t{d.groups[i]} * d.local[i];
    threads *= d.local[i];
    groups *= d.groups[i];
  }
  if (threads == 0 || threads > kMaxWorkgroupThreads)
    return fault(at, 0, false,
                 "DISPATCH_DIRECT with a workgroup of " + std::to_string(d.local[0]) + "x" +
                     std::to_string(d.local[1]) + "x" + std::to_string(d.local[2]) +
                     " threads (COMPUTE_NUM_THREAD_*: 1.." + std::to_string(kMaxWorkgroupThreads) + " in all)");
  if (groups == 0) return Outcome::done;  // an empty grid launches nothing
  if (const std::string why = scratch_setup_error(t_, d.rsrc2, sh(t_.cregs.tmpring_size), sh(t_.cregs.scratch_base_lo),
                                                  sh(t_.cregs.scratch_base_lo + 1), ctx_);
      !why.empty())
    return fault(at, 0, false, why);
  // COMPUTE_PGM_RSRC2.LDS_SIZE is the LDS each workgroup gets, in the target's granules: more than a CU has is a
  // dispatch that never launches on hardware.
  const uint64_t lds =
      uint64_t{field_named(reg_named(*t_.regs, "COMPUTE_PGM_RSRC2"), "lds_size").get(d.rsrc2)} * t_.lds_granule_bytes;
  if (lds > ctx_.desc().lds_bytes)
    return fault(at, 0, false,
                 "DISPATCH_DIRECT with COMPUTE_PGM_RSRC2.LDS_SIZE of " + std::to_string(lds) +
                     " bytes; a workgroup may have " + std::to_string(ctx_.desc().lds_bytes));
  const QueueContext::DispatchError err = ctx_.run_dispatch(d);
  if (err.failed())
    return fault(at, err.memory ? err.address : d.code_addr, err.memory,
                 "dispatch of code at " + hex(d.code_addr) + ": " + err.reason);
  return Outcome::done;
}

Pm4Executor::Outcome Pm4Executor::indirect_buffer(const Where& at) {
  const std::span<const uint32_t> p = pkt_;
  const uint64_t base = get(field(kIndirectBuffer, "ib_base"), p);
  const uint32_t size = static_cast<uint32_t>(get(field(kIndirectBuffer, "ib_size"), p));
  if (get(field(kIndirectBuffer, "valid"), p) == 0)
    return fault(at, base, false, "INDIRECT_BUFFER without the valid bit");
  if (get(field(kIndirectBuffer, "chain"), p) != 0)
    return fault(at, base, false, "chained INDIRECT_BUFFER is not simulated");
  if (size == 0) return fault(at, base, false, "INDIRECT_BUFFER of 0 dwords");
  if (base % 4) return fault(at, base, false, "INDIRECT_BUFFER at unaligned address " + hex(base));
  if (frames_.size() >= kMaxIbDepth)
    return fault(at, base, false,
                 "INDIRECT_BUFFER nested " + std::to_string(frames_.size() + 1) + " deep (the CP has IB1 and IB2)");
  if (!ctx_.ptr(base, uint64_t{size} * 4))
    return fault(at, base, true,
                 "INDIRECT_BUFFER of " + std::to_string(size) + " dwords at " + hex(base) + " is not mapped");
  if (frames_.empty()) ib_from_ = at;
  frames_.push_back({base, size, 0});
  return Outcome::enter_ib;
}

// ---- the PM4 queue ----

namespace {
class Pm4Processor final : public Processor {
 public:
  explicit Pm4Processor(QueueContext& ctx) : x_(ctx, true) {}
  Step run(size_t budget) override { return x_.run_ring(budget); }
  std::string waiting_on() const override { return x_.waiting_on(); }
  const char* engine() const override { return "PM4"; }

 private:
  Pm4Executor x_;
};
}  // namespace

std::unique_ptr<Processor> make_pm4_processor(QueueContext& ctx) { return std::make_unique<Pm4Processor>(ctx); }

}  // namespace hcq::sim::amd_engine
