// The simulated AMD GPU's command processors: the PM4 compute engine (MEC), the SDMA copy engine and the AQL packet
// processor, executing a KFD queue's packets as the hardware does. The KFD simulator (drivers/sim/kfd) creates one
// runner per queue through the factory below; everything the engines touch goes through its QueueHost (translate,
// clock, interrupt, fault), so the engines can be tested alone against a test host.
//
// Threads: in the threaded mode each queue runs on its own simulator thread (copies overlap kernels); in the
// deterministic mode one simulator thread serves every queue made by one factory, round-robin in creation order.
// A queue that waits (WAIT_REG_MEM, POLL_REGMEM, a barrier, an unpublished AQL slot) polls with a growing sleep and
// wakes early on a doorbell; it never spins.
//
// Pointers: the runner stores its read pointer at rptr_va as a monotonically increasing 64-bit count in the queue's
// write-pointer units (PM4 dwords, SDMA bytes, AQL packets), after each packet it completes. The write pointer at
// wptr_va is the authority; a doorbell is only a wake-up.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/common/engine_group.hpp"
#include "sim/common/runner_core.hpp"
#include "sim/kfd/queue_runner.hpp"

namespace hcq::sim::amd_engine {

// One kernel launch, as the command processor hands it to the shader array. PM4 takes everything from the register
// file written by SET_SH_REG; AQL from the dispatch packet and the kernel descriptor it points to.
struct DispatchInfo {
  uint32_t queue_id = 0;
  SimQueueType queue_type = SimQueueType::compute_pm4;
  uint64_t code_addr = 0;      // the first instruction: COMPUTE_PGM_LO/HI << 8, or kernel_object + entry offset
  uint64_t kernel_object = 0;  // AQL: the kernel descriptor's address; PM4: 0 (the CP never sees the descriptor)
  // PM4: COMPUTE_USER_DATA_0/1, which is the kernarg pointer when the kernel does not enable the dispatch pointer
  // (the kernel's descriptor says; see user_data to read USER_DATA_2/3 instead). AQL: the packet's kernarg_address.
  uint64_t kernarg_addr = 0;
  uint64_t dispatch_packet_addr = 0;         // AQL: the packet's address in the ring; PM4: 0
  std::array<uint32_t, 16> user_data{};      // PM4: COMPUTE_USER_DATA_0..15; AQL: zero
  std::array<uint32_t, 3> groups{};          // workgroups per dimension (AQL: grid rounded up to whole workgroups)
  std::array<uint32_t, 3> local{};           // work-items per workgroup
  std::array<uint64_t, 3> grid{};            // work-items per dimension (PM4: groups * local)
  uint32_t rsrc1 = 0, rsrc2 = 0, rsrc3 = 0;  // COMPUTE_PGM_RSRC1/2/3 (AQL: from the kernel descriptor)
  uint32_t group_segment_size = 0, private_segment_size = 0;  // AQL packet fields; PM4: 0
  bool wave32 = false;  // PM4: DISPATCH_INITIATOR.cs_w32_en; AQL: the descriptor's wavefront-size-32 bit

  uint64_t user_data64(unsigned sgpr) const {
    return sgpr + 1 < user_data.size() ? (uint64_t{user_data[sgpr]} | (uint64_t{user_data[sgpr + 1]} << 32)) : 0;
  }
};

// Runs one dispatch to completion on the calling (simulator) thread; reads and writes memory through `host`.
// Returns an empty string when the kernel ran, else why it could not (no host twin for that code address, ...),
// which faults the queue with that reason. An exception thrown from it faults the queue likewise.
using DispatchFn = std::function<std::string(const DispatchInfo&, QueueHost& host)>;

// What a DispatchFn throws when the kernel touched memory not mapped on the GPU: the queue then takes a page fault
// at `address` (KFD's memory-exception event), not a hang.
class MemoryFault : public std::runtime_error {
 public:
  MemoryFault(uint64_t address, const std::string& what, MemoryFailure failure = MemoryFailure::not_present)
      : std::runtime_error(what), address_(address), failure_(failure) {}
  uint64_t address() const { return address_; }
  MemoryFailure failure() const { return failure_; }

 private:
  uint64_t address_;
  MemoryFailure failure_;
};

// Threaded or deterministic, the runners' states and their scheduling: drivers/sim/common/runner_core.hpp.
using sim::RunnerState;
using sim::Scheduling;
using sim::to_string;

struct EngineOptions {
  DispatchFn dispatch;  // null: every dispatch faults its queue ("no kernel runner attached")
  Scheduling scheduling = Scheduling::threaded;
  // A waiting queue re-polls after a sleep that doubles from min to max (and wakes at once on a doorbell).
  std::chrono::microseconds poll_min{2}, poll_max{200};
};

// What a fault was, for the KFD simulator's record and for tests. message() is the line passed to
// QueueHost::fault(): engine, queue, where (ring position and IB offset), the packet's first dwords, address, reason.
struct FaultRecord {
  uint32_t queue_id = 0;
  SimQueueType queue_type = SimQueueType::compute_pm4;
  uint64_t ring_pos = 0;         // read pointer at the faulting packet, in the queue's units
  bool in_ib = false;            // the packet sits in an indirect buffer
  uint64_t ib_va = 0;            // that IB's base
  uint64_t ib_dword = 0;         // the packet's dword offset in it
  std::vector<uint32_t> packet;  // the packet's first dwords (at most 8), as far as they could be read
  uint64_t address = 0;          // the faulting GPU address (0: none)
  bool memory = false;           // a page fault (address outside every mapping) rather than a bad packet
  std::string reason;

  std::string message() const;
};

// The runner the factory makes. Everything past QueueRunner (state, fault, wait_settled) is for tests and hang
// reports.
using EngineRunner = EngineRunnerOf<QueueRunner, FaultRecord>;

// Makes runners with one set of options; in the deterministic mode they share one simulator thread.
class EngineGroup final : public EngineGroupOf<EngineOptions> {
 public:
  using EngineGroupOf::EngineGroupOf;
  std::unique_ptr<EngineRunner> create(const SimQueueDesc& desc, QueueHost& host);
};

// The factory to hand to the KFD simulator: a group kept alive by the factory (and its runners).
QueueRunnerFactory make_queue_runner_factory(EngineOptions options);

}  // namespace hcq::sim::amd_engine
