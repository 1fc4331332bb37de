// The PM4 command processor of a compute queue (MEC): fetches type-3 packets from the queue's ring or from indirect
// buffers and executes them against a register file, GPU memory and the host's interrupt and dispatch services.
// It also runs the PM4 indirect buffers of AQL vendor packets. Packet layouts come from drivers/amd's fact tables.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "amd/target.hpp"
#include "sim/amd_engine/processor.hpp"

namespace hcq::sim::amd_engine {

class Pm4Executor {
 public:
  // `ring`: top-level packets come from the queue's ring (a PM4 queue); otherwise only from IBs given to begin_ib.
  Pm4Executor(QueueContext& ctx, bool ring);

  // Ring mode: executes up to `budget` packets from the ring (and the IBs they call).
  Step run_ring(size_t budget);
  // IB mode: queues an IB of `dwords` at `va`, called from the AQL slot described by `at`.
  void begin_ib(uint64_t va, uint32_t dwords, const Where& at);
  // IB mode: runs the IBs begun; idle once they have all ended.
  Step run_ibs(size_t budget);
  bool in_ib() const { return !frames_.empty(); }
  const std::string& waiting_on() const { return waiting_; }

 private:
  enum class Outcome : uint8_t { done, wait, fault, enter_ib };
  struct Frame {
    uint64_t va;
    uint32_t size;  // dwords
    uint32_t pos;   // dwords executed
  };
  // Runs the next packet of the innermost IB (popping finished ones). done also when an IB just ended.
  Outcome step_ib();
  Outcome exec(const Where& at);

  Outcome release_mem(const Where& at);
  Outcome acquire_mem(const Where& at);
  Outcome event_write(const Where& at);
  Outcome wait_reg_mem(const Where& at);
  Outcome write_data(const Where& at);
  Outcome set_sh_reg(const Where& at);
  Outcome dispatch_direct(const Where& at);
  Outcome indirect_buffer(const Where& at);
  Outcome fault(const Where& at, uint64_t address, bool memory, std::string reason);

  // Register space: the SH (compute) registers and the HDP flush pair. False: not a register the simulator has.
  bool read_reg(uint32_t addr, uint32_t& value) const;
  bool write_reg(uint32_t addr, uint32_t value);

  QueueContext& ctx_;
  const amd::Target& t_;
  bool ring_;
  uint64_t rptr_ = 0;         // ring mode: dwords consumed
  uint64_t ring_resume_ = 0;  // ring mode: the read pointer after the IB packet being executed
  Where ib_from_;             // the ring/AQL position that called the current IBs
  std::vector<Frame> frames_;
  std::vector<uint32_t> pkt_;
  std::string waiting_;
  std::array<uint32_t, amd::kShRegEnd - amd::kShRegBase> sh_{};
  uint32_t hdp_done_ = 0, hdp_done_mask_ = 0;
  // Registers read by DISPATCH_DIRECT, resolved from the target's table.
  uint32_t pgm_hi_ = 0, num_thread_[3] = {}, user_data_ = 0;
  uint32_t pgm_hi_mask_ = 0;
  uint32_t initiator_shader_en_ = 0, initiator_w32_ = 0;  // bit masks in DISPATCH_INITIATOR (w32: 0 if absent)
  const amd::Field* num_thread_full_[3] = {};
};

}  // namespace hcq::sim::amd_engine
