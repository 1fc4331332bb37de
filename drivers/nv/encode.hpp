// Encoders for NVIDIA channels: pushbuffer methods (host semaphores, compute launch by QMD address, cache
// invalidates, copy-engine DMA and its semaphore), QMDs (V3 and V5 through one builder), GPFIFO entries and the
// doorbell. Every offset, bit position and enum value is read from the fact tables (nv/facts/*) of the channel's
// classes, resolved once per architecture, so an encoder never branches on the generation.
//
// Operands may be symbolic (hcq::Sym): the encoder writes zero bits and reports where the value goes through a
// PatchSink, exactly as PatchList would write it. Pushbuffer symbols are reported by word index into the vector being
// appended to; QMD symbols by word index into the QMD.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "common/patch_sink.hpp"
#include "common/word_writer.hpp"
#include "hcq/sym.hpp"
#include "nv/facts/arch.hpp"
#include "nv/facts/bits.hpp"
#include "nv/facts/qmd.hpp"

namespace hcq::nv {

// The vendor-neutral sink and its recording form (drivers/common/patch_sink.hpp), and the appending end
// (drivers/common/word_writer.hpp).
using hcq::PatchSink;
using hcq::RecordingSink;
using hcq::WordWriter;

// The methods and data words an encoder uses, looked up by name in the channel's class tables once per
// architecture (defined in encode_pushbuffer.cpp).
struct EncoderPlan;

// The most bytes hcq moves with one LAUNCH_DMA. LINE_LENGTH_IN is a 32-bit byte count (so < 4 GiB); hcq splits at
// 2 GiB, as tinygrad does, so every piece's length is positive as a signed 32-bit value too.
inline constexpr uint64_t kMaxCopyBytes = uint64_t{1} << 31;

// Appends methods for one channel of `arch` to `words`. Host methods go on subchannel 0, compute methods on
// pb::kComputeSubchannel, copy methods on pb::kCopySubchannel.
class PushbufferEncoder {
 public:
  PushbufferEncoder(const NvArchInfo& arch, std::vector<uint32_t>& words, PatchSink* sink = nullptr);
  // The same with `arch`'s plan looked up once beforehand (plan_of), for an encoder made per queue.
  PushbufferEncoder(const NvArchInfo& arch, const EncoderPlan& plan, std::vector<uint32_t>& words,
                    PatchSink* sink = nullptr)
      : arch_(arch), plan_(plan), w_(words, sink, "NV pushbuffer") {}
  static const EncoderPlan& plan_of(const NvArchInfo& arch);

  // ---- Host (any channel) ----
  // Block the channel until the 64-bit value at addr >= value (SEM_EXECUTE ACQ_CIRC_GEQ, 64BIT).
  void wait(Sym addr, Sym value);
  // End-of-pipe release (RELEASE_WFI): writes the 64-bit value at addr and, with timestamp, the GPU clock at
  // addr + 8; then NON_STALL_INTERRUPT so a sleeping waiter wakes.
  void signal(Sym addr, Sym value, bool timestamp = true);
  // The GPU clock at addr + 8, leaving the 64-bit value at addr as it is: a 64-bit IADD reduction of 0 with
  // RELEASE_TIMESTAMP (a plain release would overwrite the value, as tinygrad's timestamp does).
  void timestamp(Sym addr);
  // End-of-pipe store of a 32- or 64-bit value (no timestamp, no interrupt).
  void write(Sym addr, Sym value, bool b64);
  // Block until the 32-bit word at addr has `mask`'s bit set (ACQ_AND) or clear (ACQ_NOR). The semaphore
  // acquires test "any bit", so only a one-bit mask means "every bit": other masks are an InvalidArgument.
  void poll_bit(Sym addr, uint32_t mask, bool set);
  void non_stall_interrupt();
  // Waits for the channel's engines to go idle (WFI SCOPE ALL), then a system membar (MEM_OP MEMBAR SYS_MEMBAR):
  // the kernels' writes leave the L2 for memory every client sees, as NVIDIA's UVM does before a semaphore release
  // that must publish them. A QMD release with its FE_SYSMEMBAR does the same for a signal right after a launch.
  void sys_membar();
  // Binds `class_id` to `subchannel` (host SET_OBJECT). A channel does this once for each engine class it uses.
  void set_object(uint32_t subchannel, uint32_t class_id);

  // ---- Compute ----
  // Invalidate the SM instruction, global data and constant caches (INVALIDATE_SHADER_CACHES_NO_WFI) so a kernel
  // sees what the host or another engine wrote.
  void memory_barrier();
  // Launch the QMD at qmd_addr (256-byte aligned, below 2^40): SEND_PCAS_A + SEND_SIGNALING_PCAS2_B
  // PREFETCH_SCHEDULE.
  void launch(Sym qmd_addr);
  // Once per compute channel: the shader local and shared memory windows (the generic addresses that map to them),
  // the local memory backing and its per-TPC size.
  void compute_setup(uint64_t local_window, uint64_t shared_window);
  void set_local_memory(uint64_t address, uint64_t bytes_per_tpc, uint32_t max_sm_count);

  // ---- Copy ----
  // Copies `size` bytes, one LAUNCH_DMA (NON_PIPELINED, pitch to pitch) per kMaxCopyBytes.
  void copy(Sym dst, Sym src, uint64_t size);
  // After everything before it: flush, then a four-word semaphore release: the 64-bit value at addr, the clock at
  // addr + 8.
  void copy_signal(Sym addr, Sym value);

  size_t size() const { return w_.size(); }

 private:
  void sem(Sym addr, Sym payload, uint32_t execute);
  const NvArchInfo& arch_;
  const EncoderPlan& plan_;
  WordWriter w_;
};

// ---- QMD ----
// What the QMD of a kernel needs to know about the program (from its cubin and the device's local memory setup).
struct QmdProgram {
  uint64_t code_address = 0;            // the kernel's first instruction (.text.<kernel> as loaded)
  uint32_t code_size = 0;               // bytes, for the instruction prefetch
  uint32_t registers = 0;               // per thread (EIATTR_REGCOUNT)
  uint32_t shared_bytes = 0;            // static + dynamic shared memory of a block, before the system's reserve
  uint32_t local_bytes_per_thread = 0;  // shader local memory (stack, spills) per thread
  uint32_t barriers = 1;                // named barriers the kernel uses (at least 1 for __syncthreads)
  // Constant banks other than 0 (bank 0 is set per launch): index, address, size. Address 0 = unused.
  struct Bank {
    uint64_t address = 0;
    uint32_t size = 0;
  };
  std::array<Bank, qmd::kConstantBuffers> banks{};
};

// Builds QMDs for one architecture. A program's QMD is made once (program()); a launch copies it into the kernarg
// memory and adds the per-launch fields (launch(), release(), chain()).
class QmdBuilder {
 public:
  explicit QmdBuilder(const NvArchInfo& arch);
  const qmd::QmdLayout& layout() const { return layout_; }

  // Fills `qmd` (layout().size_words) with the program's fixed fields: version, program address and prefetch,
  // registers, barriers, shared memory and its SM carveout, local memory, constant banks 1..7, cache invalidates,
  // SASS version. Throws InvalidArgument when the program exceeds the architecture's limits.
  void program(std::span<uint32_t> qmd, const QmdProgram& p) const;
  // Per launch: constant bank 0 (the kernarg segment) and the grid and block dims.
  void launch(std::span<uint32_t> qmd, Sym cbank0_addr, uint32_t cbank0_size, const Dims& grid, const Dims& block,
              PatchSink* sink = nullptr) const;
  // Only constant bank 0's address: what differs between two launches of one kernel with the same dims (the QMD of
  // the other one copied, as an eager stream's launches do).
  void set_bank0_address(std::span<uint32_t> qmd, Sym cbank0_addr, PatchSink* sink = nullptr) const;
  // Release semaphore `slot` (0 or 1) when the grid completes: the 64-bit payload at addr, the clock at addr + 8,
  // after a system membar. Returns false (and writes nothing) when the slot is taken.
  bool release(std::span<uint32_t> qmd, uint32_t slot, Sym addr, Sym payload, PatchSink* sink = nullptr) const;
  // The first free release slot, or -1.
  int free_release_slot(std::span<const uint32_t> qmd) const;
  // Makes `prev` schedule the QMD at next_addr when it completes (DEPENDENT_QMD0, action QMD_SCHEDULE, prefetch).
  void chain(std::span<uint32_t> prev, Sym next_addr, PatchSink* sink = nullptr) const;

 private:
  void put(std::span<uint32_t> qmd, const BitField& f, const Sym& v, uint8_t shift, PatchSink* sink) const;
  void put_address(std::span<uint32_t> qmd, const BitField& lo, const BitField& hi, const Sym& addr, uint8_t shift,
                   PatchSink* sink) const;
  // An address split over a whole low dword and a high field within one dword, resolved to dword positions once:
  // the addresses every launch writes (constant bank 0, a release's semaphore and payload) are then two stores.
  // `direct` is false for a layout where that does not hold; such a slot goes through put_address.
  struct AddressSlot {
    const BitField* lo = nullptr;
    const BitField* hi = nullptr;
    uint8_t shift = 0;
    bool direct = false;
    uint32_t lo_word = 0, hi_word = 0, hi_bit = 0, hi_mask = 0;
  };
  static AddressSlot address_slot(const BitField& lo, const BitField& hi, uint8_t shift);
  void put_address(std::span<uint32_t> qmd, const AddressSlot& slot, const Sym& addr, PatchSink* sink) const;

  const NvArchInfo& arch_;
  const qmd::QmdLayout& layout_;
  AddressSlot bank0_;
  std::array<AddressSlot, qmd::kReleases> release_address_{}, release_payload_{};
  // A release's constant fields (structure size, 64-bit payload, membar, enable) folded per dword once, so a
  // release after every eager launch writes a few words instead of setting four fields one by one.
  struct Stamp {
    uint32_t word, clear, bits;
  };
  struct ReleaseStamp {
    std::array<Stamp, 4> fixed{};
    uint32_t count = 0;
  };
  std::array<ReleaseStamp, qmd::kReleases> release_stamps_{};
};

// ---- GPFIFO and doorbell ----
// The ring entry for a pushbuffer segment of `dwords` at `address` (4-byte aligned, below 2^40), fetched as a
// subroutine (LEVEL SUBROUTINE, as tinygrad does). Throws InvalidArgument for addresses or lengths the entry cannot
// hold.
uint64_t gpfifo_entry(uint64_t address, uint32_t dwords, bool sync_wait = false);
// The usermode doorbell: write `value` (the channel's work-submit token) at `offset` of the usermode region.
struct Doorbell {
  uint32_t offset;
  uint32_t value;
};
Doorbell doorbell(uint32_t work_submit_token);

}  // namespace hcq::nv
