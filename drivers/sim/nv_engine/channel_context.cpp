// Checked copies, launches and fault records for a channel's executor.
#include "sim/nv_engine/channel_context.hpp"

#include <exception>

namespace hcq::sim::nv_engine {

std::string ChannelContext::run_launch(const Launch& l, std::optional<KernelAccessFault>& access_fault) {
  if (!options_.launch) return "no kernel runner attached";
  try {
    return options_.launch(l, host_);
  } catch (const KernelAccessFault& f) {
    access_fault = f;
    return f.what();
  } catch (const std::exception& e) {
    return e.what();
  }
}

Step ChannelContext::fault(ChannelFaultKind kind, const Where& at, uint64_t address, const std::string& reason,
                           MmuAccess access, SmClient sm, bool by_copy_engine) {
  std::string s = std::string(desc_.engine == NvEngineKind::compute ? "compute" : "copy") + " channel " +
                  std::to_string(desc_.channel_id) + " faulted at GPFIFO entry " + std::to_string(at.gpfifo_index);
  if (at.pushbuffer_va) s += " (pushbuffer " + hex(at.pushbuffer_va) + " dword " + std::to_string(at.dword) + ")";
  s += ": " + reason;
  if (kind == ChannelFaultKind::mmu_fault) s += std::string("; ") + to_string(access) + " of address " + hex(address);
  else if (address) s += "; address " + hex(address);
  fault_ = ChannelFault{kind, address, at.gpfifo_index, std::move(s), access, sm, by_copy_engine};
  host_.fault(fault_);
  return Step::faulted;
}

}  // namespace hcq::sim::nv_engine
