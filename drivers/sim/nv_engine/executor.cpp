// The channel's host unit: GPFIFO fetch, method header decode, subchannel binding and method dispatch. Field
// positions come from drivers/nv/facts (gpfifo.hpp, methods.hpp); nothing vendor-specific is spelled here.
#include "sim/nv_engine/executor.hpp"

#include <algorithm>

#include "nv/facts/gpfifo.hpp"
#include "nv/facts/methods.hpp"

namespace hcq::sim::nv_engine {

namespace gp = nv::gpfifo;
namespace pb = nv::pb;
using nv::SecOp;

namespace {
std::string class_text(const nv::ClassMethods& c) { return std::string(c.class_name) + " (" + hex(c.class_id) + ")"; }
}  // namespace

Executor::Executor(ChannelContext& ctx) : ctx_(ctx) {
  host_cls_ = nv::find_class(ctx_.desc().gpfifo_class);
  if (host_cls_ && host_cls_->kind == nv::ClassKind::host) {
    host_engine_ = make_host_engine(ctx_, *host_cls_);
    host_state_.assign(pb::kHostMethodLimit / 4, 0);
  } else {
    host_cls_ = nullptr;
  }
}

Executor::~Executor() = default;

std::string Executor::waiting_on() const { return waiting_engine_ ? waiting_engine_->waiting_on() : std::string(); }

std::string Executor::describe_pointers() const {
  auto& ctx = const_cast<ChannelContext&>(ctx_);
  uint32_t get = 0, put = 0;
  const uint64_t userd = ctx.desc().userd_va;
  const bool have_get = ctx.load<uint32_t>(userd + gp::kUserdGpGetOffset, get);
  const bool have_put = ctx.load<uint32_t>(userd + gp::kUserdGpPutOffset, put);
  return "GPGet " + (have_get ? std::to_string(get) : std::string("unmapped")) + ", GPPut " +
         (have_put ? std::to_string(put) : std::string("unmapped")) + " of " +
         std::to_string(ctx.desc().gpfifo_entries);
}

Step Executor::run(size_t budget) {
  if (!host_cls_)
    return pbdma_fault("the channel's class " + hex(ctx_.desc().gpfifo_class) + " is not a known GPFIFO class");
  waiting_engine_ = nullptr;
  for (size_t n = 0; n < budget; ++n) {
    // Asked before every method, not once per step: a method that passed an acquire in this step must not run the
    // next one once the group is stopped. The process may release that acquire only after it saw the group's
    // notifier, which the driver writes after the stop flag, so the flag is seen here.
    if (ctx_.stopped_by_group()) return Step::faulted;
    if (!in_entry_) {
      const Step s = fetch_entry();
      if (s != Step::progress) return s;
      continue;
    }
    if (pos_ == segment_.size()) {
      const Step s = finish_entry();
      if (s != Step::progress) return s;
      continue;
    }
    const uint32_t word = segment_[pos_];
    if (remaining_ == 0) {
      const Step s = decode_header(word);
      if (s != Step::progress) return s;
      continue;
    }
    switch (method(subchannel_, offset_, word)) {
      case Outcome::wait: return Step::waiting;
      case Outcome::fault: return Step::faulted;
      case Outcome::done: break;
    }
    ++pos_;
    --remaining_;
    if (sec_op_ == static_cast<uint8_t>(SecOp::inc_method)) offset_ += 4;
    if (sec_op_ == static_cast<uint8_t>(SecOp::one_inc)) {
      offset_ += 4;  // only the first data word goes to the named method
      sec_op_ = static_cast<uint8_t>(SecOp::non_inc_method);
    }
  }
  return Step::progress;
}

// Starts the entry at GPGet, if GPPut is past it: reads the entry and fetches its segment.
Step Executor::fetch_entry() {
  const ChannelDesc& d = ctx_.desc();
  const uint64_t put_va = d.userd_va + gp::kUserdGpPutOffset;
  uint32_t put = 0;
  if (!ctx_.load<uint32_t>(put_va, put))
    return ctx_.fault(ChannelFaultKind::mmu_fault, where(), put_va, "USERD (GPPut) is not mapped");
  if (put >= d.gpfifo_entries)
    return pbdma_fault("GPPut " + std::to_string(put) + " is outside the ring of " + std::to_string(d.gpfifo_entries) +
                       " entries");
  if (put == get_) return Step::idle;

  const uint64_t entry_va = d.gpfifo_va + uint64_t{get_} * gp::kEntryBytes;
  uint64_t entry = 0;
  if (!ctx_.load<uint64_t>(entry_va, entry))
    return ctx_.fault(ChannelFaultKind::mmu_fault, where(), entry_va, "GPFIFO entry is not mapped");
  const uint32_t length = static_cast<uint32_t>(gp::kLength.get(entry));
  if (length == 0) {  // a control entry
    const uint32_t opcode = static_cast<uint32_t>(gp::kOpcode.get(entry));
    if (opcode != gp::kOpcode.value_of("NOP")) {
      const std::string_view name = gp::kOpcode.name_of(opcode);
      return pbdma_fault("GPFIFO control entry " + hex(entry) + " with opcode " +
                         (name.empty() ? hex(opcode) : std::string(name)) + ", which the simulator does not execute");
    }
    in_entry_ = true;  // a NOP: nothing to run, completes at once
    segment_va_ = 0;
    segment_.clear();
    pos_ = 0;
    return Step::progress;
  }
  // LEVEL (main/subroutine), FETCH (conditional) and SYNC (wait for idle) change nothing here: the simulator fetches
  // each segment whole and executes strictly in order.
  const uint64_t va = (gp::kGet.get(entry) << gp::kGet.lo) | (gp::kGetHi.get(entry) << 32);
  const uint64_t bytes = uint64_t{length} * 4;
  const std::byte* p = ctx_.ptr(va, bytes);
  if (!p) {
    uint64_t bad = va;  // the first page that is not mapped
    while (bad < va + bytes && ctx_.ptr(bad, 1)) bad = (bad | 4095) + 1;
    return ctx_.fault(ChannelFaultKind::mmu_fault, Where{get_, va, 0}, std::min(bad, va + bytes - 1),
                      "pushbuffer segment of GPFIFO entry " + hex(entry) + " (" + std::to_string(length) +
                          " dwords at " + hex(va) + ") is not mapped");
  }
  segment_.resize(length);
  std::memcpy(segment_.data(), p, bytes);
  segment_va_ = va;
  in_entry_ = true;
  pos_ = 0;
  remaining_ = 0;
  return Step::progress;
}

// The segment is done: advance GPGet (published to USERD, which is what frees the ring slot for the host).
Step Executor::finish_entry() {
  if (remaining_ != 0)
    return pbdma_fault("method header at " + hex(offset_) + " expects " + std::to_string(remaining_) +
                       " more data dwords past the end of the segment");
  const ChannelDesc& d = ctx_.desc();
  get_ = (get_ + 1) & (d.gpfifo_entries - 1);
  in_entry_ = false;
  segment_.clear();
  pos_ = 0;
  const uint64_t get_va = d.userd_va + gp::kUserdGpGetOffset;
  if (!ctx_.store<uint32_t>(get_va, get_))
    return ctx_.fault(ChannelFaultKind::mmu_fault, where(), get_va, "USERD (GPGet) is not mapped", MmuAccess::write);
  return Step::progress;
}

Step Executor::decode_header(uint32_t h) {
  const auto op = static_cast<SecOp>(pb::kSecOp.get(h));
  const uint32_t sub = static_cast<uint32_t>(pb::kSubchannel.get(h));
  const uint32_t off = static_cast<uint32_t>(pb::kMethodAddress.get(h)) << 2;
  switch (op) {
    case SecOp::inc_method:
    case SecOp::non_inc_method:
    case SecOp::one_inc:
      remaining_ = static_cast<uint32_t>(pb::kCount.get(h));
      subchannel_ = sub;
      offset_ = off;
      sec_op_ = static_cast<uint8_t>(op);
      ++pos_;  // a zero count is a header with no data: legal, does nothing
      return Step::progress;
    case SecOp::immd_data_method:
      switch (method(sub, off, static_cast<uint32_t>(pb::kImmdData.get(h)))) {
        case Outcome::wait: return Step::waiting;
        case Outcome::fault: return Step::faulted;
        case Outcome::done: break;
      }
      ++pos_;
      return Step::progress;
    case SecOp::end_pb_segment: pos_ = static_cast<uint32_t>(segment_.size()); return Step::progress;
    case SecOp::grp0_use_tert:
    case SecOp::grp2_use_tert:
      // A zero dword (padding) and the sub-device mask headers (one GPU: every mask selects it) do nothing. The
      // legacy method formats these groups also encode are not something hcq or NVIDIA's drivers emit.
      if (h == 0 || (op == SecOp::grp0_use_tert && pb::kTertOp.get(h) != 0)) {
        ++pos_;
        return Step::progress;
      }
      break;
    case SecOp::reserved6: break;
  }
  return pbdma_fault("malformed method header " + hex(h) + " (SEC_OP " +
                     std::string(pb::sec_op_name(pb::kSecOp.get(h))) + ")");
}

Outcome Executor::method(uint32_t sub, uint32_t offset, uint32_t data) {
  auto fault = [&](const std::string& why) {
    pbdma_fault(why);
    return Outcome::fault;
  };
  if (offset == 0) return set_object(sub, data);
  if (offset < pb::kHostMethodLimit) {
    const nv::Method* m = host_cls_->find(offset);
    if (!m)
      return fault("unknown host method " + hex(offset) + " of " + class_text(*host_cls_) + " on subchannel " +
                   std::to_string(sub));
    host_state_[offset / 4] = data;
    const Outcome o = host_engine_->execute(MethodCall{*host_cls_, *m, data, host_state_, where()});
    if (o == Outcome::wait) waiting_engine_ = host_engine_.get();
    return o;
  }
  Subchannel& s = subchannels_[sub];
  if (!s.cls)
    return fault("method " + hex(offset) + " on subchannel " + std::to_string(sub) + ", which has no object bound");
  const nv::Method* m = s.cls->find(offset);
  if (!m)
    return fault("unknown method " + hex(offset) + " of " + class_text(*s.cls) + " on subchannel " +
                 std::to_string(sub));
  s.state[offset / 4] = data;
  const Outcome o = s.engine->execute(MethodCall{*s.cls, *m, data, s.state, where()});
  if (o == Outcome::wait) waiting_engine_ = s.engine.get();
  return o;
}

// SET_OBJECT: binds a class the process allocated on this channel to the subchannel.
Outcome Executor::set_object(uint32_t sub, uint32_t data) {
  const nv::Method* m = host_cls_->find(uint32_t{0});
  const nv::BitField* f = m ? m->field("NVCLASS") : nullptr;
  const uint32_t id = f ? static_cast<uint32_t>(f->get(data)) : data;
  const nv::ClassMethods* cls = nv::find_class(id);
  std::string why;
  if (!cls || cls->kind == nv::ClassKind::host) {
    why = "SET_OBJECT on subchannel " + std::to_string(sub) + " names class " + hex(id) +
          ", which is no compute or copy class this GPU has";
  } else {
    const std::vector<uint32_t> allocated = ctx_.host().engine_classes();
    if (std::find(allocated.begin(), allocated.end(), id) == allocated.end())
      why = "SET_OBJECT on subchannel " + std::to_string(sub) + " names " + class_text(*cls) +
            ", which was not allocated on this channel";
  }
  if (!why.empty()) {
    pbdma_fault(why);
    return Outcome::fault;
  }
  Subchannel& s = subchannels_[sub];
  if (s.cls == cls) return Outcome::done;
  s.cls = cls;
  s.state.assign(kMethodWords, 0);
  s.engine = cls->kind == nv::ClassKind::compute ? make_compute_engine(ctx_, *cls) : make_copy_engine(ctx_, *cls);
  return Outcome::done;
}

}  // namespace hcq::sim::nv_engine
