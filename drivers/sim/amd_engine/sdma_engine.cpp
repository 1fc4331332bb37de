// The SDMA engine of a copy queue. The write pointer counts bytes; packets are dword-aligned and, as the backend
// guarantees, never straddle the ring's end (a straddling packet faults, so the simulator catches a backend that
// breaks the rule). Layouts come from the target's SDMA dialect. POLL_REGMEM gives up after its retry count, as the
// engine does; GCR_REQ (SDMA 5.2+) reports its L2 actions to the host's cache model.
#include <algorithm>

#include "amd/pm4_facts.hpp"
#include "amd/sdma_facts.hpp"
#include "amd/target.hpp"
#include "sim/amd_engine/processor.hpp"

namespace hcq::sim::amd_engine {
namespace {

using namespace amd::sdma;
using amd::Layout;

class SdmaProcessor final : public Processor {
 public:
  explicit SdmaProcessor(QueueContext& ctx) : ctx_(ctx), d_(*ctx.desc().target->sdma) {
    uint64_t r = 0;
    if (ctx_.load<uint64_t>(ctx_.desc().rptr_va, r)) rptr_ = r;
  }
  Step run(size_t budget) override;
  std::string waiting_on() const override { return waiting_; }
  const char* engine() const override { return "SDMA"; }

 private:
  enum class Outcome : uint8_t { done, wait, fault };
  Outcome exec(const Where& at);
  Outcome fault(const Where& at, uint64_t address, bool memory, std::string reason) {
    ctx_.fault(at, pkt_, address, memory, std::move(reason));
    return Outcome::fault;
  }

  Outcome poll_regmem(const Where& at);
  Outcome gcr_req();

  QueueContext& ctx_;
  const Dialect& d_;
  uint64_t rptr_ = 0;  // bytes consumed
  // The POLL_REGMEM being retried: its read pointer and the polls that failed so far.
  uint64_t poll_at_ = ~uint64_t{0};
  uint32_t poll_failures_ = 0;
  std::vector<uint32_t> pkt_;
  std::string waiting_;
};

Step SdmaProcessor::run(size_t budget) {
  const SimQueueDesc& q = ctx_.desc();
  for (size_t done = 0; done < budget; ++done) {
    const Where at{rptr_, false, 0, 0};
    pkt_.clear();
    const std::optional<uint64_t> w = ctx_.read_wptr();
    if (!w) return ctx_.fault(at, {}, q.wptr_va, true, "write pointer not mapped");
    if (*w == rptr_) return Step::idle;
    if (q.ring_size == 0 || (q.ring_size & (q.ring_size - 1)) != 0 || q.ring_size < 4)
      return ctx_.fault(at, {}, q.ring_va, false,
                        "ring size " + std::to_string(q.ring_size) + " is not a power of two");
    if (*w % 4) return ctx_.fault(at, {}, 0, false, "write pointer " + std::to_string(*w) + " is not dword-aligned");
    if (*w < rptr_ || *w - rptr_ > q.ring_size)
      return ctx_.fault(
          at, {}, 0, false,
          "write pointer " + std::to_string(*w) + " is behind the read pointer or more than a ring ahead");
    const uint64_t slot = rptr_ & (q.ring_size - 1);
    const uint64_t to_end = (q.ring_size - slot) / 4, written = (*w - rptr_) / 4, avail = std::min(to_end, written);
    uint32_t hdr[4] = {};
    if (!ctx_.read_words(q.ring_va + slot, hdr, std::min<uint64_t>(avail, 4)))
      return ctx_.fault(at, {}, q.ring_va + slot, true, "ring not mapped");
    pkt_.assign(hdr, hdr + std::min<uint64_t>(avail, 4));
    pkt_.resize(1);
    const uint32_t op = kHdrOp.get(hdr[0]), sub = kHdrSubOp.get(hdr[0]);
    // The packet's length, from its layout (0: an op or sub-op the engine does not execute).
    uint64_t n = 0;
    switch (op) {
      case OP_NOP: n = 1 + uint64_t{field(*d_.nop, "count").get(hdr[0])}; break;
      case OP_COPY: n = sub == SUBOP_COPY_LINEAR ? d_.copy_linear->words : 0; break;
      case OP_WRITE:
        if (sub == 0) n = avail >= 4 ? 4 + uint64_t{field(*d_.write_linear, "count").get(hdr[3])} + 1 : 4;
        break;
      case OP_FENCE: n = d_.fence->words; break;
      case OP_TRAP: n = d_.trap->words; break;
      case OP_POLL_REGMEM: n = d_.poll_regmem->words; break;
      case OP_TIMESTAMP:
        n = (sub == SUBOP_TIMESTAMP_GET || sub == SUBOP_TIMESTAMP_GET_GLOBAL) ? d_.timestamp->words : 0;
        break;
      case OP_GCR_REQ: n = d_.gcr_req ? d_.gcr_req->words : 0; break;
      default: break;
    }
    if (n == 0) {
      const std::string_view name = op_name(op);
      if (name.empty()) return ctx_.fault(at, pkt_, 0, false, "unknown SDMA op " + hex(op) + " sub_op " + hex(sub));
      return ctx_.fault(at, pkt_, 0, false,
                        "SDMA " + std::string(name) + " sub_op " + std::to_string(sub) + " is not simulated");
    }
    if (n > written)
      return ctx_.fault(
          at, pkt_, 0, false,
          "truncated packet: it needs " + std::to_string(n) + " dwords, " + std::to_string(written) + " written");
    if (n > to_end)
      return ctx_.fault(at, pkt_, 0, false,
                        "packet of " + std::to_string(n) + " dwords straddles the ring end (" + std::to_string(to_end) +
                            " dwords left before it)");
    pkt_.resize(n);
    if (!ctx_.read_words(q.ring_va + slot, pkt_.data(), n))
      return ctx_.fault(at, pkt_, q.ring_va + slot, true, "ring not mapped");
    switch (exec(at)) {
      case Outcome::done:
        rptr_ += n * 4;
        ctx_.publish_rptr(rptr_);
        break;
      case Outcome::wait: return Step::waiting;
      case Outcome::fault: return Step::faulted;
    }
  }
  return Step::progress;
}

SdmaProcessor::Outcome SdmaProcessor::exec(const Where& at) {
  const std::span<const uint32_t> p = pkt_;
  switch (kHdrOp.get(p[0])) {
    case OP_NOP: return Outcome::done;
    case OP_COPY: {
      const Layout& l = *d_.copy_linear;
      const uint64_t bytes = get(field(l, "count"), p) + 1;
      const uint64_t src = get(field(l, "src_addr"), p), dst = get(field(l, "dst_addr"), p);
      uint64_t bad = 0;
      if (!ctx_.copy(dst, src, bytes, bad))
        return fault(at, bad, true,
                     "COPY_LINEAR of " + std::to_string(bytes) + " bytes from " + hex(src) + " to " + hex(dst) +
                         " touches unmapped address " + hex(bad));
      return Outcome::done;
    }
    case OP_WRITE: {
      const uint64_t addr = get(field(*d_.write_linear, "dst_addr"), p);
      if (addr % 4) return fault(at, addr, false, "WRITE_LINEAR to unaligned address " + hex(addr));
      if (!ctx_.write_words(addr, p.data() + 4, p.size() - 4))
        return fault(at, addr, true, "WRITE_LINEAR to unmapped address " + hex(addr));
      return Outcome::done;
    }
    case OP_FENCE: {
      const Layout& l = *d_.fence;
      const uint64_t addr = get(field(l, "addr"), p);
      if (addr % 4) return fault(at, addr, false, "FENCE to unaligned address " + hex(addr));
      if (!ctx_.store<uint32_t>(addr, static_cast<uint32_t>(get(field(l, "data"), p))))
        return fault(at, addr, true, "FENCE to unmapped address " + hex(addr));
      return Outcome::done;
    }
    case OP_TRAP:
      ctx_.host().interrupt(static_cast<uint32_t>(get(field(*d_.trap, "int_context"), p)));
      return Outcome::done;
    case OP_POLL_REGMEM: return poll_regmem(at);
    case OP_GCR_REQ: return gcr_req();
    case OP_TIMESTAMP: {
      const uint64_t addr = get(field(*d_.timestamp, "write_addr"), p);
      if (addr % 8) return fault(at, addr, false, "TIMESTAMP to unaligned address " + hex(addr));
      if (!ctx_.store<uint64_t>(addr, ctx_.host().gpu_clock()))
        return fault(at, addr, true, "TIMESTAMP to unmapped address " + hex(addr));
      return Outcome::done;
    }
    default: return fault(at, 0, false, "unreachable SDMA op");
  }
}

SdmaProcessor::Outcome SdmaProcessor::poll_regmem(const Where& at) {
  const std::span<const uint32_t> p = pkt_;
  const Layout& l = *d_.poll_regmem;
  if (get(field(l, "mem_poll"), p) == 0 || get(field(l, "hdp_flush"), p) != 0)
    return fault(at, 0, false, "POLL_REGMEM on registers (or an HDP flush) is not simulated");
  const uint64_t addr = get(field(l, "addr"), p);
  if (addr % 4) return fault(at, addr, false, "POLL_REGMEM on unaligned address " + hex(addr));
  const uint32_t func = static_cast<uint32_t>(get(field(l, "func"), p));
  const uint32_t ref = static_cast<uint32_t>(get(field(l, "value"), p));
  const uint32_t mask = static_cast<uint32_t>(get(field(l, "mask"), p));
  const uint32_t retries = static_cast<uint32_t>(get(field(l, "retry_count"), p));
  uint32_t v = 0;
  if (!ctx_.load<uint32_t>(addr, v)) return fault(at, addr, true, "POLL_REGMEM on unmapped address " + hex(addr));
  const std::optional<bool> ok = compare(func, v, mask, ref);
  if (!ok) return fault(at, 0, false, "POLL_REGMEM function " + std::to_string(func) + " is undefined");
  if (poll_at_ != rptr_) poll_at_ = rptr_, poll_failures_ = 0;  // the first poll of this packet
  if (*ok) {
    poll_at_ = ~uint64_t{0};
    return Outcome::done;
  }
  // One failed poll; the first is not a retry. A finite count runs out after `retries` more: the engine raises its
  // poll timeout (to the kernel's log, not to the process) and goes on with the next packet, the condition unmet.
  // The interval (dword 5) spaces the engine's polls in its own clocks, which the simulator does not keep: its polls
  // are the runner's re-polls (EngineOptions poll_min..poll_max), so a count is a number of polls, not a time.
  if (retries != kPollRetryForever && poll_failures_++ >= retries) {
    poll_at_ = ~uint64_t{0};
    return Outcome::done;
  }
  waiting_ = "POLL_REGMEM on memory " + hex(addr) + ": (" + hex(v) + " & " + hex(mask) + ") " +
             std::string(function_symbol(func)) + " " + hex(ref) +
             (retries == kPollRetryForever
                  ? std::string()
                  : ", poll " + std::to_string(poll_failures_) + " of " + std::to_string(retries + 1));
  return Outcome::wait;
}

// GCR_REQ: the GCR_CNTL actions over an address range (the simulated caches act on all of memory, as a full-range
// request does). Its bits are the PM4 GCR_CNTL's; the L2 write-back and invalidate go to the host's cache model.
SdmaProcessor::Outcome SdmaProcessor::gcr_req() {
  const std::span<const uint32_t> p = pkt_;
  const Layout& l = *d_.gcr_req;
  const uint32_t control =
      static_cast<uint32_t>(get(field(l, "gcr_control_15_0"), p) | (get(field(l, "gcr_control_18_16"), p) << 16));
  const amd::pm4::Dialect& gcr = amd::pm4::kGfx10Plus;
  const uint8_t ops = static_cast<uint8_t>(((control & gcr.acquire_l2_writeback) ? kCacheWriteback : 0) |
                                           ((control & gcr.acquire_l2_invalidate) ? kCacheInvalidate : 0));
  if (ops) ctx_.host().caches(ops);
  return Outcome::done;
}

}  // namespace

std::unique_ptr<Processor> make_sdma_processor(QueueContext& ctx) { return std::make_unique<SdmaProcessor>(ctx); }

}  // namespace hcq::sim::amd_engine
