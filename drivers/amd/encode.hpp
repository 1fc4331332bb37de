// Encoders: append AMD packets to a word vector, reading every opcode, bit position and register address from the
// fact tables (pm4_facts, sdma_facts, aql_facts, regs) selected by a Target. Operands may be symbolic (hcq::Sym):
// the encoder leaves their bits zero and reports where they live through a PatchSink, so an HWQueue can record
// patches. Encoding a full launch allocates nothing beyond the vector's growth.
#pragma once

#include <algorithm>
#include <cassert>
#include <cstdint>
#include <exception>
#include <span>
#include <vector>

#include "amd/aql_facts.hpp"
#include "amd/target.hpp"
#include "common/patch_sink.hpp"
#include "common/word_writer.hpp"
#include "hcq/backend/patch.hpp"
#include "hcq/sym.hpp"

namespace hcq::amd {

// The vendor-neutral sink and its recording form (drivers/common/patch_sink.hpp).
using hcq::PatchSink;
using hcq::RecordingSink;

// The appending end shared by the encoders (drivers/common/word_writer.hpp).
using hcq::WordWriter;

// Kernel-descriptor facts (the 64-byte amdhsa_kernel_descriptor_t of an AMDHSA code object).
struct KernelDescriptor {
  uint32_t group_segment_fixed_size = 0;
  uint32_t private_segment_fixed_size = 0;
  uint32_t kernarg_size = 0;
  int64_t kernel_code_entry_byte_offset = 0;
  uint32_t compute_pgm_rsrc3 = 0, compute_pgm_rsrc1 = 0, compute_pgm_rsrc2 = 0;
  uint16_t kernel_code_properties = 0;
  uint16_t kernarg_preload = 0;

  // Reads the little-endian 64-byte descriptor. Throws InvalidArgument when `bytes` is shorter.
  static KernelDescriptor parse(std::span<const std::byte> bytes);
  // kernel_code_properties bits (AMDHSA).
  static constexpr uint16_t kPrivateSegmentBuffer = 1u << 0, kDispatchPtr = 1u << 1, kQueuePtr = 1u << 2,
                            kKernargSegmentPtr = 1u << 3, kDispatchId = 1u << 4, kFlatScratchInit = 1u << 5,
                            kPrivateSegmentSize = 1u << 6, kWavefrontSize32 = 1u << 10;
};

// What a dispatch needs to know about a kernel, as it goes into the registers.
struct KernelInfo {
  uint32_t rsrc1 = 0, rsrc2 = 0, rsrc3 = 0;
  bool wave32 = false;
  bool dispatch_ptr = false;  // user SGPRs: dispatch packet pointer, then the kernarg pointer
  uint32_t group_segment_size = 0, private_segment_size = 0;

  // Derives the register values for `t`: RSRC2.LDS_SIZE from the group segment size (+ dynamic LDS), RSRC1.PRIV where
  // the target asks for it. Throws InvalidArgument for user-SGPR inputs we do not set up (private segment buffer,
  // queue pointer, dispatch id, flat scratch init, private segment size) and for LDS beyond the field.
  static KernelInfo from_descriptor(const KernelDescriptor& kd, const Target& t, uint32_t dynamic_lds_bytes = 0);
};

struct DispatchArgs {
  Sym code_addr;  // the kernel's first instruction (256-byte aligned)
  Sym kernarg_addr;
  Sym dispatch_packet_addr;   // only when KernelInfo::dispatch_ptr
  Sym scratch_addr;           // architected flat scratch base (256-byte aligned)
  uint32_t tmpring_size = 0;  // COMPUTE_TMPRING_SIZE, computed by the device from its scratch allocation
  uint32_t resource_limits = 0;
  Dims groups{1u, 1u, 1u};  // workgroup counts
  Dims local{1u, 1u, 1u};   // threads per workgroup
};

// ---- PM4 (compute queue) ----
class Pm4Encoder {
 public:
  Pm4Encoder(const Target& t, std::vector<uint32_t>& words, PatchSink* sink = nullptr)
      : t_(t), w_(words, sink, "AMD packet") {}

  // End-of-pipe RELEASE_MEM writing the low 32 bits of value, with the caches flushed first.
  void signal(Sym addr, Sym value);
  // For a timeline signal on KFD: RELEASE_MEM of event_id into the event mailbox, then an interrupt whose context id
  // is the event id, so KFD wakes the waiter.
  void signal_event(Sym mailbox_addr, uint32_t event_id);
  // WAIT_REG_MEM: block until the 32-bit word at addr >= value.
  void wait(Sym addr, Sym value);
  // WAIT_REG_MEM: block until (word at addr & mask) == ref.
  void poll_bits(Sym addr, uint32_t mask, uint32_t ref);
  // End-of-pipe store of a 32- or 64-bit value (no cache flush).
  void write(Sym addr, Sym value, bool b64);
  // Writes the GPU clock at addr, in order with the queue.
  void timestamp(Sym addr);
  // HDP flush (so host writes through the BAR are visible), then invalidate/write back every cache.
  void memory_barrier();
  // Register setup + DISPATCH_DIRECT + CS_PARTIAL_FLUSH.
  void exec(const KernelInfo& k, const DispatchArgs& a);
  void indirect_buffer(Sym addr, uint32_t size_dwords);
  // NOP padding of exactly `total_words` words. One word is PACKET3(NOP, 0x3fff), the header-only NOP that Linux
  // uses on GC 9+ rings (type-2 fillers are not accepted there).
  void nop(uint32_t total_words);

  // Primitives.
  void release_mem(uint32_t cache_bits, pm4::DataSel data_sel, pm4::IntSel int_sel, Sym addr, Sym data, uint32_t ctxid);
  void acquire_mem(uint32_t cache_control);
  void wait_reg_mem(pm4::WaitFunction fn, Sym addr, Sym ref, uint32_t mask, uint32_t poll_interval);
  void hdp_flush();
  void event_write(uint32_t event_type, uint32_t event_index);

 private:
  void set_sh_header(WordWriter::Packet& p, uint32_t reg, uint32_t count);
  // exec() without the per-thread memo; reports where the kernarg and dispatch packet addresses were written.
  void encode_exec(const KernelInfo& k, const DispatchArgs& a, size_t& kernarg_at, size_t& packet_at);
  const Target& t_;
  WordWriter w_;
};

// ---- SDMA (copy queue) ----
class SdmaEncoder {
 public:
  SdmaEncoder(const Target& t, std::vector<uint32_t>& words, PatchSink* sink = nullptr)
      : t_(t), w_(words, sink, "AMD packet") {}

  // COPY_LINEAR, split into pieces of at most the engine's largest copy.
  void copy(Sym dst, Sym src, uint64_t size);
  // FENCE: write a 32-bit value once everything before it is done.
  void fence(Sym addr, Sym value);
  // Timeline signal on KFD: FENCE the event id into the mailbox, then TRAP with the event id as context.
  void signal_event(Sym mailbox_addr, uint32_t event_id);
  void trap(uint32_t int_context);
  // POLL_REGMEM on memory: until the 32-bit word at addr >= value.
  void wait(Sym addr, Sym value);
  // POLL_REGMEM on memory: until (word & mask) == ref.
  void poll_bits(Sym addr, uint32_t mask, uint32_t ref);
  // TIMESTAMP GET_GLOBAL: the 64-bit global clock at addr (8-byte aligned).
  void timestamp(Sym addr);
  void write(Sym addr, Sym value, bool b64);
  void nop(uint32_t total_words);

 private:
  void poll(uint32_t func, Sym addr, Sym ref, uint32_t mask);
  const Target& t_;
  WordWriter w_;
};

// ---- AQL (64-byte packets; appended as 16 words, header last in memory order is the caller's job) ----
struct AqlDispatch {
  Sym kernel_object;  // address of the kernel descriptor
  Sym kernarg_addr;
  Dims groups{1u, 1u, 1u};
  Dims local{1u, 1u, 1u};
  uint32_t private_segment_size = 0, group_segment_size = 0;
  Sym completion_signal;  // 0: none
  bool barrier = true;
};
class AqlEncoder {
 public:
  AqlEncoder(const Target& t, std::vector<uint32_t>& words, PatchSink* sink = nullptr)
      : t_(t), w_(words, sink, "AMD packet") {}
  // Grid sizes are in work-items (groups * local). A symbolic dim is accepted only where the other factor is 1,
  // since a patch cannot multiply; anything else is an InvalidArgument.
  void dispatch(const AqlDispatch& d);
  void barrier_and(std::span<const Sym> deps, Sym completion_signal);
  // The vendor packet that runs `size_dwords` of PM4 at addr (an INDIRECT_BUFFER inside an AQL slot).
  void pm4_ib(Sym addr, uint32_t size_dwords);

 private:
  const Target& t_;
  WordWriter w_;
};

}  // namespace hcq::amd
