// Pushbuffer encoding: every method offset and data word comes from the class tables of the channel's architecture,
// resolved once into an EncoderPlan so that encoding is appends and ORs only.
#include <algorithm>
#include <array>
#include <functional>
#include <initializer_list>
#include <string_view>
#include <utility>

#include "hcq/error.hpp"
#include "nv/encode.hpp"
#include "nv/facts/methods.hpp"

namespace hcq::nv {

struct EncoderPlan {
  // Host class.
  uint16_t set_object, non_stall_interrupt, sem_addr_lo;
  const BitField* sem_addr_hi;  // SEM_ADDR_HI.OFFSET: 8 bits on Ampere, 25 from Hopper on
  uint32_t acquire_geq64;       // SEM_EXECUTE data words
  uint32_t release64_ts, release64, release32, reduce_add64_ts, acquire_and32, acquire_nor32;
  uint16_t wfi, mem_op_a;                    // WFI; MEM_OP_A..D (consecutive)
  uint32_t wfi_all, membar_sys_c, membar_d;  // WFI SCOPE ALL; MEM_OP_C/D of a system membar
  // Compute class.
  uint16_t send_pcas_a, send_signaling_pcas2_b, invalidate_no_wfi;
  uint32_t pcas_prefetch_schedule, invalidate_all;
  uint16_t local_window_a, shared_window_a, local_memory_a, non_throttled_a;
  const BitField* local_memory_upper;
  // Copy class.
  uint16_t offset_in_upper, line_length_in, launch_dma, set_semaphore_a;
  const BitField* copy_upper;  // OFFSET_IN/OUT_UPPER.UPPER and SET_SEMAPHORE_A.UPPER
  uint32_t launch_copy, launch_signal64;
  // The copy class releases only 32-bit semaphores (NVC6B5, the A100's): a copy queue's 64-bit signal is the host's
  // end-of-pipe release on the copy channel instead, which waits for the copy engine to go idle first.
  bool copy_signal_on_host;
};

namespace {

const ClassMethods& need_class(uint32_t id) {
  if (const ClassMethods* c = find_class(id)) return *c;
  throw InvalidArgument(cat("no method table for class ", hex(id)));
}
const Method& need(const ClassMethods& c, std::string_view name) {
  if (const Method* m = c.find(name)) return *m;
  throw InvalidArgument(cat(c.prefix, " has no method ", name, " in hcq's tables"));
}
// A data word from enum names: {{"OPERATION", "RELEASE"}, ...}; each field and enum must exist.
uint32_t word(const ClassMethods& c, const Method& m,
              std::initializer_list<std::pair<std::string_view, std::string_view>> values) {
  uint64_t w = 0;
  for (auto [field, value] : values) {
    const BitField* f = m.field(field);
    if (!f) throw InvalidArgument(cat(c.prefix, "_", m.name, " has no field ", field));
    const uint32_t v = f->value_of(value);
    if (v == ~0u) throw InvalidArgument(cat(c.prefix, "_", m.name, "_", field, " has no value ", value));
    w |= f->place(v);
  }
  return static_cast<uint32_t>(w);
}
const BitField& only_field(const ClassMethods& c, const Method& m) {
  if (m.fields.size() != 1) throw InvalidArgument(cat(c.prefix, "_", m.name, " is expected to have one field"));
  return m.fields[0];
}

EncoderPlan make_plan(const NvArchInfo& a) {
  const ClassMethods& host = need_class(a.classes.gpfifo);
  const ClassMethods& compute = need_class(a.classes.compute);
  const ClassMethods& copy = need_class(a.classes.copy);
  EncoderPlan p{};
  p.set_object = need(host, "SET_OBJECT").offset;
  p.non_stall_interrupt = need(host, "NON_STALL_INTERRUPT").offset;
  p.sem_addr_lo = need(host, "SEM_ADDR_LO").offset;
  p.sem_addr_hi = &only_field(host, need(host, "SEM_ADDR_HI"));
  const Method& ex = need(host, "SEM_EXECUTE");
  p.acquire_geq64 = word(host, ex, {{"OPERATION", "ACQ_CIRC_GEQ"}, {"PAYLOAD_SIZE", "64BIT"}});
  p.release64_ts =
      word(host, ex,
           {{"OPERATION", "RELEASE"}, {"RELEASE_WFI", "EN"}, {"PAYLOAD_SIZE", "64BIT"}, {"RELEASE_TIMESTAMP", "EN"}});
  p.release64 = word(host, ex, {{"OPERATION", "RELEASE"}, {"RELEASE_WFI", "EN"}, {"PAYLOAD_SIZE", "64BIT"}});
  p.release32 = word(host, ex, {{"OPERATION", "RELEASE"}, {"RELEASE_WFI", "EN"}, {"PAYLOAD_SIZE", "32BIT"}});
  p.reduce_add64_ts = word(host, ex,
                           {{"OPERATION", "REDUCTION"},
                            {"RELEASE_WFI", "EN"},
                            {"PAYLOAD_SIZE", "64BIT"},
                            {"RELEASE_TIMESTAMP", "EN"},
                            {"REDUCTION", "IADD"},
                            {"REDUCTION_FORMAT", "UNSIGNED"}});
  p.acquire_and32 = word(host, ex, {{"OPERATION", "ACQ_AND"}, {"PAYLOAD_SIZE", "32BIT"}});
  const Method& wfi = need(host, "WFI");
  p.wfi = wfi.offset;
  p.wfi_all = word(host, wfi, {{"SCOPE", "ALL"}});
  p.mem_op_a = need(host, "MEM_OP_A").offset;
  p.membar_sys_c = word(host, need(host, "MEM_OP_C"), {{"MEMBAR_TYPE", "SYS_MEMBAR"}});
  p.membar_d = word(host, need(host, "MEM_OP_D"), {{"OPERATION", "MEMBAR"}});
  if (need(host, "MEM_OP_D").offset != p.mem_op_a + 12)
    throw InvalidArgument(cat(host.prefix, ": MEM_OP_* methods are not consecutive"));
  p.acquire_nor32 = word(host, ex, {{"OPERATION", "ACQ_NOR"}, {"PAYLOAD_SIZE", "32BIT"}});

  p.send_pcas_a = need(compute, "SEND_PCAS_A").offset;
  const Method& pcas2 = need(compute, "SEND_SIGNALING_PCAS2_B");
  p.send_signaling_pcas2_b = pcas2.offset;
  p.pcas_prefetch_schedule = word(compute, pcas2, {{"PCAS_ACTION", "PREFETCH_SCHEDULE"}});
  const Method& inv = need(compute, "INVALIDATE_SHADER_CACHES_NO_WFI");
  p.invalidate_no_wfi = inv.offset;
  p.invalidate_all = word(compute, inv, {{"INSTRUCTION", "TRUE"}, {"GLOBAL_DATA", "TRUE"}, {"CONSTANT", "TRUE"}});
  p.local_window_a = need(compute, "SET_SHADER_LOCAL_MEMORY_WINDOW_A").offset;
  p.shared_window_a = need(compute, "SET_SHADER_SHARED_MEMORY_WINDOW_A").offset;
  const Method& lm = need(compute, "SET_SHADER_LOCAL_MEMORY_A");
  p.local_memory_a = lm.offset;
  p.local_memory_upper = &only_field(compute, lm);
  p.non_throttled_a = need(compute, "SET_SHADER_LOCAL_MEMORY_NON_THROTTLED_A").offset;

  const Method& in_upper = need(copy, "OFFSET_IN_UPPER");
  p.offset_in_upper = in_upper.offset;
  p.copy_upper = &only_field(copy, in_upper);
  p.line_length_in = need(copy, "LINE_LENGTH_IN").offset;
  p.set_semaphore_a = need(copy, "SET_SEMAPHORE_A").offset;
  const Method& launch = need(copy, "LAUNCH_DMA");
  p.launch_dma = launch.offset;
  p.launch_copy =
      word(copy, launch,
           {{"DATA_TRANSFER_TYPE", "NON_PIPELINED"}, {"SRC_MEMORY_LAYOUT", "PITCH"}, {"DST_MEMORY_LAYOUT", "PITCH"}});
  p.copy_signal_on_host = !copy_releases_semaphore64(copy);
  if (!p.copy_signal_on_host) {
    p.launch_signal64 = word(copy, launch,
                             {{"DATA_TRANSFER_TYPE", "NONE"},
                              {"FLUSH_ENABLE", "TRUE"},
                              {"SEMAPHORE_TYPE", "RELEASE_FOUR_WORD_SEMAPHORE"},
                              {"SEMAPHORE_PAYLOAD_SIZE", "TWO_WORD"}});
    if (need(copy, "SET_SEMAPHORE_PAYLOAD_UPPER").offset != p.set_semaphore_a + 12)
      throw InvalidArgument(cat(copy.prefix, ": SET_SEMAPHORE_* methods are not consecutive"));
  }
  // The layout the encoder relies on: consecutive methods written with one INC header.
  if (need(host, "SEM_ADDR_HI").offset != p.sem_addr_lo + 4 ||
      need(host, "SEM_PAYLOAD_LO").offset != p.sem_addr_lo + 8 ||
      need(host, "SEM_PAYLOAD_HI").offset != p.sem_addr_lo + 12 || ex.offset != p.sem_addr_lo + 16)
    throw InvalidArgument(cat(host.prefix, ": SEM_* methods are not consecutive"));
  if (need(copy, "OFFSET_OUT_LOWER").offset != p.offset_in_upper + 12)
    throw InvalidArgument(cat(copy.prefix, ": OFFSET_* methods are not consecutive"));
  return p;
}

}  // namespace

const EncoderPlan& PushbufferEncoder::plan_of(const NvArchInfo& arch) {
  static const auto plans = [] {
    const auto table = nv_arch_table();
    std::array<EncoderPlan, 8> out{};
    if (table.size() > out.size()) throw InvalidArgument("encoder plan table too small for the architecture table");
    for (size_t i = 0; i < table.size(); ++i) out[i] = make_plan(table[i]);
    return out;
  }();
  const auto table = nv_arch_table();
  // `arch` is an entry of the table (every queue's encoder is made from one): its index, without a search.
  const std::less<const NvArchInfo*> before;  // a total order, for pointers that may lie outside the table
  if (!before(&arch, table.data()) && before(&arch, table.data() + table.size()))
    return plans[static_cast<size_t>(&arch - table.data())];
  for (size_t i = 0; i < table.size(); ++i)
    if (table[i].sm == arch.sm) return plans[i];
  throw InvalidArgument(cat("no encoder plan for sm_", arch.sm));
}

PushbufferEncoder::PushbufferEncoder(const NvArchInfo& arch, std::vector<uint32_t>& words, PatchSink* sink)
    : PushbufferEncoder(arch, plan_of(arch), words, sink) {}

namespace {

// The header of `count` methods from method_offset on, each taking the next data word (INC_METHOD).
constexpr uint32_t inc(uint32_t subchannel, uint16_t method_offset, uint32_t count) {
  return pb::header(SecOp::inc_method, subchannel, method_offset, count);
}

// A 64-bit value for an _A/_B (UPPER/LOWER) method pair: the upper word first.
void upper_lower(WordWriter::Packet& p, uint64_t v) {
  p.u32(static_cast<uint32_t>(v >> 32));
  p.u32(static_cast<uint32_t>(v));
}

}  // namespace

// SEM_ADDR_LO, SEM_ADDR_HI, SEM_PAYLOAD_LO, SEM_PAYLOAD_HI, SEM_EXECUTE under one INC header.
void PushbufferEncoder::sem(Sym addr, Sym payload, uint32_t execute) {
  WordWriter::Packet p = w_.packet(6);
  p.u32(inc(pb::kHostSubchannel, plan_.sem_addr_lo, 5));
  p.sym32(addr);
  p.sym_field(0, *plan_.sem_addr_hi, addr, 32);
  p.sym64(payload);
  p.u32(execute);
}

void PushbufferEncoder::wait(Sym addr, Sym value) { sem(addr, value, plan_.acquire_geq64); }

void PushbufferEncoder::signal(Sym addr, Sym value, bool timestamp) {
  sem(addr, value, timestamp ? plan_.release64_ts : plan_.release64);
  non_stall_interrupt();
}

void PushbufferEncoder::sys_membar() {
  WordWriter::Packet p = w_.packet(7);
  p.u32(inc(pb::kHostSubchannel, plan_.wfi, 1));
  p.u32(plan_.wfi_all);
  p.u32(inc(pb::kHostSubchannel, plan_.mem_op_a, 4));
  p.u32(0);
  p.u32(0);
  p.u32(plan_.membar_sys_c);
  p.u32(plan_.membar_d);
}

void PushbufferEncoder::timestamp(Sym addr) { sem(addr, Sym(0), plan_.reduce_add64_ts); }

void PushbufferEncoder::write(Sym addr, Sym value, bool b64) {
  // A 32-bit release writes only SEM_PAYLOAD_LO; the high word is sent and ignored.
  sem(addr, value, b64 ? plan_.release64 : plan_.release32);
}

void PushbufferEncoder::poll_bit(Sym addr, uint32_t mask, bool set) {
  if (mask == 0 || (mask & (mask - 1)) != 0)
    throw InvalidArgument(
        cat("NV poll_bit needs a one-bit mask (host semaphore acquires test any bit); got ", hex(mask)));
  // ACQ_AND: done when (word & payload) != 0. ACQ_NOR: done when ~(word | payload) != 0, i.e. a bit outside payload
  // is clear in the word; with payload = ~mask that bit is mask's.
  sem(addr, Sym(set ? mask : ~mask), set ? plan_.acquire_and32 : plan_.acquire_nor32);
}

void PushbufferEncoder::non_stall_interrupt() {
  WordWriter::Packet p = w_.packet(2);
  p.u32(inc(pb::kHostSubchannel, plan_.non_stall_interrupt, 1));
  p.u32(0);
}

void PushbufferEncoder::set_object(uint32_t subchannel, uint32_t class_id) {
  if (subchannel >= pb::kSubchannels) throw InvalidArgument(cat("subchannel ", subchannel, " is not 0..7"));
  WordWriter::Packet p = w_.packet(2);
  p.u32(inc(subchannel, plan_.set_object, 1));
  p.u32(class_id & 0xffff);
}

void PushbufferEncoder::memory_barrier() {
  WordWriter::Packet p = w_.packet(2);
  p.u32(inc(pb::kComputeSubchannel, plan_.invalidate_no_wfi, 1));
  p.u32(plan_.invalidate_all);
}

void PushbufferEncoder::launch(Sym qmd_addr) {
  if (qmd_addr.is_const() && (qmd_addr.add % qmd::kAlignment != 0 || qmd_addr.add > qmd::kMaxAddress))
    throw InvalidArgument(cat("QMD address ", hex(qmd_addr.add), " must be 256-byte aligned and below 2^40"));
  WordWriter::Packet p = w_.packet(4);
  p.u32(inc(pb::kComputeSubchannel, plan_.send_pcas_a, 1));
  p.sym32(qmd_addr, 8);
  p.u32(inc(pb::kComputeSubchannel, plan_.send_signaling_pcas2_b, 1));
  p.u32(plan_.pcas_prefetch_schedule);
}

void PushbufferEncoder::compute_setup(uint64_t local_window, uint64_t shared_window) {
  WordWriter::Packet p = w_.packet(6);
  p.u32(inc(pb::kComputeSubchannel, plan_.local_window_a, 2));
  upper_lower(p, local_window);
  p.u32(inc(pb::kComputeSubchannel, plan_.shared_window_a, 2));
  upper_lower(p, shared_window);
}

void PushbufferEncoder::set_local_memory(uint64_t address, uint64_t bytes_per_tpc, uint32_t max_sm_count) {
  if (!plan_.local_memory_upper->fits(address >> 32))
    throw InvalidArgument(cat("shader local memory address ", hex(address), " does not fit sm_", arch_.sm,
                              "'s SET_SHADER_LOCAL_MEMORY_A"));
  WordWriter::Packet p = w_.packet(7);
  p.u32(inc(pb::kComputeSubchannel, plan_.local_memory_a, 2));
  upper_lower(p, address);
  p.u32(inc(pb::kComputeSubchannel, plan_.non_throttled_a, 3));
  upper_lower(p, bytes_per_tpc);
  p.u32(max_sm_count);
}

void PushbufferEncoder::copy(Sym dst, Sym src, uint64_t size) {
  for (uint64_t off = 0; off < size; off += kMaxCopyBytes) {
    const uint64_t piece = std::min(size - off, kMaxCopyBytes);
    const Sym s = src + static_cast<int64_t>(off), d = dst + static_cast<int64_t>(off);
    WordWriter::Packet p = w_.packet(9);
    // OFFSET_IN_UPPER, OFFSET_IN_LOWER, OFFSET_OUT_UPPER, OFFSET_OUT_LOWER: upper halves first.
    p.u32(inc(pb::kCopySubchannel, plan_.offset_in_upper, 4));
    p.sym_field(0, *plan_.copy_upper, s, 32);
    p.sym32(s);
    p.sym_field(0, *plan_.copy_upper, d, 32);
    p.sym32(d);
    p.u32(inc(pb::kCopySubchannel, plan_.line_length_in, 1));
    p.u32(static_cast<uint32_t>(piece));
    p.u32(inc(pb::kCopySubchannel, plan_.launch_dma, 1));
    p.u32(plan_.launch_copy);
  }
}

void PushbufferEncoder::copy_signal(Sym addr, Sym value) {
  if (plan_.copy_signal_on_host) return signal(addr, value);
  // SET_SEMAPHORE_A (upper), _B (lower), _PAYLOAD, _PAYLOAD_UPPER.
  WordWriter::Packet p = w_.packet(7);
  p.u32(inc(pb::kCopySubchannel, plan_.set_semaphore_a, 4));
  p.sym_field(0, *plan_.copy_upper, addr, 32);
  p.sym32(addr);
  p.sym32(value);
  p.sym32(value, 32);
  p.u32(inc(pb::kCopySubchannel, plan_.launch_dma, 1));
  p.u32(plan_.launch_signal64);
}

}  // namespace hcq::nv
