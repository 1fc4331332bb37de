// The simulated GPU's side of channels: the ChannelHost a runner gets (GPU VA translation, globaltimer,
// interrupts, faults written to the channel's error notifier as RM's robust-channel code does), the usermode
// doorbell, and starting runners.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>

#include "hcq/error.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/notifier.hpp"
#include "sim/nv/sim_nv_state.hpp"

namespace hcq::sim {

namespace abi = nv::abi;

const char* to_string(NvEngineKind k) {
  switch (k) {
    case NvEngineKind::compute: return "compute";
    case NvEngineKind::copy: return "copy";
  }
  return "?";
}

const char* to_string(ChannelFaultKind k) {
  switch (k) {
    case ChannelFaultKind::mmu_fault: return "MMU fault";
    case ChannelFaultKind::pbdma_error: return "PBDMA error";
    case ChannelFaultKind::gr_exception: return "GR exception";
    case ChannelFaultKind::ce_error: return "CE error";
  }
  return "?";
}

namespace {

// The RM error code (the notifier's info32) of a fault: abi::rc.
uint32_t robust_channel_code(ChannelFaultKind k, uint32_t ce) {
  switch (k) {
    case ChannelFaultKind::mmu_fault: return abi::rc::mmu_fault;
    case ChannelFaultKind::pbdma_error: return abi::rc::pbdma_error;
    case ChannelFaultKind::gr_exception: return abi::rc::gr_exception;
    case ChannelFaultKind::ce_error: return abi::rc::ce_error(ce);
  }
  return abi::rc::pbdma_error;
}

}  // namespace

class NvChannelHost final : public ChannelHost {
 public:
  NvChannelHost(SimNv::State& s, NvChannel& ch) : s_(s), ch_(ch) {}
  std::byte* translate(uint64_t va, uint64_t size) override { return s_.translate(ch_.gpu, va, size); }
  uint64_t gpu_time_ns() override { return s_.time_ns(); }
  std::vector<uint32_t> engine_classes() override {
    std::lock_guard lock(s_.mu);
    return ch_.engine_classes;
  }
  void nonstall_interrupt() override { s_.gpus.at(ch_.gpu)->nonstall.fetch_add(1); }
  void fault(const ChannelFault& f) override {
    std::lock_guard lock(s_.mu);
    s_.fault_channel_locked(ch_, f);
  }

 private:
  SimNv::State& s_;
  NvChannel& ch_;
};

NvChannel::~NvChannel() {
  runner.reset();  // stops its threads; they may still use the host until then
  host.reset();
}

std::byte* SimNv::State::translate(size_t gpu, uint64_t va, uint64_t size) {
  if (gpu >= gpus.size()) return nullptr;
  if (size == 0) size = 1;
  if (va + size < va) return nullptr;
  if (va >= kUserdAperture) {
    const uint64_t rel = va - kUserdAperture;
    const uint32_t chid = static_cast<uint32_t>(rel / kUserdStride);
    const uint64_t off = rel % kUserdStride;
    if (off + size > abi::kUserdSize) return nullptr;
    std::lock_guard lock(mu);
    auto it = channels.find({gpu, chid});
    if (it == channels.end()) return nullptr;
    return it->second->userd->backing.host + it->second->userd_offset + off;
  }
  const NvGpu& g = *gpus[gpu];
  std::shared_lock vm(vm_mu);
  for (const auto* space : {&g.uvm_vm, &g.dma_vm}) {
    auto it = space->upper_bound(va);
    if (it == space->begin()) continue;
    --it;
    const NvGpuMapping& m = it->second;
    if (va - m.va >= m.size || size > m.size - (va - m.va)) continue;
    return m.memory->backing.host + m.offset + (va - m.va);
  }
  return nullptr;
}

uint64_t SimNv::State::time_ns() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

void SimNv::State::fault_channel_locked(NvChannel& ch, const ChannelFault& f) {
  if (ch.faulted) return;  // the first fault stops the channel; later reports add nothing
  ch.faulted = true;
  ch.fault = f;
  const auto& notifier = ch.error_notifier;
  if (notifier && notifier->size >= sizeof(abi::ErrorNotification) && notifier->backing.host) {
    std::byte* n = ch.error_notifier->backing.host;
    const uint64_t now = time_ns();
    const uint32_t code = robust_channel_code(f.kind, ch.desc.engine_instance);
    const uint16_t engine = static_cast<uint16_t>(ch.desc.engine == NvEngineKind::copy
                                                      ? abi::engine_type::copy0 + ch.desc.engine_instance
                                                      : abi::engine_type::graphics);
    // The timestamp, info32 and info16 first, the status last (what a waiter polls).
    std::memcpy(n + offsetof(abi::ErrorNotification, timestamp), &now, 8);
    std::memcpy(n + offsetof(abi::ErrorNotification, info32), &code, 4);
    std::memcpy(n + offsetof(abi::ErrorNotification, info16), &engine, 2);
    std::atomic_thread_fence(std::memory_order_release);
    reinterpret_cast<volatile uint16_t*>(n + offsetof(abi::ErrorNotification, status))[0] =
        abi::kNotificationStatusError;
  }
}

void SimNv::State::fault_channel(size_t gpu, uint32_t channel_id, const ChannelFault& f) {
  std::lock_guard lock(mu);
  auto it = channels.find({gpu, channel_id});
  if (it == channels.end())
    throw InvalidArgument(cat("simulated NVIDIA driver: no channel ", channel_id, " on GPU ", gpu));
  fault_channel_locked(*it->second, f);
}

bool SimNv::State::doorbell(volatile void* where, uint64_t value, unsigned bytes) {
  const auto addr = reinterpret_cast<uintptr_t>(where);
  size_t gpu = 0;
  uint64_t offset = 0;
  {
    std::shared_lock dl(doorbell_mu);
    auto it = usermode_maps.upper_bound(addr);
    if (it == usermode_maps.begin()) return false;
    --it;
    if (addr - it->first >= it->second.second) return false;
    gpu = it->second.first;
    offset = addr - it->first;
  }
  if (bytes == 8)
    *static_cast<volatile uint64_t*>(where) = value;
  else
    *static_cast<volatile uint32_t*>(where) = static_cast<uint32_t>(value);
  if (offset != nv::gpfifo::kDoorbellOffset || bytes != 4) return true;  // another register
  std::shared_ptr<NvChannel> ch;
  {
    std::lock_guard lock(mu);
    // The token names a channel of this GPU (the token is its channel id here).
    auto it = channels.find({gpu, static_cast<uint32_t>(value)});
    if (it == channels.end()) return true;  // a token no channel owns: the store lands, nothing listens
    ch = it->second;
    ch->doorbells.fetch_add(1);
    if (!ch->scheduled || ch->faulted) return true;  // not on a runlist, or stopped by a fault
  }
  std::lock_guard rl(ch->runner_mu);
  if (ch->runner) ch->runner->doorbell();
  return true;
}

void SimNv::State::start_runner(const std::shared_ptr<NvChannel>& ch) {
  if (!factory) return;
  std::lock_guard rl(ch->runner_mu);
  ch->host = std::make_unique<NvChannelHost>(*this, *ch);
  try {
    ch->runner = factory(ch->desc, *ch->host);
  } catch (const std::exception& e) {
    std::lock_guard lock(mu);
    ChannelFault f;
    f.kind = ChannelFaultKind::pbdma_error;
    f.reason = cat("the simulated GPU refused the channel: ", e.what());
    fault_channel_locked(*ch, f);
  }
}

}  // namespace hcq::sim
