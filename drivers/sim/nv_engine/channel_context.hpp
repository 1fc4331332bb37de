// Memory and host services for one channel's executor: every GPU access bounds-checked through the ChannelHost's
// translate(), atomic where the host may be polling the same words (semaphores, USERD), and fault reporting with
// the position the channel stopped at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hcq/error.hpp"
#include "sim/common/guest_memory.hpp"
#include "sim/nv_engine/engine.hpp"

namespace hcq::sim::nv_engine {

using hcq::hex;
// What one call to the executor ended with (idle: GPGet reached GPPut; waiting: on a semaphore acquire).
using sim::Step;

// Where in the channel's stream something happened, for fault reasons.
struct Where {
  uint64_t gpfifo_index = 0;   // GPGet of the entry being executed
  uint64_t pushbuffer_va = 0;  // the entry's segment (0: the fault is in the GPFIFO entry itself)
  uint64_t dword = 0;          // the dword's index in that segment
};

// Memory access (ptr, load, store, read_words, copy) comes from GuestMemory.
class ChannelContext : public GuestMemory<ChannelHost> {
 public:
  ChannelContext(const ChannelDesc& desc, ChannelHost& host, const EngineOptions& options)
      : GuestMemory(host), desc_(desc), options_(options) {}

  const ChannelDesc& desc() const { return desc_; }
  const EngineOptions& options() const { return options_; }

  // Runs a launch through the attached kernel runner: "" when it ran, else why not. A kernel that touched memory
  // the GPU does not map ran (as far as it got), and `access_fault` holds its first such access.
  std::string run_launch(const Launch& l, std::optional<KernelAccessFault>& access_fault);

  // Reports a fault to the host and keeps it. Returns Step::faulted, for `return ctx.fault(...)`. `access`, `sm`
  // and `by_copy_engine` say which access it was and who made it (ChannelFault); an MMU fault's reason ends with
  // the address and the access.
  Step fault(ChannelFaultKind kind, const Where& at, uint64_t address, const std::string& reason,
             MmuAccess access = MmuAccess::read, SmClient sm = SmClient::none, bool by_copy_engine = false);
  const ChannelFault& last_fault() const { return fault_; }
  // True (and that fault kept, nothing reported) when the driver stopped this channel with its group
  // (ChannelHost::stopped_by_group). The executor asks before each method.
  bool stopped_by_group() { return host_.stopped_by_group(fault_); }

 private:
  const ChannelDesc& desc_;
  const EngineOptions& options_;
  ChannelFault fault_;
};

}  // namespace hcq::sim::nv_engine
