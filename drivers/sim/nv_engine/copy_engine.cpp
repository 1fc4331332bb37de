// The copy engine (DMA_COPY classes): LAUNCH_DMA with pitch layouts at virtual addresses, one line (a 1-D copy of
// LINE_LENGTH_IN bytes) or LINE_COUNT lines strided by PITCH_IN/PITCH_OUT, then the semaphore release (or
// reduction) and interrupt the same LAUNCH_DMA asks for. Block-linear layouts, physical addresses and remapping
// are not simulated: they fault the channel rather than copy the wrong bytes. FLUSH_ENABLE with FLUSH_TYPE SYS
// flushes the engine's writes to system-visible memory after the copy and before the semaphore; the host's cache
// model hears of it as an L2 write-back (ChannelHost::caches). A GL flush only reaches the GPU's L2: no action.
#include <optional>

#include "sim/nv_engine/executor.hpp"
#include "sim/nv_engine/semaphore.hpp"

namespace hcq::sim::nv_engine {
namespace {

class CopyEngine final : public ClassEngine {
 public:
  CopyEngine(ChannelContext& ctx, const nv::ClassMethods& cls)
      : ctx_(ctx),
        launch_(cls.find("LAUNCH_DMA")),
        in_upper_(cls.find("OFFSET_IN_UPPER")),
        in_lower_(cls.find("OFFSET_IN_LOWER")),
        out_upper_(cls.find("OFFSET_OUT_UPPER")),
        out_lower_(cls.find("OFFSET_OUT_LOWER")),
        pitch_in_(cls.find("PITCH_IN")),
        pitch_out_(cls.find("PITCH_OUT")),
        line_length_(cls.find("LINE_LENGTH_IN")),
        line_count_(cls.find("LINE_COUNT")),
        sem_a_(cls.find("SET_SEMAPHORE_A")),
        sem_b_(cls.find("SET_SEMAPHORE_B")),
        sem_payload_(cls.find("SET_SEMAPHORE_PAYLOAD")),
        sem_payload_upper_(cls.find("SET_SEMAPHORE_PAYLOAD_UPPER")) {}

  Outcome execute(const MethodCall& c) override { return &c.method == launch_ ? launch(c) : Outcome::done; }

 private:
  Outcome fault(ChannelFaultKind kind, const MethodCall& c, uint64_t address, const std::string& why,
                MmuAccess access = MmuAccess::read) {
    ctx_.fault(kind, c.at, address, std::string(c.cls.prefix) + "_LAUNCH_DMA " + hex(c.data) + ": " + why, access,
               SmClient::none, /*by_copy_engine=*/true);
    return Outcome::fault;
  }
  // LAUNCH_DMA field `name` by its enum name (empty when the value has none).
  std::string_view flag(const MethodCall& c, std::string_view name) const {
    const nv::BitField* f = c.method.field(name);
    return f ? f->name_of(f->get(c.data)) : std::string_view{};
  }
  uint64_t address(const MethodCall& c, const nv::Method* upper, const nv::Method* lower) const {
    const uint64_t hi = upper && !upper->fields.empty() ? upper->fields[0].get(c.value(upper)) : 0;
    return (hi << 32) | c.value(lower);
  }

  // Which side of a copy of `length` bytes from `from` to `to` faulted at `bad`. The copy walks both ranges in step
  // and checks the source first at each step, so the fault is the read when `bad` is where the source's walk stands
  // no later than the destination's.
  static MmuAccess copy_fault_access(uint64_t from, uint64_t to, uint64_t length, uint64_t bad) {
    const uint64_t read_at = bad - from, write_at = bad - to;  // wrap to huge when `bad` is below the range
    return read_at < length && (write_at >= length || read_at <= write_at) ? MmuAccess::read : MmuAccess::write;
  }

  Outcome launch(const MethodCall& c) {
    const std::string_view transfer = flag(c, "DATA_TRANSFER_TYPE");
    if (transfer == "PIPELINED" || transfer == "NON_PIPELINED") {
      const Outcome o = copy(c);
      if (o != Outcome::done) return o;
    } else if (transfer != "NONE" && transfer != "PREFETCH") {
      return fault(ChannelFaultKind::ce_error, c, 0, "undefined DATA_TRANSFER_TYPE");
    }
    if (flag(c, "FLUSH_ENABLE") == "TRUE" && flag(c, "FLUSH_TYPE") == "SYS") ctx_.host().caches(kCacheWriteback);
    const Outcome o = semaphore(c);
    if (o != Outcome::done) return o;
    const std::string_view intr = flag(c, "INTERRUPT_TYPE");
    if (intr == "BLOCKING" || intr == "NON_BLOCKING") ctx_.host().nonstall_interrupt();
    else if (intr != "NONE") return fault(ChannelFaultKind::ce_error, c, 0, "undefined INTERRUPT_TYPE");
    return Outcome::done;
  }

  Outcome copy(const MethodCall& c) {
    if (flag(c, "SRC_MEMORY_LAYOUT") != "PITCH" || flag(c, "DST_MEMORY_LAYOUT") != "PITCH")
      return fault(ChannelFaultKind::ce_error, c, 0, "block-linear layouts are not simulated (SRC/DST_MEMORY_LAYOUT)");
    if (flag(c, "SRC_TYPE") != "VIRTUAL" || flag(c, "DST_TYPE") != "VIRTUAL")
      return fault(ChannelFaultKind::ce_error, c, 0, "physical addresses are not simulated (SRC/DST_TYPE)");
    if (flag(c, "REMAP_ENABLE") == "TRUE")
      return fault(ChannelFaultKind::ce_error, c, 0, "component remapping is not simulated (REMAP_ENABLE)");
    const uint64_t src = address(c, in_upper_, in_lower_);
    const uint64_t dst = address(c, out_upper_, out_lower_);
    const uint64_t length = c.value(line_length_);
    const bool multi = flag(c, "MULTI_LINE_ENABLE") == "TRUE";
    const uint64_t lines = multi ? c.value(line_count_) : 1;
    const uint64_t pitch_in = multi ? c.value(pitch_in_) : 0, pitch_out = multi ? c.value(pitch_out_) : 0;
    for (uint64_t line = 0; line < lines; ++line) {
      const uint64_t from = src + line * pitch_in, to = dst + line * pitch_out;
      uint64_t bad = 0;
      if (!ctx_.copy(to, from, length, bad))
        return fault(ChannelFaultKind::mmu_fault, c, bad,
                     "copy of " + std::to_string(length) + " bytes from " + hex(from) + " to " + hex(to) +
                         (multi ? " (line " + std::to_string(line) + ")" : "") + " touches unmapped memory",
                     copy_fault_access(from, to, length, bad));
    }
    return Outcome::done;
  }

  Outcome semaphore(const MethodCall& c) {
    const std::string_view type = flag(c, "SEMAPHORE_TYPE");
    if (type == "NONE") return Outcome::done;
    if (type != "RELEASE_ONE_WORD_SEMAPHORE" && type != "RELEASE_FOUR_WORD_SEMAPHORE")
      return fault(
          ChannelFaultKind::ce_error, c, 0,
          "SEMAPHORE_TYPE " + (type.empty() ? std::string("(undefined)") : std::string(type)) + " is not simulated");
    const uint64_t va = address(c, sem_a_, sem_b_);
    const bool two_word = flag(c, "SEMAPHORE_PAYLOAD_SIZE") == "TWO_WORD";
    const bool four_word = type == "RELEASE_FOUR_WORD_SEMAPHORE";
    const uint64_t payload =
        uint64_t{c.value(sem_payload_)} | (two_word ? uint64_t{c.value(sem_payload_upper_)} << 32 : 0);
    // The four-word report is {payload, upper word, timestamp}: the upper word is the payload's high half or 0.
    const bool is64 = two_word || four_word;
    if (is64 && va % 8) return fault(ChannelFaultKind::ce_error, c, va, "semaphore address is not 8-byte aligned");
    if (flag(c, "SEMAPHORE_REDUCTION_ENABLE") == "TRUE") {
      if (!ctx_.ptr(va, is64 ? 8 : 4))
        return fault(ChannelFaultKind::mmu_fault, c, va, "semaphore reduction on an unmapped address",
                     MmuAccess::atomic);
      const bool is_signed = flag(c, "SEMAPHORE_REDUCTION_SIGN") == "SIGNED";
      const std::string why = reduce_semaphore(ctx_, va, flag(c, "SEMAPHORE_REDUCTION"), is_signed, payload, two_word);
      if (!why.empty()) return fault(ChannelFaultKind::ce_error, c, va, why);
      if (four_word && !ctx_.store<uint64_t>(va + 8, ctx_.host().gpu_time_ns()))
        return fault(ChannelFaultKind::mmu_fault, c, va + 8, "semaphore timestamp to an unmapped address",
                     MmuAccess::write);
      return Outcome::done;
    }
    if (const std::optional<uint64_t> bad = release_semaphore(ctx_, va, payload, is64, four_word))
      return fault(ChannelFaultKind::mmu_fault, c, *bad, "semaphore release to an unmapped address", MmuAccess::write);
    return Outcome::done;
  }

  ChannelContext& ctx_;
  const nv::Method *launch_, *in_upper_, *in_lower_, *out_upper_, *out_lower_, *pitch_in_, *pitch_out_, *line_length_,
      *line_count_, *sem_a_, *sem_b_, *sem_payload_, *sem_payload_upper_;
};

}  // namespace

std::unique_ptr<ClassEngine> make_copy_engine(ChannelContext& ctx, const nv::ClassMethods& cls) {
  return std::make_unique<CopyEngine>(ctx, cls);
}

}  // namespace hcq::sim::nv_engine
