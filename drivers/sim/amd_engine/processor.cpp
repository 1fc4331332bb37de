// Shared pieces of the packet engines: checked copies, compares, fault records.
#include "sim/amd_engine/processor.hpp"

#include <algorithm>
#include <stdexcept>

namespace hcq::sim::amd_engine {

const Field& field(const Layout& l, std::string_view name) {
  const Field* f = l.find(name);
  if (!f) throw std::logic_error(std::string("layout ") + std::string(l.name) + " lacks field " + std::string(name));
  return *f;
}

std::optional<bool> compare(uint32_t function, uint32_t value, uint32_t mask, uint32_t reference) {
  const uint32_t v = value & mask;
  switch (function) {  // the function encoding shared by PM4 WAIT_REG_MEM and SDMA POLL_REGMEM
    case 0: return true;
    case 1: return v < reference;
    case 2: return v <= reference;
    case 3: return v == reference;
    case 4: return v != reference;
    case 5: return v >= reference;
    case 6: return v > reference;
    default: return std::nullopt;
  }
}

std::string_view function_symbol(uint32_t function) {
  static constexpr std::string_view kSym[] = {"always", "<", "<=", "==", "!=", ">=", ">"};
  return function < 7 ? kSym[function] : "?";
}

Step QueueContext::fault(const Where& at, std::span<const uint32_t> packet, uint64_t address, bool memory,
                         std::string reason) {
  fault_.queue_id = desc_.queue_id;
  fault_.queue_type = desc_.type;
  fault_.ring_pos = at.ring_pos;
  fault_.in_ib = at.in_ib;
  fault_.ib_va = at.ib_va;
  fault_.ib_dword = at.ib_dword;
  fault_.packet.assign(packet.begin(), packet.begin() + static_cast<ptrdiff_t>(std::min<size_t>(packet.size(), 8)));
  fault_.address = address;
  fault_.memory = memory;
  fault_.reason = std::move(reason);
  if (memory && dispatch_failure_ && dispatch_failure_->first == address)
    host_.memory_fault(address, dispatch_failure_->second, fault_.message());
  else host_.fault(address, memory, fault_.message());
  return Step::faulted;
}

QueueContext::DispatchError QueueContext::run_dispatch(const DispatchInfo& d) {
  dispatch_failure_.reset();
  if (!options_.dispatch) return {"no kernel runner attached"};
  try {
    return {options_.dispatch(d, host_)};
  } catch (const MemoryFault& e) {
    dispatch_failure_.emplace(e.address(), e.failure());
    return {e.what(), e.address(), true, e.failure()};
  } catch (const std::exception& e) {
    return {e.what()};
  }
}

std::string FaultRecord::message() const {
  static constexpr const char* kUnits[] = {"dword", "byte", "packet"};
  static constexpr const char* kKinds[] = {"PM4 compute", "SDMA", "AQL compute"};
  std::string s = std::string(kKinds[static_cast<int>(queue_type)]) + " queue " + std::to_string(queue_id) +
                  " faulted at ring " + kUnits[static_cast<int>(queue_type)] + " " + std::to_string(ring_pos);
  if (in_ib) s += " (indirect buffer " + hex(ib_va) + " dword " + std::to_string(ib_dword) + ")";
  s += ": " + reason;
  if (!packet.empty()) {
    s += "; packet";
    for (uint32_t w : packet) {
      s += ' ';
      s += hex(w);
    }
  }
  if (address) s += "; address " + hex(address);
  return s;
}

}  // namespace hcq::sim::amd_engine
