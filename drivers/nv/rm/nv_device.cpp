#include "nv/rm/nv_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "hcq/allocator.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "hcq/memory.hpp"
#include "nv/compiler/nv_compiler.hpp"
#include "nv/cubin/cubin.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/debugger.hpp"
#include "nv/rm/abi/notifier.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/nv_program.hpp"
#include "nv/rm/nv_queue.hpp"

namespace hcq::nv {

NvDevice::NvDevice(std::string name, std::shared_ptr<Os> os, const abi::CardInfo& card, std::string interface)
    : Device(std::move(name)), os_(std::move(os)), interface_(std::move(interface)) {
  gpu_ = std::make_unique<NvGpu>(NvDriver::get(os_), card);
  try {
    process().signals.add_mapper(this);
    mapper_registered_ = true;
    init_runtime(std::make_unique<HCQAllocator>(*this));
  } catch (...) {
    shutdown_runtime();
    if (mapper_registered_) process().signals.remove_mapper(this);
    throw;
  }
}

NvDevice::~NvDevice() {
  shutdown_runtime();
  if (mapper_registered_) process().signals.remove_mapper(this);
  {
    std::lock_guard lock(rings_mu_);
    debugger_.reset();  // it names the compute object: it goes first
    rings_ready_.store(false, std::memory_order_relaxed);
    // The channels before the rings' pushbuffer memory: a channel that is still fetching (a faulted device is not
    // idle at teardown) must be stopped before the memory it reads goes away.
    channels_.reset();
    compute_ring_.reset();
    copy_ring_.reset();
  }
  slm_.clear();
  std::lock_guard lock(mu_);
  foreign_.clear();
  buffers_.clear();
  signal_pages_.clear();
}

DeviceInfo NvDevice::info() const {
  const NvGpuFacts& f = gpu_->facts();
  DeviceInfo i;
  i.name = name();
  i.interface = interface_;
  i.arch = f.arch_name();
  i.memory_bytes = f.vram_bytes;
  // One compute and one copy channel, shared by every queue of its kind.
  i.compute_queues = 1;
  i.copy_queues = 1;
  // DeviceInfo has no field for the product, so it rides along after the version with the SM count (also
  // compute_units) for a person reading it:
  // "580.126.20 (open module); NVIDIA H200, 132 SMs".
  i.driver_version = cat(gpu_->rm().version().text, gpu_->rm().version().open_module ? " (open module)" : "", "; ",
                         f.name, ", ", f.sm_count, " SMs");
  // Refusals of what RM itself always offers mean a proxy sits between us and RM; which calls it refused is the
  // evidence we have (gVisor's nvproxy refuses exactly these under its default capabilities, compute,utility).
  if (!f.refused.empty()) {
    std::string refused;
    for (const std::string& r : f.refused) refused += cat(refused.empty() ? "" : ", ", r);
    i.driver_version += cat("; sandboxed: a driver proxy refused ", refused, " (as gVisor's nvproxy does)");
  }
  i.uuid.emplace();
  std::memcpy(i.uuid->data(), f.uuid.bytes, i.uuid->size());
  i.launch_limits = nv_arch_launch_limits(*f.arch);
  i.wave_size = kWarpSize;
  i.shared_memory_bytes = f.arch->max_shared_per_block;
  i.compute_units = f.sm_count;
  i.matrix_unit = f.arch->matrix_unit;
  // The compute channel's class has no copy method hcq encodes: copies take the copy channel.
  i.copies_on_compute = false;
  return i;
}

void NvDevice::ensure_rings() {
  // Caller holds rings_mu_.
  if (channels_) return;
  auto group =
      std::make_unique<NvChannelGroup>(*gpu_, std::vector<NvEngine>{NvEngine::compute, NvEngine::copy}, kRingEntries);
  auto compute = std::make_unique<NvRing>(*gpu_, group->channel(0).view(), kPushbufferBytes, name());
  auto copy = std::make_unique<NvRing>(*gpu_, group->channel(1).view(), kPushbufferBytes, name());
  // A submitter waiting for room on a faulted channel ends with the device's sticky fault.
  for (auto [r, sibling] : {std::pair{compute.get(), copy.get()}, std::pair{copy.get(), compute.get()}})
    r->set_fault_check([this, r, sibling] {
      if (std::exception_ptr f = fault_of(*r, sibling)) {
        record_error(f);
        std::rethrow_exception(f);
      }
    });
  compute->submit(channel_init_words(compute->arch(), NvEngine::compute), {});
  copy->submit(channel_init_words(copy->arch(), NvEngine::copy), {});
  channels_ = std::move(group);
  compute_ring_ = std::move(compute);
  copy_ring_ = std::move(copy);
  make_fault_debugger();
  rings_ready_.store(true, std::memory_order_release);
}

void NvDevice::make_fault_debugger() {
  // As tinygrad does: a GT200_DEBUGGER under the device, naming our compute object. Only fault reports use it, so
  // a refusal (a vGPU, a driver that withholds debugging) costs those details, not the device.
  abi::DebuggerAllocParams p{};
  p.app_client = gpu_->rm().root();
  p.class3d_object = channels_->channel(0).view().engine_object;
  try {
    debugger_ = RmObject(gpu_->rm(), gpu_->device(), gpu_->rm().alloc(gpu_->device(), abi::cls::gt200_debugger, p));
  } catch (const Error& e) {
    debugger_error_ = cat("RM refused the SM debugger object its fault records are read through: ", e.what());
  }
}

abi::Handle NvDevice::fault_debugger() const {
  std::lock_guard lock(rings_mu_);
  return debugger_.handle();
}

std::unique_ptr<HWQueue> NvDevice::new_queue(QueueKind kind) {
  // The rings live until the device is destroyed, when no queue may be made any more.
  if (!rings_ready_.load(std::memory_order_acquire)) {
    std::lock_guard lock(rings_mu_);
    ensure_rings();
  }
  if (kind == QueueKind::compute) return std::make_unique<NvComputeQueue>(*this, *compute_ring_);
  return std::make_unique<NvCopyQueue>(*this, *copy_ring_);
}

void NvDevice::submit_raw(NvEngine engine, std::span<const uint32_t> words) {
  NvRing* ring = nullptr;
  {
    std::lock_guard lock(rings_mu_);
    ensure_rings();
    ring = engine == NvEngine::compute ? compute_ring_.get() : copy_ring_.get();  // lives as long as the device
  }
  ring->submit(words, {});
}

std::string NvDevice::describe_state() const {
  // Only the signal: timeline_value() belongs to the submitting thread, and this runs on waiters.
  const Signal& t = timeline_signal();
  std::string s = cat(" [", gpu_->describe(), "; timeline signal ", hex(t.addr()), " = ", t.value());
  std::lock_guard lock(rings_mu_);
  for (const NvRing* r : {compute_ring_.get(), copy_ring_.get()})
    if (r) s += cat("; ", r->describe(), channel_details(*r));
  return s + "]";
}

std::vector<capture::RingDump> NvDevice::pending_rings() const {
  std::vector<capture::RingDump> out;
  std::lock_guard lock(rings_mu_);
  for (const NvRing* r : {compute_ring_.get(), copy_ring_.get()})
    if (r) r->pending(out);
  return out;
}

std::string NvDevice::channel_details(const NvRing& ring) const {
  if (!channel_details_) return {};
  try {
    const std::string d = channel_details_(ring.channel());
    return d.empty() ? d : cat(" (", d, ")");
  } catch (const std::exception& e) {
    return cat(" (no channel details: ", e.what(), ")");
  }
}

namespace {

// "GPC0 client GCC (0x11)" / "HUB client 0x6" from an NV_PFB_PRI_MMU_FAULT_INFO word; GPC client names are
// Ampere's and Hopper's (Blackwell renumbered them: the number only there).
std::string fault_client(uint32_t info, bool blackwell) {
  namespace mfi = abi::mmu_fault_info;
  const uint32_t id = mfi::client(info);
  if (mfi::client_type(info) == mfi::kClientTypeHub) return cat("HUB client ", hex(id));
  std::string name;
  if (!blackwell) {
    if (id < abi::gpc_client::t1_0 + 8) name = cat("T1_", id - abi::gpc_client::t1_0, " ");
    if (id == abi::gpc_client::gcc) name = "GCC ";
    if (id == abi::gpc_client::gpccs) name = "GPCCS ";
  }
  return cat("GPC", mfi::gpc_id(info), " client ", name, "(", hex(id), ")");
}

std::string name_or_number(const char* name, uint32_t value) { return name ? std::string(name) : cat("type ", value); }

}  // namespace

std::string NvDevice::rm_fault_info(const abi::ErrorNotification& n) const {
  // RM keeps details only of faults in the GR context (the SMs' MMU faults and error registers).
  if (n.info32 != abi::rc::mmu_fault && n.info32 != abi::rc::gr_exception) return {};
  if (!debugger_ || !compute_ring_)
    return cat("; RM's fault record not read: ", debugger_error_.empty() ? "no debugger object" : debugger_error_);
  const NvGpuFacts& f = gpu_->facts();
  const bool blackwell = f.sm / 10 >= 10;
  try {
    RmClient& rm = gpu_->rm();
    auto sm = std::make_unique<abi::ReadAllSmErrorStatesParams>();  // 4.7 KiB: not on a waiter's stack
    *sm = abi::ReadAllSmErrorStatesParams{};
    sm->target_channel = compute_ring_->channel().channel;
    sm->num_sms_to_read = std::min<uint32_t>(f.sm_count, abi::kDebugMaxSmsPerCall);
    rm.control(debugger_.handle(), abi::ctrl::debug_read_all_sm_error_states, *sm);
    if (sm->mmu_fault.valid) {
      const uint32_t info = sm->mmu_fault.fault_info;
      std::string s = cat("; RM's MMU fault record (first fault by ", fault_client(info, blackwell), ")");
      abi::ReadMmuFaultInfoParams m{};
      try {
        rm.control(debugger_.handle(), abi::ctrl::debug_read_mmu_fault_info, m);
      } catch (const RmError& e) {
        // RM's debugger object always exports it; NOT_SUPPORTED is a proxy's answer (gVisor's nvproxy passes no
        // READ_MMU_FAULT_INFO), which leaves the fault's kind and client known but not its address.
        if (e.status() != abi::status::err_not_supported) throw;
        return cat(s,
                   ": faulting VA unknown (DEBUG_READ_MMU_FAULT_INFO refused: NV_ERR_NOT_SUPPORTED, as gVisor's "
                   "nvproxy answers)");
      }
      if (m.count == 0) s += ": no addresses recorded";
      for (uint32_t i = 0; i < std::min(m.count, abi::kMmuFaultInfoMaxEntries); ++i) {
        const abi::MmuFaultInfoEntry& e = m.list[i];
        s += cat(i == 0 ? ": " : ", then ", "faulting VA ", hex(e.fault_address), " (",
                 name_or_number(abi::fault_type::name(e.fault_type, blackwell), e.fault_type), ", ",
                 name_or_number(abi::access_type::name(e.access_type), e.access_type), " access)");
      }
      return s;
    }
    std::string s;
    for (uint32_t i = 0; i < sm->num_sms_to_read; ++i) {
      const abi::SmErrorState& e = sm->sm_error_state[i];
      if (e.hww_global_esr == 0 && e.hww_warp_esr == 0) continue;
      s += cat(s.empty() ? "; RM's SM error record: " : ", ", "SM ", i, " global ESR ", hex(e.hww_global_esr),
               " warp ESR ", hex(e.hww_warp_esr), " warp PC ", hex(e.hww_warp_esr_pc64));
    }
    if (s.empty())
      s = "; RM recorded no MMU fault and no SM error for the compute context (it records only the SMs' own faults; "
          "the copy engines' and the host's go to the kernel log)";
    return s;
  } catch (const Error& e) {
    return cat("; RM's fault record could not be read: ", e.what());
  }
}

std::exception_ptr NvDevice::fault_of(const NvRing& ring, const NvRing* sibling) const {
  if (!ring.faulted()) return nullptr;
  std::lock_guard lock(fault_mu_);
  if (fault_) return fault_;
  const abi::ErrorNotification n = ring.error_notification();
  const bool copy_engine = n.info16 >= abi::engine_type::copy0;
  // Lead with the ring of the engine that faulted when the sibling is that one. RM stops the whole group, so the
  // other ring is stopped too, whether or not its notifier (written one channel after the other) is seen yet.
  const NvRing* culprit = &ring;
  const NvRing* stopped = sibling;
  if (stopped != nullptr && (ring.channel().engine == NvEngine::copy) != copy_engine &&
      (stopped->channel().engine == NvEngine::copy) == copy_engine)
    std::swap(culprit, stopped);
  const char* what = abi::rc::name(n.info32);
  const std::string engine = n.info16 == abi::engine_type::graphics ? "GR0"
                             : copy_engine                          ? cat("COPY", n.info16 - abi::engine_type::copy0)
                                                                    : cat("engine type ", n.info16);
  const Signal& t = timeline_signal();
  const std::string details = channel_details(*culprit);
  const std::string recorded = rm_fault_info(n);
  const std::string with_it =
      stopped != nullptr ? cat("; stopped with it (same channel group): ", stopped->describe()) : std::string();
  fault_ = std::make_exception_ptr(DeviceFault(
      cat(name(), ": ", what ? what : "channel error", " (RM error ", n.info32, ", Xid ", n.info32, ", on ", engine,
          " at GPU time ", n.time_ns(), " ns)", recorded, "; ", culprit->describe(), with_it, "; timeline signal ",
          hex(t.addr()), " = ", t.value(), details.empty() ? "; RM logs the rest to the kernel log (Xid)" : details,
          " [", gpu_->describe(), "]")));
  return fault_;
}

std::exception_ptr NvDevice::poll_fault() const {
  {
    std::lock_guard lock(fault_mu_);
    if (fault_) return fault_;
  }
  // try_lock: the rings are made under rings_mu_ (and submit their first words there); a poll that finds it busy
  // looks again at the next one.
  std::unique_lock lock(rings_mu_, std::try_to_lock);
  if (!lock) return nullptr;
  for (auto [r, sibling] :
       {std::pair{compute_ring_.get(), copy_ring_.get()}, std::pair{copy_ring_.get(), compute_ring_.get()}})
    if (r)
      if (std::exception_ptr f = fault_of(*r, sibling)) return f;
  return nullptr;
}

void NvDevice::set_channel_details(ChannelDetails details) {
  std::lock_guard lock(rings_mu_);
  channel_details_ = std::move(details);
}

Compiler& NvDevice::compiler() {
  std::call_once(compiler_once_, [&] { compiler_ = std::make_unique<NvCompiler>(gpu_->facts().arch_name()); });
  return *compiler_;
}

void NvDevice::set_program_hooks(NvProgramHooks hooks) {
  auto h = std::make_shared<const NvProgramHooks>(std::move(hooks));
  std::lock_guard lock(mu_);
  program_hooks_ = std::move(h);
}

void NvDevice::ensure_local_memory(uint32_t bytes_per_thread) {
  std::lock_guard lock(slm_mu_);
  if (bytes_per_thread <= slm_per_thread_) return;
  const NvGpuFacts& f = gpu_->facts();
  if (f.max_warps_per_sm == 0 || f.sms_per_tpc == 0 || f.max_tpcs == 0)
    throw UnsupportedDriver(
        cat(name(), ": the driver reported no warp, SM-per-TPC or TPC count; cannot size shader ", "local memory"));
  // As CUDA and tinygrad size it: per thread rounded to 32 bytes, a warp's share rounded to 512, every warp an SM
  // can hold, the SMs of a TPC; the per-TPC size rounded to 32 KiB, the whole to 128 KiB. The GPU finds a TPC's
  // share by the TPC's physical number, so there is one share for every TPC the chip was designed with
  // (GPCs x TPCs per GPC), floorswept ones too: the enabled count would leave the high-numbered TPCs unbacked.
  const uint64_t per_thread = align_up(bytes_per_thread, 32);
  const uint64_t per_tpc = align_up(align_up(per_thread * 32, 0x200) * f.max_warps_per_sm * f.sms_per_tpc, 0x8000);
  const uint64_t tpcs = f.max_tpcs;
  NvAllocOptions o;
  auto mem = gpu_->alloc(align_up(per_tpc * tpcs, 0x20000), o);
  std::vector<uint32_t> words;
  PushbufferEncoder(*f.arch, words).set_local_memory(mem->va(), per_tpc, 0xff);
  NvRing* ring = nullptr;
  {
    std::lock_guard rings(rings_mu_);
    ensure_rings();
    ring = compute_ring_.get();  // lives as long as the device
  }
  ring->submit(words, {});  // outside rings_mu_: a full ring must not block hang reports (describe_state)
  slm_now_ = {static_cast<uint32_t>(per_thread), per_tpc, mem->size()};
  slm_.push_back(std::move(mem));
  slm_per_thread_ = static_cast<uint32_t>(per_thread);
}

NvDevice::LocalMemory NvDevice::local_memory() const {
  std::lock_guard lock(slm_mu_);
  return slm_now_;
}

std::unique_ptr<Program> NvDevice::load_program(const std::string& prog, std::span<const uint8_t> binary) {
  const Cubin cubin = Cubin::parse(binary);  // CompileError("bad cubin: ...")
  const NvGpuFacts& f = gpu_->facts();
  // SASS runs on the SM version it was built for and on later minor versions of the same major one.
  if (cubin.sm() / 10 != f.sm / 10 || cubin.sm() > f.sm)
    throw InvalidArgument(
        cat(name(), ": kernel '", prog, "': the cubin is for ", cubin.arch(), ", this GPU is ", f.arch_name()));
  const CubinKernel* k = cubin.find(prog);
  if (!k) {
    std::string have;
    for (const CubinKernel& x : cubin.kernels()) have += (have.empty() ? "" : ", ") + x.name;
    throw InvalidArgument(cat(name(), ": kernel '", prog,
                              "' is not in the cubin (it defines: ", have.empty() ? "no kernels" : have, ")"));
  }
  if (!k->num_buffers.has_value() || !k->num_values.has_value())
    throw InvalidArgument(cat(name(), ": kernel '", prog, "' was not built with the hcq kernel ABI (no ", prog,
                              "_hcq_desc): its buffer and value counts are unknown"));
  if (cubin.image().empty()) throw CompileError(cat(name(), ": kernel '", prog, "': the cubin has an empty image"));

  // VRAM the host writes once (page aligned: the 256-byte image alignment holds).
  NvAllocOptions o;
  o.cpu_access = true;
  std::unique_ptr<NvMemory> image = gpu_->alloc(cubin.image().size(), o);
  const uint64_t base = image->va();
  const std::vector<uint8_t> bytes = cubin.relocations().empty() ? cubin.image() : cubin.image_at(base);
  std::memcpy(image->host(), bytes.data(), bytes.size());

  NvProgram::Facts pf;
  pf.kernel = *k;
  pf.image_va = base;
  pf.code_va = base + k->code_offset;
  pf.arch_limits = launch_limits(*f.arch);
  pf.limits = nv_launch_limits(*f.arch, *k);
  pf.num_bufs = *k->num_buffers;
  pf.num_vals = *k->num_values;
  pf.cubin_id = cubin.identity();
  pf.cbank0 = cbank0_prefix(*f.arch, *k);
  QmdProgram qp;
  qp.code_address = pf.code_va;
  qp.code_size = static_cast<uint32_t>(k->code_size);
  qp.registers = k->registers;
  qp.shared_bytes = k->shared_bytes;
  // The kernel's stack below CUDA's reserved top of the local window (kCudaLocalReserve), even without a stack;
  // both inside the window (the cubin's stack size is the file's word, not checked before).
  const uint64_t local_bytes = uint64_t{k->stack_bytes} + kCudaLocalReserve;
  if (local_bytes > kLocalWindowBytes)
    throw InvalidArgument(cat(name(), ": kernel '", prog, "' needs ", k->stack_bytes, " bytes of stack per thread; ",
                              "the local memory window holds ", kCudaStackTop, " bytes"));
  qp.local_bytes_per_thread = static_cast<uint32_t>(local_bytes);
  // The module's banks and the kernel's own (NVRTC puts sm_86's literal tables in .nv.constant2.<kernel>): each
  // bound where the image holds it, so the relocated bytes are what c[N][...] reads.
  for (const CubinConstantBank& b : cubin.banks_of(*k)) {
    if (b.bank == 0 || b.bank >= qmd::kConstantBuffers)
      throw CompileError(cat(name(), ": kernel '", prog, "': constant bank ", b.bank, " cannot be bound by a QMD"));
    qp.banks[b.bank] = {base + b.offset, b.size};
  }
  QmdBuilder qb(*f.arch);
  pf.qmd.assign(qb.layout().size_words, 0);
  try {
    qb.program(pf.qmd, qp);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(cat(name(), ": cannot load kernel '", prog, "': ", e.what()));
  }
  ensure_local_memory(static_cast<uint32_t>(local_bytes));

  std::shared_ptr<const NvProgramHooks> hooks;
  {
    std::lock_guard lock(mu_);
    hooks = program_hooks_;
  }
  std::function<void()> on_unload;
  if (hooks) {
    if (hooks->loaded) hooks->loaded(base, cubin);  // throws: `image` frees on the way out
    if (hooks->unloaded) on_unload = [hooks, base] { hooks->unloaded(base); };
  }
  return std::make_unique<NvProgram>(*this, prog, std::move(pf), std::move(image), std::move(on_unload));
}

Allocation NvDevice::alloc_memory(uint64_t size, const BufferSpec& spec) {
  if (size == 0) throw InvalidArgument(cat(name(), ": allocation of 0 bytes"));
  std::unique_ptr<NvMemory> m;
  if (spec.external_ptr) {
    m = gpu_->map_host(spec.external_ptr, size);
  } else {
    NvAllocOptions o;
    // Signals and rings (uncached) and host buffers live in host memory: the CPU polls and writes them.
    o.where = spec.host || spec.uncached ? NvAllocOptions::Where::host : NvAllocOptions::Where::vram;
    o.cpu_access = spec.cpu_access || spec.zero;
    m = gpu_->alloc(size, o);
    if (spec.zero) std::memset(m->host(), 0, m->size());
  }
  // An external pointer's allocation starts where the caller's memory does, not at the page below it.
  const uint64_t va = spec.external_ptr ? reinterpret_cast<uint64_t>(spec.external_ptr) : m->va();
  Allocation a{va, size, spec, this, m->host_mapped(), m->handle()};
  const uint64_t bytes = spec.external_ptr ? 0 : m->size();
  std::lock_guard lock(mu_);
  buffers_[a.va] = std::move(m);
  note_alloc(static_cast<int64_t>(bytes));
  return a;
}

void NvDevice::free_memory(const Allocation& a) {
  if (a.device != this)
    throw InvalidArgument(cat(name(), ": free of ", hex(a.va), " which belongs to ",
                              a.device ? a.device->name() : std::string("no device")));
  std::unique_ptr<NvMemory> m;
  {
    std::lock_guard lock(mu_);
    auto it = buffers_.find(a.va);
    if (it == buffers_.end() || it->second->handle() != a.handle)
      throw InvalidArgument(cat(name(), ": free of ", hex(a.va), ": not a live allocation of this device"));
    m = std::move(it->second);
    buffers_.erase(it);
    if (!a.spec.external_ptr) note_alloc(-static_cast<int64_t>(m->size()));
  }
  m.reset();
}

NvProgramHooks NvDevice::program_hooks() const {
  std::lock_guard lock(mu_);
  return program_hooks_ ? *program_hooks_ : NvProgramHooks{};
}

void NvDevice::map_memory(const Allocation& a) {
  if (a.device == this || a.size == 0) return;
  if (auto* peer = dynamic_cast<NvDevice*>(a.device); peer && &peer->gpu().driver() == &gpu_->driver()) {
    // A GPU of the same driver context: its memory is mapped on ours at the same VA, and unmapped with it.
    std::lock_guard lock(peer->mu_);
    auto it = peer->buffers_.find(a.va);
    if (it == peer->buffers_.end() || it->second->handle() != a.handle)
      throw InvalidArgument(cat(name(), ": map of ", hex(a.va), " of ", peer->name(), ": not a live allocation"));
    if (it->second->kind() != NvMemory::Kind::external_host) {
      peer->gpu().map_on_peer(*it->second, *gpu_);
      return;
    }
  }
  if (!a.host_mapped)
    throw InvalidArgument(cat(name(), ": cannot map ", hex(a.va), " of ", a.device ? a.device->name() : "?",
                              ": it is neither host-visible memory nor memory of a GPU of the same NVIDIA driver"));
  std::lock_guard lock(mu_);
  if (foreign_.count(a.va)) return;
  foreign_[a.va] = gpu_->map_host(reinterpret_cast<void*>(a.va), a.size);
}

void NvDevice::map_signal_page(void* addr, size_t size) {
  std::lock_guard lock(mu_);
  signal_pages_[reinterpret_cast<uint64_t>(addr)] = gpu_->map_host(addr, size);
}

void NvDevice::unmap_signal_page(void* addr, size_t) {
  std::unique_ptr<NvMemory> m;
  {
    std::lock_guard lock(mu_);
    auto it = signal_pages_.find(reinterpret_cast<uint64_t>(addr));
    if (it == signal_pages_.end()) return;
    m = std::move(it->second);
    signal_pages_.erase(it);
  }
}

// ---------------------------------------------------------------------------------------------------------------
std::unique_ptr<Device> open_nv_device_on(const std::string& name, std::shared_ptr<Os> os, unsigned index,
                                          const std::string& interface) {
  std::shared_ptr<NvDriver> driver = NvDriver::get(os);
  const std::vector<abi::CardInfo> cards = nv_cards(*driver);
  if (index >= cards.size())
    throw UnsupportedDriver(
        cat(name, ": the NVIDIA driver ", driver->rm().version().text, " reports ", cards.size(), " GPU(s)"));
  return std::make_unique<NvDevice>(name, std::move(os), cards[index], interface);
}

std::unique_ptr<Device> open_nv_device(const std::string& name, unsigned index) {
  std::shared_ptr<Os> os(std::shared_ptr<Os>(), &real_os());  // not owned: real_os() lives for the process
  if (::access("/dev/nvidiactl", F_OK) != 0)
    throw UnsupportedDriver(
        cat(name, ": no /dev/nvidiactl (the nvidia kernel module is not loaded, or no NVIDIA GPU)"));
  if (::access("/dev/nvidiactl", R_OK | W_OK) != 0)
    throw UnsupportedDriver(cat(name, ": no permission on /dev/nvidiactl"));
  try {
    return open_nv_device_on(name, std::move(os), index, "rm");
  } catch (const UnsupportedDriver& e) {
    throw UnsupportedDriver(cat(name, ": ", e.what()));
  }
}

}  // namespace hcq::nv
