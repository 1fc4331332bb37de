// SDMA encoders, built from the target's SDMA dialect (sdma_facts), which the decoder reads too.
#include <algorithm>

#include "amd/encode.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

using namespace sdma;

const Field& F(const Layout& l, std::string_view name) { return *l.find(name); }
constexpr uint32_t hdr(uint32_t op, uint32_t sub_op) { return kHdrOp.place(op) | kHdrSubOp.place(sub_op); }

}  // namespace

void SdmaEncoder::copy(Sym dst, Sym src, uint64_t size) {
  const Layout& l = *t_.sdma->copy_linear;
  const uint64_t max = t_.sdma->max_copy_bytes;
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min(size - done, max);
    w_.u32(hdr(OP_COPY, SUBOP_COPY_LINEAR));
    w_.u32(F(l, "count").place(n - 1));  // COUNT is bytes - 1
    w_.u32(0);                           // PARAMETER: no swap, default cache policy
    w_.sym64(src + static_cast<int64_t>(done));
    w_.sym64(dst + static_cast<int64_t>(done));
    done += n;
  }
}

void SdmaEncoder::fence(Sym addr, Sym value) {
  const Layout& l = *t_.sdma->fence;
  // MTYPE 3 (uncached) on SDMA 5+, as tinygrad and Linux's sdma_v6_0 fence do, so the host sees the value at once.
  const Field* mtype = l.find("mtype");
  w_.u32(hdr(OP_FENCE, 0) | (mtype ? mtype->place(t_.sdma->fence_mtype) : 0u));
  w_.sym64(addr);
  w_.sym32(value);
}

void SdmaEncoder::trap(uint32_t int_context) {
  w_.u32(hdr(OP_TRAP, 0));
  w_.u32(F(*t_.sdma->trap, "int_context").place(int_context));
}

void SdmaEncoder::signal_event(Sym mailbox_addr, uint32_t event_id) {
  fence(mailbox_addr, event_id);
  trap(event_id);
}

void SdmaEncoder::poll(uint32_t func, Sym addr, Sym ref, uint32_t mask) {
  const Layout& l = *t_.sdma->poll_regmem;
  w_.u32(hdr(OP_POLL_REGMEM, 0) | F(l, "func").place(func) | F(l, "mem_poll").place(1));
  w_.sym64(addr);
  w_.sym32(ref);
  w_.u32(mask);
  // Poll every 4 (x 16 clocks) with the largest retry count: the engine keeps polling rather than timing out.
  w_.u32(F(l, "interval").place(4) | F(l, "retry_count").place(0xfff));
}

void SdmaEncoder::wait(Sym addr, Sym value) { poll(kPollFuncGe, addr, value, 0xffffffffu); }

void SdmaEncoder::poll_bits(Sym addr, uint32_t mask, uint32_t ref) { poll(3, addr, ref, mask); }

void SdmaEncoder::timestamp(Sym addr) {
  w_.u32(hdr(OP_TIMESTAMP, SUBOP_TIMESTAMP_GET_GLOBAL));
  w_.sym64(addr);  // write_addr_31_3: the address is 8-byte aligned, its low bits are zero anyway
}

void SdmaEncoder::write(Sym addr, Sym value, bool b64) {
  const Layout& l = *t_.sdma->write_linear;
  w_.u32(hdr(OP_WRITE, 0));
  w_.sym64(addr);
  w_.u32(F(l, "count").place(b64 ? 1 : 0));  // dwords - 1
  if (b64) w_.sym64(value);
  else w_.sym32(value);
}

void SdmaEncoder::nop(uint32_t total_words) {
  if (total_words == 0) return;
  const Field& count = F(*t_.sdma->nop, "count");
  if (total_words - 1 > count.mask()) throw InvalidArgument(cat("SDMA NOP of ", total_words, " words is too long"));
  w_.u32(hdr(OP_NOP, 0) | count.place(total_words - 1));
  for (uint32_t i = 1; i < total_words; ++i) w_.u32(0);
}

}  // namespace hcq::amd
