// The simulated NVIDIA GPU's channel executor: the host (PBDMA) that fetches a GPFIFO channel's entries and
// pushbuffer methods, and the engines behind its subchannels (compute: QMD launches through host twins; copy:
// LAUNCH_DMA). The RM simulator (drivers/sim/nv) makes one runner per channel through the factory below; everything
// a runner touches goes through its ChannelHost (translate, clock, interrupt, fault), so the engine can be tested
// alone against a test host.
//
// Threads: in the threaded mode each channel runs on its own simulator thread (copies on one channel overlap kernels
// on another); in the deterministic mode one simulator thread serves every channel made by one group, round-robin
// in creation order. A channel blocked on a semaphore acquire re-polls after a sleep that doubles from poll_min to
// poll_max and wakes early on a doorbell; it holds no lock while it waits and stops promptly when torn down.
//
// Pointers: GPPut in USERD is the authority (the doorbell is only a wake-up). The runner stores GPGet to USERD after
// each GPFIFO entry it completes, so the host sees backpressure on the ring as on hardware.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "hcq/error.hpp"
#include "sim/common/engine_group.hpp"
#include "sim/common/runner_core.hpp"
#include "sim/nv/channel_runner.hpp"

namespace hcq::sim::nv_engine {

// One kernel launch as the compute engine hands it to the SMs: what the QMD said.
struct Launch {
  uint32_t channel_id = 0;
  uint64_t qmd_va = 0;
  uint64_t program_va = 0;   // the kernel's first instruction
  uint64_t cbank0_va = 0;    // constant bank 0 (driver prefix, then the kernel's parameters)
  uint32_t cbank0_size = 0;  // bytes
  uint64_t param_va = 0;     // cbank0_va + the architecture's parameter offset
  // Constant banks 1..7 the QMD marks valid (CONSTANT_BUFFER_VALID_<n>), each mapped for its whole size.
  struct Bank {
    uint32_t bank = 0;
    uint64_t va = 0;
    uint32_t size = 0;  // bytes
  };
  std::vector<Bank> banks;
  std::array<uint32_t, 3> groups{};  // CTA raster width/height/depth
  std::array<uint32_t, 3> local{};   // CTA thread dimensions
  uint32_t shared_bytes = 0;         // shared memory the QMD asks for
};

// Runs one launch to completion on the calling (simulator) thread. Returns "" when the kernel ran, else why it
// could not (no host twin at that program address, ...), which faults the channel with that reason (gr_exception).
// An exception thrown from it faults the channel likewise, except a KernelAccessFault: the kernel itself touched
// memory the GPU does not map, which is an MMU fault of the SM's L1 with that address and access.
using LaunchFn = std::function<std::string(const Launch&, ChannelHost& host)>;

class KernelAccessFault : public DeviceFault {
 public:
  KernelAccessFault(uint64_t address, MmuAccess access)
      : DeviceFault(std::string("kernel ") + to_string(access) + " of GPU VA " + hex(address) +
                    ", which the GPU does not map"),
        address_(address),
        access_(access) {}
  uint64_t address() const { return address_; }
  MmuAccess access() const { return access_; }

 private:
  uint64_t address_;
  MmuAccess access_;
};

// Threaded or deterministic, the runners' states and their scheduling: drivers/sim/common/runner_core.hpp.
using sim::RunnerState;
using sim::Scheduling;
using sim::to_string;

struct EngineOptions {
  LaunchFn launch;  // null: every launch faults its channel ("no kernel runner attached")
  Scheduling scheduling = Scheduling::threaded;
  std::chrono::microseconds poll_min{2}, poll_max{200};
};

// The runner the factory makes. Everything past ChannelRunner (state, fault, wait_settled) is for tests and hang
// reports.
using EngineRunner = EngineRunnerOf<ChannelRunner, ChannelFault>;

// Makes runners with one set of options; in the deterministic mode they share one simulator thread.
class EngineGroup final : public EngineGroupOf<EngineOptions> {
 public:
  using EngineGroupOf::EngineGroupOf;
  std::unique_ptr<EngineRunner> create(const ChannelDesc& desc, ChannelHost& host);
};

// The factory to hand to the RM simulator: a group kept alive by the factory (and its runners).
ChannelRunnerFactory make_channel_runner_factory(EngineOptions options);

}  // namespace hcq::sim::nv_engine
