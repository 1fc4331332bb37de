// Host (GPFIFO class) methods: SEM_ADDR/SEM_PAYLOAD/SEM_EXECUTE (acquire in all its compare forms, release with
// optional timestamp, reduction), NON_STALL_INTERRUPT. NOP, WFI, SET_REFERENCE and MEM_OP_* are kept as state only:
// the simulator executes in order and writes memory through, so waits for idle and cache operations have nothing
// left to do.
#include <optional>

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
        nonstall_(cls.find("NON_STALL_INTERRUPT")) {}

  Outcome execute(const MethodCall& c) override {
    if (&c.method == nonstall_) {
      ctx_.host().nonstall_interrupt();
      return Outcome::done;
    }
    if (&c.method == execute_) return sem_execute(c);
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
  const nv::Method *addr_lo_, *addr_hi_, *payload_lo_, *payload_hi_, *execute_, *nonstall_;
  std::string waiting_;
};

}  // namespace

std::unique_ptr<ClassEngine> make_host_engine(ChannelContext& ctx, const nv::ClassMethods& cls) {
  return std::make_unique<HostEngine>(ctx, cls);
}

}  // namespace hcq::sim::nv_engine
