// PM4 facts: the type-3 header, the opcode names, and the layout of every packet we emit, per dialect.
// Two dialects: GC 9.x (soc15d.h: RELEASE_MEM cache bits are the EOP_TC* actions, ACQUIRE_MEM carries CP_COHER_CNTL)
// and GC 10+ (nvd.h: RELEASE_MEM carries GCR bits, ACQUIRE_MEM has a GCR_CNTL dword). Everything else is shared.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "amd/fields.hpp"

namespace hcq::amd::pm4 {

// ---- header ----
// Type 3: [31:30]=3, [29:16]=payload dwords - 1, [15:8]=opcode, [1]=shader type (compute), [0]=predicate.
inline constexpr Field kHdrType{"type", 0, 30, 2};
inline constexpr Field kHdrCount{"count", 0, 16, 14};
inline constexpr Field kHdrOpcode{"opcode", 0, 8, 8};
inline constexpr Field kHdrShaderType{"shader_type", 0, 1, 1};
inline constexpr Field kHdrPredicate{"predicate", 0, 0, 1};
// Type 0 (register writes from the ring): [15:0] base register, [29:16] count - 1. Type 2 is a one-dword filler.
inline constexpr Field kHdr0Base{"base_index", 0, 0, 16};

constexpr uint32_t header(uint32_t opcode, uint32_t payload_words) {
  return (3u << 30) | kHdrCount.place(payload_words - 1) | kHdrOpcode.place(opcode);
}
inline constexpr uint32_t kType2Filler = 0x80000000u;

// ---- opcodes (names as AMD's PACKET3_* defines write them, without the prefix) ----
enum Opcode : uint8_t {
  NOP = 0x10,
  DISPATCH_DIRECT = 0x15,
  DISPATCH_INDIRECT = 0x16,
  ATOMIC_MEM = 0x1e,
  PRED_EXEC = 0x23,
  WRITE_DATA = 0x37,
  WAIT_REG_MEM = 0x3c,
  INDIRECT_BUFFER = 0x3f,
  COPY_DATA = 0x40,
  EVENT_WRITE = 0x46,
  RELEASE_MEM = 0x49,
  DMA_DATA = 0x50,
  ACQUIRE_MEM = 0x58,
  SET_SH_REG = 0x76,
  SET_UCONFIG_REG = 0x79,
};
// Name of any type-3 opcode AMD documents (nvd.h / soc15d.h), or empty for an undocumented number.
std::string_view opcode_name(uint32_t opcode);

// ---- enums ----
// VGT_EVENT_TYPE values used by compute queues.
enum EventType : uint8_t { CS_PARTIAL_FLUSH = 7, CACHE_FLUSH_AND_INV_TS_EVENT = 20, BOTTOM_OF_PIPE_TS = 40 };
inline constexpr uint32_t kEventIndexEndOfPipe = 5;     // event_index__mec_release_mem__end_of_pipe
inline constexpr uint32_t kEventIndexEndOfShader = 6;   // event_index__mec_release_mem__shader_done
inline constexpr uint32_t kEventIndexPartialFlush = 4;  // EVENT_WRITE index for CS_PARTIAL_FLUSH (nvd.h comment)

// A VGT_EVENT_TYPE as the CP takes it. Every event travels with one event_index, its class (Mesa sid.h EVENT_INDEX:
// 0 any other event, 1 ZPASS_DONE / PIXEL_PIPE_STAT_*, 2 SAMPLE_PIPELINESTAT, 3 SAMPLE_STREAMOUTSTATS*,
// 4 *S_PARTIAL_FLUSH, 5 end-of-pipe timestamp events, 6 end-of-shader events). Classes 5 and 6 are released with
// RELEASE_MEM on a compute queue; the rest with EVENT_WRITE. `compute`: the compute pipe (MEC) has the block the event
// acts on (graphics-only events name the render backends, the geometry pipe or the pixel pipe).
struct VgtEvent {
  uint8_t type;
  std::string_view name;
  uint8_t index;
  bool compute;
};
// The event with that VGT_EVENT_TYPE value, or nullptr for a value hcq's table does not name.
const VgtEvent* vgt_event(uint32_t type);
enum DataSel : uint8_t { DATA_NONE = 0, DATA_32_LOW = 1, DATA_64 = 2, DATA_GPU_CLOCK = 3 };
enum IntSel : uint8_t { INT_NONE = 0, INT_AFTER_WRITE_CONFIRM = 2 };
enum WaitFunction : uint8_t { FN_ALWAYS = 0, FN_LT = 1, FN_LE = 2, FN_EQ = 3, FN_NE = 4, FN_GE = 5, FN_GT = 6 };
inline constexpr uint32_t kIndirectBufferValid = 1u << 23;

// ---- layouts shared by both dialects ----
extern const Layout kWaitRegMemMem;  // mem_space = 1: poll a 64-bit address
extern const Layout kWaitRegMemReg;  // mem_space = 0: poll (and for WR_WAIT_WR_REG, first write) registers
extern const Layout kIndirectBuffer;
extern const Layout kEventWrite;
extern const Layout kDispatchDirect;
extern const Layout kSetShReg;   // header + offset dword; register values follow (variable length)
extern const Layout kWriteData;  // header + control + address; data follows (variable length)
extern const Layout kCopyData;
extern const Layout kPredExec;

// ---- per-dialect layouts and cache-control recipes ----
struct Dialect {
  std::string_view name;  // "gfx9" or "gfx10+"
  const Layout* release_mem;
  const Layout* acquire_mem;
  bool acquire_has_gcr;  // ACQUIRE_MEM ends with GCR_CNTL (gfx10+) instead of starting with CP_COHER_CNTL (gfx9)
  // RELEASE_MEM dword 1 cache bits for "flush and invalidate everything" at a signal.
  uint32_t release_flush_all;
  // ACQUIRE_MEM cache control (GCR_CNTL or CP_COHER_CNTL): for a memory barrier (all caches incl. I$ and L2) and
  // before a dispatch (K$/V$/L1/metadata, no I$ or L2).
  uint32_t acquire_all;
  uint32_t acquire_exec;
  uint32_t acquire_poll_interval;
  // Cache control as the CP decodes it. RELEASE_MEM dword 1 and the ACQUIRE_MEM control dword (GCR_CNTL on GC 10+,
  // CP_COHER_CNTL on GC 9): any of the *_l2_writeback bits writes the L2's dirty lines back to memory, any of the
  // *_l2_invalidate bits drops the L2's lines. The near caches (GL0/GL1/K$ on GC 10+, TCL1/K$ on GC 9) are not in
  // these masks: the L2 is where memory written by the host and by other engines is seen or missed.
  uint32_t release_l2_writeback, release_l2_invalidate;
  uint32_t acquire_l2_writeback, acquire_l2_invalidate;
  // RELEASE_MEM dword 1 and GCR_CNTL bits no field of the dialect defines (0: not checked).
  uint32_t release_reserved, acquire_gcr_reserved;
  // ACQUIRE_MEM dword 1 bits that are the other dialect's cache actions: GC 10+ moved the CP_COHER_CNTL TC/TCL1/K$/I$
  // actions of GC 9 into GCR_CNTL, so on GC 10+ they ask for an action the CP no longer has.
  uint32_t acquire_coher_foreign;
};
extern const Dialect kGfx9;
extern const Dialect kGfx10Plus;

}  // namespace hcq::amd::pm4

namespace hcq::amd::pm4 {
// A NOP header whose count field is all ones is a packet of one dword (no payload).
inline constexpr uint32_t kNopCountHeaderOnly = 0x3fff;
}  // namespace hcq::amd::pm4
