// GPFIFO entries and the doorbell, from the field table in nv/facts/gpfifo.hpp.
#include "hcq/error.hpp"
#include "nv/encode.hpp"
#include "nv/facts/gpfifo.hpp"

namespace hcq::nv {

uint64_t gpfifo_entry(uint64_t address, uint32_t dwords, bool sync_wait) {
  if (address % 4 != 0 || address > gpfifo::kMaxSegmentAddress)
    throw InvalidArgument(cat("pushbuffer segment at ", hex(address), " must be 4-byte aligned and below 2^40"));
  if (dwords == 0 || dwords > gpfifo::kMaxSegmentDwords)
    throw InvalidArgument(
        cat("pushbuffer segment of ", dwords, " dwords: a GPFIFO entry holds 1..", gpfifo::kMaxSegmentDwords));
  return gpfifo::kGet.place(address >> 2) | gpfifo::kGetHi.place(address >> 32) | gpfifo::kLevel.place(1) |
         gpfifo::kLength.place(dwords) | gpfifo::kSync.place(sync_wait ? 1 : 0);
}

Doorbell doorbell(uint32_t work_submit_token) { return {gpfifo::kDoorbellOffset, work_submit_token}; }

}  // namespace hcq::nv
