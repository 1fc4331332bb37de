// The AQL packet processor of a compute queue (the CP firmware's HSA mode). A slot is processed once its header's
// type is no longer INVALID (the header store is the publication), in order; afterwards the header is set back to
// INVALID and the read index advances. Completion signals are decremented as HSA specifies. The header's fences are
// cache actions: a system-scope acquire invalidates the GPU's caches before the packet's work, a system-scope release
// writes them back before the completion signal (QueueHost::caches).
#include "amd/aql_facts.hpp"
#include "amd/encode.hpp"
#include "amd/pm4_facts.hpp"
#include "sim/amd_engine/pm4_engine.hpp"
#include "sim/amd_engine/processor.hpp"

namespace hcq::sim::amd_engine {
namespace {

using namespace amd::aql;
using amd::Layout;

// ROCr's amd_signal_t (hsa/amd_hsa_signal.h), the object an AQL completion_signal handle points to: the 64-bit
// value at byte 8, the KFD event mailbox pointer at 16 and the event id at 24.
constexpr uint64_t kSignalValueOffset = 8, kSignalMailboxOffset = 16, kSignalEventIdOffset = 24;

class AqlProcessor final : public Processor {
 public:
  explicit AqlProcessor(QueueContext& ctx) : ctx_(ctx), pm4_(ctx, false) {
    uint64_t r = 0;
    if (ctx_.load<uint64_t>(ctx_.desc().rptr_va, r)) rptr_ = r;
  }
  Step run(size_t budget) override;
  std::string waiting_on() const override { return pm4_.in_ib() ? pm4_.waiting_on() : waiting_; }
  const char* engine() const override { return "AQL"; }

 private:
  enum class Outcome : uint8_t { done, wait, fault, ib };
  Outcome dispatch(const Where& at, uint64_t packet_va);
  Outcome barrier_and(const Where& at);
  Outcome vendor(const Where& at);
  // The scratch a dispatch needs against the queue's amd_queue_t; empty when usable or not needed.
  std::string scratch_error(const DispatchInfo& d, const amd::KernelDescriptor& desc);
  // Completion signal, header back to INVALID, read index + 1.
  bool finish(const Where& at);
  // The header's acquire fence, applied when the packet starts its work (a barrier: once its dependencies are met).
  void acquire() {
    if (kAcquireScope.get(pkt_[0]) == SCOPE_SYSTEM) ctx_.host().caches(kCacheInvalidate);
  }
  Outcome fault(const Where& at, uint64_t address, bool memory, std::string reason) {
    ctx_.fault(at, pkt_, address, memory, std::move(reason));
    return Outcome::fault;
  }
  uint64_t slot_va(uint64_t index) const {
    const SimQueueDesc& q = ctx_.desc();
    return q.ring_va + (index & (q.ring_size / kPacketBytes - 1)) * kPacketBytes;
  }

  QueueContext& ctx_;
  Pm4Executor pm4_;
  uint64_t rptr_ = 0;  // packets consumed
  uint32_t pkt_[kPacketWords] = {};
  Where slot_at_;  // the slot whose IB is running
  std::string waiting_;
};

Step AqlProcessor::run(size_t budget) {
  const SimQueueDesc& q = ctx_.desc();
  for (size_t done = 0; done < budget; ++done) {
    if (pm4_.in_ib()) {
      const Step s = pm4_.run_ibs(budget - done);
      if (s != Step::idle) return s;
      if (!finish(slot_at_)) return Step::faulted;
      continue;
    }
    const Where at{rptr_, false, 0, 0};
    const std::optional<uint64_t> w = ctx_.read_wptr();
    if (!w) return ctx_.fault(at, {}, q.wptr_va, true, "write pointer not mapped");
    if (*w == rptr_) return Step::idle;
    const uint64_t slots = q.ring_size / kPacketBytes;
    if (slots == 0 || (slots & (slots - 1)) != 0 || q.ring_size % kPacketBytes)
      return ctx_.fault(
          at, {}, q.ring_va, false,
          "ring size " + std::to_string(q.ring_size) + " is not a power-of-two number of 64-byte packets");
    if (*w < rptr_ || *w - rptr_ > slots)
      return ctx_.fault(at, {}, 0, false,
                        "write index " + std::to_string(*w) + " is behind the read index or more than a ring ahead");
    const uint64_t va = slot_va(rptr_);
    uint16_t header = 0;
    if (!ctx_.load<uint16_t>(va, header)) return ctx_.fault(at, {}, va, true, "ring not mapped");
    const uint32_t type = kType.get(header);
    if (type == INVALID) {
      waiting_ =
          "AQL slot " + std::to_string(rptr_) + " (write index " + std::to_string(*w) + "): header not yet published";
      return Step::waiting;
    }
    if (!ctx_.read_words(va, pkt_, kPacketWords)) return ctx_.fault(at, {}, va, true, "ring not mapped");
    // HSA defines fence scopes NONE, AGENT and SYSTEM; the packet processor rejects the fourth encoding.
    for (const Field* f : {&kAcquireScope, &kReleaseScope})
      if (f->get(header) > SCOPE_SYSTEM)
        return ctx_.fault(at, std::span<const uint32_t>(pkt_, 1), 0, false,
                          std::string(type_name(type).empty() ? "AQL packet" : type_name(type)) + " " +
                              std::string(f->name) + " " + std::to_string(f->get(header)) + " is undefined");
    Outcome o = Outcome::fault;
    switch (type) {
      case KERNEL_DISPATCH: o = dispatch(at, va); break;
      case BARRIER_AND: o = barrier_and(at); break;
      case VENDOR_SPECIFIC: o = vendor(at); break;
      default: {
        const std::string_view name = type_name(type);
        o = fault(at, 0, false,
                  name.empty() ? "unknown AQL packet type " + std::to_string(type)
                               : "AQL packet type " + std::string(name) + " is not simulated");
      }
    }
    switch (o) {
      case Outcome::done:
        if (!finish(at)) return Step::faulted;
        break;
      case Outcome::ib: slot_at_ = at; break;
      case Outcome::wait: return Step::waiting;
      case Outcome::fault: return Step::faulted;
    }
  }
  return Step::progress;
}

bool AqlProcessor::finish(const Where& at) {
  const Layout& l = kType.get(pkt_[0]) == KERNEL_DISPATCH ? kKernelDispatch
                    : kType.get(pkt_[0]) == BARRIER_AND   ? kBarrierAnd
                                                          : kVendorPm4Ib;
  // The release fence, before the completion signal: at system scope the packet's writes reach memory (the L2 is
  // written back) so that the host, which sees the signal, sees them too. Agent scope orders them for this GPU only,
  // whose L2 already holds them: no cache action (HSA: agent scope is visible to the agent's own work-items only).
  if (kReleaseScope.get(pkt_[0]) == SCOPE_SYSTEM) ctx_.host().caches(kCacheWriteback);
  const uint64_t sig = get(field(l, "completion_signal"), pkt_);
  if (sig) {
    std::byte* v = ctx_.ptr(sig + kSignalValueOffset, 8);
    uint64_t mailbox = 0;
    uint32_t event_id = 0;
    if (!v || sig % 8 || !ctx_.load<uint64_t>(sig + kSignalMailboxOffset, mailbox) ||
        !ctx_.load<uint32_t>(sig + kSignalEventIdOffset, event_id)) {
      fault(at, sig, sig % 8 == 0, "completion signal " + hex(sig) + " is unaligned or not mapped");
      return false;
    }
    std::atomic_ref<int64_t>(*reinterpret_cast<int64_t*>(v)).fetch_sub(1, std::memory_order_acq_rel);
    if (mailbox) {
      if (mailbox % 8 || !ctx_.store<uint64_t>(mailbox, event_id)) {
        fault(at, mailbox, mailbox % 8 == 0,
              "completion signal's event mailbox " + hex(mailbox) + " is unaligned or not mapped");
        return false;
      }
      ctx_.host().interrupt(event_id);
    }
  }
  const uint64_t va = slot_va(rptr_);
  if (!ctx_.store<uint16_t>(va, header(INVALID, false, SCOPE_NONE, SCOPE_NONE))) {
    fault(at, va, true, "ring not mapped");
    return false;
  }
  ++rptr_;
  ctx_.publish_rptr(rptr_);
  return true;
}

AqlProcessor::Outcome AqlProcessor::dispatch(const Where& at, uint64_t packet_va) {
  const Layout& l = kKernelDispatch;
  const std::span<const uint32_t> p = pkt_;
  const uint64_t dims = get(field(l, "dimensions"), p);
  if (dims < 1 || dims > 3) return fault(at, 0, false, "KERNEL_DISPATCH with " + std::to_string(dims) + " dimensions");
  DispatchInfo d;
  d.queue_id = ctx_.desc().queue_id;
  d.queue_type = ctx_.desc().type;
  d.dispatch_packet_addr = packet_va;
  d.kernel_object = get(field(l, "kernel_object"), p);
  d.kernarg_addr = get(field(l, "kernarg_address"), p);
  d.group_segment_size = static_cast<uint32_t>(get(field(l, "group_segment_size"), p));
  d.private_segment_size = static_cast<uint32_t>(get(field(l, "private_segment_size"), p));
  const char* wg[3] = {"workgroup_size_x", "workgroup_size_y", "workgroup_size_z"};
  const char* gr[3] = {"grid_size_x", "grid_size_y", "grid_size_z"};
  uint64_t threads = 1, items = 1;
  for (uint64_t i = 0; i < 3; ++i) {
    d.local[i] = i < dims ? static_cast<uint32_t>(get(field(l, wg[i]), p)) : 1;
    d.grid[i] = i < dims ? get(field(l, gr[i]), p) : 1;
    threads *= d.local[i];
    items *= d.grid[i];
    if (d.local[i]) d.groups[i] = static_cast<uint32_t>((d.grid[i] + d.local[i] - 1) / d.local[i]);
  }
  if (threads == 0 || threads > 1024)
    return fault(at, 0, false,
                 "KERNEL_DISPATCH with a workgroup of " + std::to_string(threads) + " work-items (1..1024)");
  if (d.kernel_object % 64)
    return fault(at, d.kernel_object, false, "kernel object " + hex(d.kernel_object) + " is not 64-byte aligned");
  const std::byte* kd = ctx_.ptr(d.kernel_object, 64);
  if (!kd) return fault(at, d.kernel_object, true, "kernel descriptor at " + hex(d.kernel_object) + " is not mapped");
  const amd::KernelDescriptor desc = amd::KernelDescriptor::parse(std::span<const std::byte>(kd, 64));
  d.code_addr = d.kernel_object + static_cast<uint64_t>(desc.kernel_code_entry_byte_offset);
  d.rsrc1 = desc.compute_pgm_rsrc1;
  d.rsrc2 = desc.compute_pgm_rsrc2;
  d.rsrc3 = desc.compute_pgm_rsrc3;
  d.wave32 = (desc.kernel_code_properties & amd::KernelDescriptor::kWavefrontSize32) != 0;
  if (items == 0) {
    acquire();  // an empty grid runs no work, but its fences are still the packet's
    return Outcome::done;
  }
  if (const std::string why = scratch_error(d, desc); !why.empty()) return fault(at, 0, false, why);
  // HSA: the packet's group_segment_size is the LDS the CP allocates per workgroup; it covers at least the kernel's
  // static LDS (a smaller one lets the kernel's LDS accesses run past its allocation) and fits the CU's LDS.
  if (d.group_segment_size < desc.group_segment_fixed_size)
    return fault(at, 0, false,
                 "KERNEL_DISPATCH group_segment_size " + std::to_string(d.group_segment_size) +
                     " is below the kernel's group_segment_fixed_size " +
                     std::to_string(desc.group_segment_fixed_size));
  if (d.group_segment_size > ctx_.desc().lds_bytes)
    return fault(at, 0, false,
                 "KERNEL_DISPATCH group_segment_size " + std::to_string(d.group_segment_size) + " exceeds the " +
                     std::to_string(ctx_.desc().lds_bytes) + " bytes of LDS a workgroup may have");
  acquire();
  const QueueContext::DispatchError err = ctx_.run_dispatch(d);
  if (err.failed())
    return fault(at, err.memory ? err.address : d.code_addr, err.memory,
                 "dispatch of code at " + hex(d.code_addr) + ": " + err.reason);
  return Outcome::done;
}

std::string AqlProcessor::scratch_error(const DispatchInfo& d, const amd::KernelDescriptor& desc) {
  // HSA: the packet's private_segment_size covers at least the kernel's fixed private segment.
  if (d.private_segment_size < desc.private_segment_fixed_size)
    return "KERNEL_DISPATCH private_segment_size " + std::to_string(d.private_segment_size) +
           " is below the kernel's private_segment_fixed_size " + std::to_string(desc.private_segment_fixed_size);
  const amd::RegisterTable& regs = *ctx_.desc().target->regs;
  const amd::Register& rsrc2 = *regs.find("COMPUTE_PGM_RSRC2");
  const amd::Register& tmpring_reg = *regs.find("COMPUTE_TMPRING_SIZE");
  auto reg_field = [](const amd::Register& r, std::string_view n) -> const amd::Field& {
    for (const amd::Field& f : r.fields)
      if (f.name == n) return f;
    throw std::logic_error("register " + std::string(r.name) + " lacks " + std::string(n));
  };
  if (d.private_segment_size == 0 && reg_field(rsrc2, "scratch_en").get(d.rsrc2) == 0) return {};
  // The CP finds the amd_queue_t from the read pointer KFD was given and the offset stored after it, and sets up
  // the waves' architected flat scratch from it.
  const uint64_t rptr = ctx_.desc().rptr_va;
  uint32_t off = 0;
  uint32_t q[amd::aql::kAmdQueueBytes / 4];
  if (!ctx_.load<uint32_t>(rptr + 8, off) || off > rptr || !ctx_.read_words(rptr - off, q, std::size(q)))
    return "dispatch needs scratch, but the queue's amd_queue_t (read pointer " + hex(rptr) + " less offset " +
           std::to_string(off) + ") is not mapped";
  const Layout& l = amd::aql::kAmdQueue;
  const uint64_t base = get(field(l, "scratch_backing_memory_location"), q);
  const uint64_t bytes = get(field(l, "scratch_backing_memory_byte_size"), q);
  const uint64_t lane = get(field(l, "scratch_wave64_lane_byte_size"), q);
  const uint32_t tmpring = static_cast<uint32_t>(get(field(l, "compute_tmpring_size"), q));
  const uint64_t waves = reg_field(tmpring_reg, "waves").get(tmpring);
  const uint64_t wave_bytes = uint64_t{reg_field(tmpring_reg, "wavesize").get(tmpring)} << regs.scratch_wave_shift;
  const std::string what =
      "dispatch with " + std::to_string(d.private_segment_size) + " bytes of scratch per work-item: ";
  if (base == 0 || bytes == 0 || !ctx_.ptr(base, bytes))
    return what + "the queue's scratch backing memory " + hex(base) + " (" + std::to_string(bytes) +
           " bytes) is not mapped";
  if (waves == 0 || wave_bytes == 0 || waves * wave_bytes * ctx_.desc().num_xcc > bytes)
    return what + "compute_tmpring_size " + hex(tmpring) + " (WAVES " + std::to_string(waves) + " x " +
           std::to_string(wave_bytes) + " bytes, per XCC of " + std::to_string(ctx_.desc().num_xcc) +
           ") does not fit the " + std::to_string(bytes) + " bytes of backing memory";
  const uint64_t lanes = d.wave32 ? 32 : 64;
  if (lane < d.private_segment_size || wave_bytes < uint64_t{d.private_segment_size} * lanes)
    return what + "the queue provides " + std::to_string(lane) + " bytes per lane, " + std::to_string(wave_bytes) +
           " per wave";
  return {};
}

AqlProcessor::Outcome AqlProcessor::barrier_and(const Where& at) {
  const char* dep[5] = {"dep_signal0", "dep_signal1", "dep_signal2", "dep_signal3", "dep_signal4"};
  for (const char* name : dep) {
    const uint64_t sig = get(field(kBarrierAnd, name), pkt_);
    if (!sig) continue;
    int64_t v = 0;
    if (sig % 8 || !ctx_.load<int64_t>(sig + kSignalValueOffset, v))
      return fault(at, sig, sig % 8 == 0, "barrier dependency signal " + hex(sig) + " is unaligned or not mapped");
    if (v != 0) {
      waiting_ = "AQL BARRIER_AND slot " + std::to_string(rptr_) + ": signal " + hex(sig) + " is " + std::to_string(v) +
                 ", waiting for 0";
      return Outcome::wait;
    }
  }
  acquire();
  return Outcome::done;
}

AqlProcessor::Outcome AqlProcessor::vendor(const Where& at) {
  const Layout& l = kVendorPm4Ib;
  const std::span<const uint32_t> p = pkt_;
  const uint64_t format = get(field(l, "vendor_format"), p);
  if (format != kVendorFormatPm4Ib)
    return fault(at, 0, false, "AQL vendor packet format " + std::to_string(format) + " is not simulated");
  const uint32_t ib_header = static_cast<uint32_t>(get(field(l, "ib_header"), p));
  if (amd::pm4::kHdrType.get(ib_header) != 3 || amd::pm4::kHdrOpcode.get(ib_header) != amd::pm4::INDIRECT_BUFFER)
    return fault(at, 0, false, "AQL PM4-IB packet whose PM4 header " + hex(ib_header) + " is not INDIRECT_BUFFER");
  const uint64_t base = get(field(l, "ib_base"), p);
  const uint32_t size = static_cast<uint32_t>(get(field(l, "ib_size"), p));
  if (get(field(l, "ib_valid"), p) == 0) return fault(at, base, false, "AQL PM4-IB packet without the valid bit");
  if (size == 0 || base % 4)
    return fault(at, base, false, "AQL PM4-IB packet of " + std::to_string(size) + " dwords at " + hex(base));
  if (!ctx_.ptr(base, uint64_t{size} * 4))
    return fault(at, base, true,
                 "AQL PM4-IB of " + std::to_string(size) + " dwords at " + hex(base) + " is not mapped");
  acquire();
  pm4_.begin_ib(base, size, at);
  return Outcome::ib;
}

}  // namespace

std::unique_ptr<Processor> make_aql_processor(QueueContext& ctx) { return std::make_unique<AqlProcessor>(ctx); }

}  // namespace hcq::sim::amd_engine
