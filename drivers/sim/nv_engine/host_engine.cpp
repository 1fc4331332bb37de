// Host (GPFIFO class) methods: SEM_ADDR/SEM_PAYLOAD/SEM_EXECUTE (acquire in all its compare forms, release with
// optional timestamp, reduction), NON_STALL_INTERRUPT, WFI and MEM_OP_A..D. The engines run each method to completion
// in order, so a WFI has nothing left to wait for; it and MEM_OP_D (the trigger: "MEM_OP_D MUST be preceded by
// MEM_OPs A-C") are checked as the host checks them, an undefined scope or operation faulting the channel, and the
// memory operations that act on the L2 (a system membar, L2_FLUSH_DIRTY, the L2 invalidates) are reported to the
// host's cache model. A semaphore release writes no cache back by itself (RELEASE_WFI waits for idle, no more;
// UVM puts a MEM_OP membar in front of its releases where it needs one).
#include <optional>

#include "nv/facts/methods.hpp"
#include "sim/nv_engine/executor.hpp"
#include "sim/nv_engine/semaphore.hpp"

namespace hcq::sim::nv_engine {
namespace {

class HostEngine final : public ClassEngine {
 public:
  HostEngine(ChannelContext& ctx, const nv::ClassMethods& cls)
      : ctx_(ctx),
        addr_lo_(cls.find("SEM_ADDR_LO")),
        addr_hi_(cls.find("SEM_ADDR_HI")),
        payload_lo_(cls.find("SEM_PAYLOAD_LO")),
        payload_hi_(cls.find("SEM_PAYLOAD_HI")),
        execute_(cls.find("SEM_EXECUTE")),
        nonstall_(cls.find("NON_STALL_INTERRUPT")),
        wfi_(cls.find("WFI")),
        mem_op_a_(cls.find("MEM_OP_A")),
        mem_op_c_(cls.find("MEM_OP_C")),
        mem_op_d_(cls.find("MEM_OP_D")) {}

  Outcome execute(const MethodCall& c) override {
    if (&c.method == nonstall_) {
      ctx_.host().nonstall_interrupt();
      return Outcome::done;
    }
    if (&c.method == execute_) return sem_execute(c);
    if (&c.method == wfi_) return wfi(c);
    if (&c.method == mem_op_d_) return mem_op(c);
    return Outcome::done;
  }

  std::string waiting_on() const override { return waiting_; }

 private:
  Outcome fault(ChannelFaultKind kind, const MethodCall& c, uint64_t address, const std::string& why,
                MmuAccess access = MmuAccess::read) {
    ctx_.fault(kind, c.at, address, std::string(c.cls.prefix) + "_" + std::string(c.method.name) + ": " + why, access);
    return Outcome::fault;
  }
  uint64_t field(const MethodCall& c, const nv::Method* m, std::string_view name) const {
    const nv::BitField* f = m ? m->field(name) : nullptr;
    return f ? f->get(c.value(m)) : 0;
  }

  // "SCOPE 2" style text for a field value: its enum name, or the number when the class defines none.
  static std::string value_text(const nv::BitField& f, uint64_t v) {
    const std::string_view n = f.name_of(v);
    return n.empty() ? std::to_string(v) : std::string(n);
  }
  // A field of method m's data that must hold one of its enum's values (a reserved or undefined encoding faults).
  // `fields`: where to find it, when not in m's own table.
  Outcome check_enum(const MethodCall& c, const nv::Method* m, std::string_view name, const std::string& why_prefix,
                     std::span<const nv::BitField> fields = {}) {
    const nv::BitField* f = nullptr;
    if (m && fields.empty()) f = m->field(name);
    for (const nv::BitField& g : fields)
      if (g.name == name) f = &g;
    if (!f || !m) return Outcome::done;
    const uint64_t v = f->get(c.value(m));
    if (!f->name_of(v).empty()) return Outcome::done;
    ctx_.fault(ChannelFaultKind::pbdma_error, c.at, 0,
               std::string(c.cls.prefix) + "_" + std::string(m->name) + ": " + why_prefix + "undefined " +
                   std::string(f->name) + " " + std::to_string(v));
    return Outcome::fault;
  }

  // WFI: SCOPE is the whole method (bit 0); a data word with other bits set names no scope.
  Outcome wfi(const MethodCall& c) {
    const nv::BitField* scope = c.method.field("SCOPE");
    if (scope && (c.data & ~static_cast<uint32_t>(scope->place(scope->mask()))) != 0)
      return fault(ChannelFaultKind::pbdma_error, c, 0, "undefined SCOPE " + hex(c.data));
    return Outcome::done;
  }

  // MEM_OP_D runs the memory operation MEM_OP_A..C describe.
  Outcome mem_op(const MethodCall& c) {
    const nv::BitField* op_f = c.method.field("OPERATION");
    const uint32_t op = static_cast<uint32_t>(op_f->get(c.data));
    const std::string_view op_name = op_f->name_of(op);
    if (op_name.empty()) return fault(ChannelFaultKind::pbdma_error, c, 0, "undefined OPERATION " + hex(op));
    const std::string what = "OPERATION " + std::string(op_name) + " with ";
    uint8_t ops = kCacheNone;
    if (op_name == "MEMBAR") {
      if (check_enum(c, mem_op_c_, "MEMBAR_TYPE", what) != Outcome::done) return Outcome::fault;
      // A system membar makes every earlier write visible to the system (the L2's dirty lines reach memory); a GPU
      // membar orders them for the GPU only, which reads them through the same L2.
      const nv::BitField* type = mem_op_c_->field("MEMBAR_TYPE");
      if (type->get(c.value(mem_op_c_)) == type->value_of("SYS_MEMBAR")) ops = kCacheWriteback;
    } else if (op_name == "MMU_TLB_INVALIDATE" || op_name == "MMU_TLB_INVALIDATE_TARGETED") {
      // The simulated MMU translates through the driver's tables on every access: nothing is cached to invalidate,
      // but the parameters must be ones the host takes.
      const std::span<const nv::BitField> tlb = nv::mem_op_c_tlb_invalidate();
      for (const char* f : {"TLB_INVALIDATE_REPLAY", "TLB_INVALIDATE_ACK_TYPE", "TLB_INVALIDATE_PDB_APERTURE"})
        if (check_enum(c, mem_op_c_, f, what, tlb) != Outcome::done) return Outcome::fault;
      if (op_name == "MMU_TLB_INVALIDATE_TARGETED" &&
          check_enum(c, mem_op_c_, "TLB_INVALIDATE_ACCESS_TYPE", what, tlb) != Outcome::done)
        return Outcome::fault;
      if (check_enum(c, mem_op_a_, "TLB_INVALIDATE_INVAL_SCOPE", what) != Outcome::done) return Outcome::fault;
      const nv::BitField* sysmembar = mem_op_a_ ? mem_op_a_->field("TLB_INVALIDATE_SYSMEMBAR") : nullptr;
      if (sysmembar && sysmembar->get(c.value(mem_op_a_)) == sysmembar->value_of("EN")) ops = kCacheWriteback;
    } else if (op_name == "L2_FLUSH_DIRTY") {
      ops = kCacheWriteback;
    } else if (op_name == "L2_SYSMEM_INVALIDATE" || op_name == "L2_PEERMEM_INVALIDATE" ||
               op_name == "L2_SYSMEM_NCOH_INVALIDATE") {
      ops = kCacheInvalidate;
    }
    // L2_CLEAN_COMPTAGS, L2_WAIT_FOR_SYS_PENDING_READS and ACCESS_COUNTER_CLR touch no cached data the simulator has.
    if (ops) ctx_.host().caches(ops);
    return Outcome::done;
  }

  Outcome sem_execute(const MethodCall& c) {
    const nv::BitField* op_f = c.method.field("OPERATION");
    const uint32_t op = static_cast<uint32_t>(op_f->get(c.data));
    const std::string_view op_name = op_f->name_of(op);
    const nv::BitField* size_f = c.method.field("PAYLOAD_SIZE");
    const bool is64 = size_f->get(c.data) == size_f->value_of("64BIT");
    const uint64_t va = (field(c, addr_lo_, "OFFSET") << 2) | (field(c, addr_hi_, "OFFSET") << 32);
    const uint64_t payload = uint64_t{c.value(payload_lo_)} | (is64 ? uint64_t{c.value(payload_hi_)} << 32 : 0);
    if (is64 && va % 8)
      return fault(ChannelFaultKind::pbdma_error, c, va, "64-bit semaphore address is not 8-byte aligned");

    if (op_name == "RELEASE") {
      const bool ts = c.method.field("RELEASE_TIMESTAMP")->get(c.data) == 1;
      if (const std::optional<uint64_t> bad = release_semaphore(ctx_, va, payload, is64, ts))
        return fault(ChannelFaultKind::mmu_fault, c, *bad, "semaphore release to an unmapped address",
                     MmuAccess::write);
      return Outcome::done;
    }
    if (op_name == "REDUCTION") {
      if (!ctx_.ptr(va, is64 ? 8 : 4))
        return fault(ChannelFaultKind::mmu_fault, c, va, "semaphore reduction on an unmapped address",
                     MmuAccess::atomic);
      const nv::BitField* red = c.method.field("REDUCTION");
      const bool is_signed = c.method.field("REDUCTION_FORMAT")->get(c.data) == 0;
      const std::string why = reduce_semaphore(ctx_, va, red->name_of(red->get(c.data)), is_signed, payload, is64);
      if (!why.empty()) return fault(ChannelFaultKind::pbdma_error, c, va, why);
      // A reduction may carry the timestamp too (how a queue stamps a signal without changing its value).
      if (c.method.field("RELEASE_TIMESTAMP")->get(c.data) == 1 &&
          !ctx_.store<uint64_t>(va + 8, ctx_.host().gpu_time_ns()))
        return fault(ChannelFaultKind::mmu_fault, c, va + 8, "semaphore timestamp to an unmapped address",
                     MmuAccess::write);
      return Outcome::done;
    }
    if (op_name.empty()) return fault(ChannelFaultKind::pbdma_error, c, 0, "undefined OPERATION " + std::to_string(op));

    // An acquire: compare memory with the payload, at the payload's width.
    uint64_t mem = 0;
    bool mapped;
    if (is64) {
      mapped = ctx_.load<uint64_t>(va, mem);
    } else {
      uint32_t m32 = 0;
      mapped = ctx_.load<uint32_t>(va, m32);
      mem = m32;
    }
    if (!mapped) return fault(ChannelFaultKind::mmu_fault, c, va, "semaphore acquire from an unmapped address");
    const uint64_t mask = is64 ? ~uint64_t{0} : 0xffffffffu;
    bool ok;
    std::string relation;
    if (op_name == "ACQUIRE") {
      ok = mem == payload, relation = "==";
    } else if (op_name == "ACQ_STRICT_GEQ") {
      ok = mem >= payload, relation = ">=";
    } else if (op_name == "ACQ_CIRC_GEQ") {  // >= modulo wrap-around: the difference, as a signed value, is >= 0
      const uint64_t diff = (mem - payload) & mask;
      ok = (diff & ((mask >> 1) + 1)) == 0, relation = ">= (circular)";
    } else if (op_name == "ACQ_AND") {
      ok = (mem & payload) != 0, relation = "& nonzero with";
    } else {  // ACQ_NOR
      ok = (~(mem | payload) & mask) != 0, relation = "NOR nonzero with";
    }
    if (ok) return Outcome::done;
    waiting_ = "semaphore acquire " + std::string(op_name) + " at " + hex(va) + " (" + (is64 ? "64" : "32") +
               "-bit): memory holds " + hex(mem) + ", waiting for " + relation + " " + hex(payload);
    return Outcome::wait;
  }

  ChannelContext& ctx_;
  const nv::Method *addr_lo_, *addr_hi_, *payload_lo_, *payload_hi_, *execute_, *nonstall_, *wfi_, *mem_op_a_,
      *mem_op_c_, *mem_op_d_;
  std::string waiting_;
};

}  // namespace

std::unique_ptr<ClassEngine> make_host_engine(ChannelContext& ctx, const nv::ClassMethods& cls) {
  return std::make_unique<HostEngine>(ctx, cls);
}

}  // namespace hcq::sim::nv_engine
