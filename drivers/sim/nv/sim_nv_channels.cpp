// The simulated GPU's side of channels: the ChannelHost a runner gets (GPU VA translation, globaltimer,
// interrupts, faults written to the channel's error notifier as RM's robust-channel code does), the usermode
// doorbell, and starting runners.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include "hcq/error.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/debugger.hpp"
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

const char* to_string(MmuAccess a) {
  switch (a) {
    case MmuAccess::read: return "read";
    case MmuAccess::write: return "write";
    case MmuAccess::atomic: return "atomic";
    case MmuAccess::prefetch: return "prefetch";
  }
  return "?";
}

namespace {

// NV_PFAULT_ACCESS_TYPE_VIRT_* of an access.
uint32_t access_type(MmuAccess a) {
  switch (a) {
    case MmuAccess::read: return abi::access_type::virt_read;
    case MmuAccess::write: return abi::access_type::virt_write;
    case MmuAccess::atomic: return abi::access_type::virt_atomic;
    case MmuAccess::prefetch: return abi::access_type::virt_prefetch;
  }
  return abi::access_type::virt_read;
}

// What RM records for the graphics context when an SM's access faults (kgrctxRecordMmuFault): the first fault's
// MMU_FAULT_INFO word stays until cleared; the entry goes into a 4-slot ring that keeps the latest 3. Fetches
// (instructions, constant bank 0) come from the GPC's constant cache, a kernel's loads, stores and atomics from the
// SM's L1 (the simulator runs every kernel on GPC 0's first TPC: T1_0); every VA the simulator does not map is one
// without a page table entry (a PTE fault), as an unmapped VA inside a process's page directories is on hardware.
void record_sm_fault(NvGrFaultRecord& r, const ChannelFault& f) {
  namespace mfi = abi::mmu_fault_info;
  const uint32_t access = access_type(f.access);
  if (!r.valid) {
    r.valid = true;
    const uint32_t client = f.sm == SmClient::l1 ? abi::gpc_client::t1_0 : abi::gpc_client::gcc;
    r.fault_info = mfi::make(abi::fault_type::pte, client, access, mfi::kClientTypeGpc, 0);
  }
  constexpr uint32_t kSlots = sizeof(r.ring) / sizeof(r.ring[0]);
  r.ring[r.head] = NvGrFaultRecord::Entry{f.address, abi::fault_type::pte, access};
  r.head = (r.head + 1) % kSlots;
  if (r.head == r.tail) r.tail = (r.tail + 1) % kSlots;
}

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
  GpuView* view() override { return s_.gpus.at(ch_.gpu)->view.get(); }
  void caches(uint8_t ops) override {
    if (ops & kCacheWriteback) s_.gpus.at(ch_.gpu)->view->writeback();
  }
  void fault(const ChannelFault& f) override {
    std::lock_guard lock(s_.mu);
    s_.fault_channel_locked(ch_, f);
  }
  bool stopped_by_group(ChannelFault& why) override {
    if (!ch_.stopped_by_group.load(std::memory_order_acquire)) return false;
    std::lock_guard lock(s_.mu);
    why = ch_.fault;
    return true;
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
    const NvChannel& ch = *it->second;
    std::shared_lock vm(vm_mu);
    return host_view(*ch.userd, ch.userd_offset + off, size, 0);
  }
  const NvGpu& g = *gpus[gpu];
  std::shared_lock vm(vm_mu);
  for (const auto* space : {&g.uvm_vm, &g.dma_vm}) {
    auto it = space->upper_bound(va);
    if (it == space->begin()) continue;
    --it;
    const NvGpuMapping& m = it->second;
    if (va - m.va >= m.size || size > m.size - (va - m.va)) continue;
    return host_view(*m.memory, m.offset + (va - m.va), size, va);
  }
  return nullptr;
}

void SimNv::State::sync_view(NvGpu& g) {
  // NVIDIA's GPU page tables have no execute permission: code is fetched from any mapped page.
  std::vector<GpuView::Range> ranges;
  for (const auto* space : {&g.dma_vm, &g.uvm_vm})  // UVM's last: it wins where both map a VA
    for (const auto& [va, m] : *space)
      if (m.memory->where != NvMemory::Where::os_descriptor)
        // The memory's own mapping goes with it, kept while the view shows it: a mapping may be dropped (its memory
        // with it) before the view learns of it.
        ranges.push_back(GpuView::Range{m.va, m.size, m.memory->backing.fd, m.offset, true, true,
                                        m.memory->backing.host + m.offset, m.memory});
  g.view->show(ranges);
}

// The process reaches VRAM and RM system memory through its own mmap of the memory object, the simulator through
// its mapping of the same memfd: two addresses for one set of bytes, as on hardware the CPU's and the GPU's are.
// Handing the simulated GPU the process's address makes the two sides' accesses meet at one address, so the
// atomics the protocol relies on (GPPut stored with release and loaded with acquire, semaphores, GPGet) order the
// data around them for every observer of this process's memory, ThreadSanitizer included. The simulator's own
// mapping stays the fallback for bytes the process has not mapped (or has unmapped).
std::byte* SimNv::State::host_view(const NvMemory& m, uint64_t offset, uint64_t size, uintptr_t want) const {
  std::byte* any = nullptr;
  for (const NvMemory::CpuView& v : m.cpu_views) {
    if (offset < v.offset || offset - v.offset >= v.length || size > v.length - (offset - v.offset)) continue;
    std::byte* p = v.addr + (offset - v.offset);
    if (reinterpret_cast<uintptr_t>(p) == want) return p;
    if (any == nullptr) any = p;
  }
  return any != nullptr ? any : m.backing.host + offset;
}

void SimNv::State::add_cpu_view(const std::shared_ptr<NvMemory>& m, std::byte* addr, uint64_t offset, uint64_t length) {
  std::unique_lock vm(vm_mu);
  drop_cpu_views_locked(reinterpret_cast<uintptr_t>(addr), length);  // MAP_FIXED replaced what was there
  m->cpu_views.push_back(NvMemory::CpuView{addr, offset, length});
  cpu_maps[reinterpret_cast<uintptr_t>(addr)] = m;
}

void SimNv::State::drop_cpu_views(uintptr_t lo, uint64_t length) {
  std::unique_lock vm(vm_mu);
  drop_cpu_views_locked(lo, length);
}

// A view the range touches goes whole (a partial munmap leaves the rest to the simulator's own mapping).
void SimNv::State::drop_cpu_views_locked(uintptr_t lo, uint64_t length) {
  auto it = cpu_maps.lower_bound(lo);
  if (it != cpu_maps.begin()) --it;  // a view that starts below lo may reach into the range
  while (it != cpu_maps.end() && it->first < lo + length) {
    const std::shared_ptr<NvMemory> m = it->second.lock();
    bool touched = m == nullptr;  // the memory is gone: its views went with it
    if (m != nullptr) {
      std::erase_if(m->cpu_views, [&](const NvMemory::CpuView& v) {
        const auto a = reinterpret_cast<uintptr_t>(v.addr);
        const bool hit = a == it->first && a < lo + length && lo < a + v.length;
        touched = touched || hit;
        return hit;
      });
    }
    it = touched ? cpu_maps.erase(it) : std::next(it);
  }
}

uint64_t SimNv::State::time_ns() const {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

namespace {

// RM's error notification: the timestamp, info32 and info16 first, the status last (what a waiter polls).
void write_error_notifier(const NvChannel& ch, uint64_t now, uint32_t code, uint16_t engine) {
  const auto& notifier = ch.error_notifier;
  if (!notifier || notifier->size < sizeof(abi::ErrorNotification) || !notifier->backing.host) return;
  std::byte* n = notifier->backing.host;
  abi::ErrorNotification time{};
  time.set_time_ns(now);  // high word first, as RM stores it
  std::memcpy(n + offsetof(abi::ErrorNotification, nanoseconds), time.nanoseconds, sizeof time.nanoseconds);
  std::memcpy(n + offsetof(abi::ErrorNotification, info32), &code, 4);
  std::memcpy(n + offsetof(abi::ErrorNotification, info16), &engine, 2);
  std::atomic_thread_fence(std::memory_order_release);
  reinterpret_cast<volatile uint16_t*>(n + offsetof(abi::ErrorNotification, status))[0] = abi::kNotificationStatusError;
}

}  // namespace

void SimNv::State::fault_channel_locked(NvChannel& ch, const ChannelFault& f) {
  if (ch.faulted) return;  // the first fault stops the channel; later reports add nothing
  if (f.kind == ChannelFaultKind::mmu_fault && f.sm != SmClient::none && ch.desc.engine == NvEngineKind::compute)
    record_sm_fault(ch.gr_faults, f);
  // The notifier names the engine that faulted: a copy engine as COPYn even on a channel of a graphics group.
  const uint32_t code = robust_channel_code(f.kind, ch.desc.engine_instance);
  const uint16_t engine = static_cast<uint16_t>(ch.desc.engine == NvEngineKind::copy || f.by_copy_engine
                                                    ? abi::engine_type::copy0 + ch.desc.engine_instance
                                                    : abi::engine_type::graphics);
  const uint64_t now = time_ns();
  // RM recovers the whole channel group (TSG): every member stops and gets the same notification
  // (krcErrorSetNotifier with RC_NOTIFIER_SCOPE_TSG, as for MMU faults from Volta on). A channel outside any group
  // is its own.
  // Every member is stopped before any notifier is written: a process that sees one sees the whole group stopped.
  ch.faulted = true;
  ch.fault = f;
  std::vector<NvChannel*> stopped{&ch};
  if (ch.group != 0)
    for (auto& [key, member] : channels) {
      NvChannel& m = *member;
      if (&m == &ch || m.faulted || key.first != ch.gpu || m.client != ch.client || m.group != ch.group) continue;
      m.faulted = true;
      m.fault = f;
      m.fault.reason = cat("stopped with its channel group: channel ", ch.desc.channel_id, " faulted (", f.reason, ")");
      m.stopped_by_group.store(true, std::memory_order_release);
      stopped.push_back(&m);
    }
  for (const NvChannel* m : stopped) write_error_notifier(*m, now, code, engine);
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
  std::shared_ptr<NvChannel> ch;
  {
    std::shared_lock dl(doorbell_mu);
    auto it = usermode_maps.upper_bound(addr);
    if (it == usermode_maps.begin()) return false;
    --it;
    if (addr - it->first >= it->second.second) return false;
    const size_t gpu = it->second.first;
    const uint64_t offset = addr - it->first;
    if (bytes == 8) *static_cast<volatile uint64_t*>(where) = value;
    else *static_cast<volatile uint32_t*>(where) = static_cast<uint32_t>(value);
    if (offset != nv::gpfifo::kDoorbellOffset || bytes != 4) return true;  // another register
    // The token names a channel of this GPU.
    auto ch_it = doorbell_channels.find({gpu, static_cast<uint32_t>(value)});
    if (ch_it == doorbell_channels.end()) return true;  // a token no channel owns: the store lands, nothing listens
    ch = ch_it->second;
  }
  ch->doorbells.fetch_add(1);
  if (!ch->scheduled || ch->faulted) return true;  // not on a runlist, or stopped by a fault
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
