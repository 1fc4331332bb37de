// SDMA facts: opcodes and the layout of every packet we emit, per engine generation. SDMA 4.4 (gfx942/gfx950) has
// the plain vega10 layouts; SDMA 6.0 (gfx11) and 7.0 (gfx12) add cache-policy bits to the headers and widen the
// COPY_LINEAR byte count from 22 to 30 bits, which is what sets the engine's largest single copy.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "amd/fields.hpp"

namespace hcq::amd::sdma {

// Every SDMA packet starts with [7:0] op, [15:8] sub_op.
inline constexpr Field kHdrOp{"op", 0, 0, 8};
inline constexpr Field kHdrSubOp{"sub_op", 0, 8, 8};

enum Op : uint8_t {
  OP_NOP = 0,
  OP_COPY = 1,
  OP_WRITE = 2,
  OP_INDIRECT = 4,
  OP_FENCE = 5,
  OP_TRAP = 6,
  OP_SEM = 7,
  OP_POLL_REGMEM = 8,
  OP_COND_EXE = 9,
  OP_ATOMIC = 10,
  OP_CONST_FILL = 11,
  OP_PTEPDE = 12,
  OP_TIMESTAMP = 13,
  OP_SRBM_WRITE = 14,
  OP_PRE_EXE = 15,
  OP_GCR_REQ = 17,
};
enum SubOp : uint8_t {
  SUBOP_COPY_LINEAR = 0,
  SUBOP_TIMESTAMP_SET = 0,
  SUBOP_TIMESTAMP_GET = 1,
  SUBOP_TIMESTAMP_GET_GLOBAL = 2,
};
inline constexpr uint32_t kPollFuncGe = 5;  // same encoding as PM4 WAIT_REG_MEM's function
// POLL_REGMEM retry_count: the engine re-polls this many times after the first failed poll, then raises its
// POLL_TIMEOUT interrupt (SDMA*_SRCID__SDMA_POLL_TIMEOUT, "SRBM read poll timeout"; amdgpu only logs it: "Polling
// register/memory timeout executing POLL_REG/MEM with finite timer") and goes on with the next packet. The largest
// value polls until the condition holds (Linux and tinygrad always send it).
inline constexpr uint32_t kPollRetryForever = 0xfff;

// Name of an op (SDMA_OP_* without the prefix), or empty.
std::string_view op_name(uint32_t op);

struct Dialect {
  std::string_view name;  // "sdma4", "sdma6", "sdma7"
  const Layout* nop;      // header [29:16] = extra dwords that follow
  const Layout* copy_linear;
  const Layout* write_linear;  // header, address, count - 1, data...
  const Layout* fence;
  const Layout* trap;
  const Layout* poll_regmem;
  const Layout* timestamp;  // SET / GET / GET_GLOBAL share the 3-dword shape
  const Layout* indirect;
  // GCR_REQ (SDMA 5.2 on): a cache request over [base, limit) with a GCR_CNTL value in two pieces, whose bits are
  // the PM4 GCR_CNTL's (pm4_facts.hpp, kGfx10Plus). nullptr where the engine has no such packet (SDMA 4).
  const Layout* gcr_req;
  uint64_t max_copy_bytes;  // COPY_LINEAR count is bytes - 1 in a field of this many values
  uint32_t fence_mtype;     // FENCE header mtype (3 = uncached) where the header has the field, else 0
};
extern const Dialect kSdma4;
extern const Dialect kSdma6;
extern const Dialect kSdma7;

}  // namespace hcq::amd::sdma
