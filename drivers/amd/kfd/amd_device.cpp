#include "amd/kfd/amd_device.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "amd/codeobj/code_object.hpp"
#include "amd/compiler/amd_compiler.hpp"
#include "amd/kfd/amd_aql_queue.hpp"
#include "amd/kfd/amd_program.hpp"
#include "amd/kfd/amd_queue.hpp"
#include "amd/kfd/drm_query.hpp"
#include "amd/target.hpp"
#include "hcq/allocator.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {

AmdDevice::AmdDevice(std::string name, std::shared_ptr<Os> os, const KfdNode& node, std::string interface)
    : Device(std::move(name)), os_(std::move(os)), interface_(std::move(interface)) {
  gpu_ = std::make_unique<KfdGpu>(*os_, node);
  try {
    process().signals.add_mapper(this);
    mapper_registered_ = true;
    init_runtime(std::make_unique<HCQAllocator>(*this));
    event_ = SignalEvent{gpu_->event_slot_va(), gpu_->signal_event_id()};
    timeline_addr_[0].store(timeline_signal().addr());
    on_timeline_reset([this] {
      // After a swap the timeline is the other signal: both stay known (a queue built earlier may name either).
      const uint64_t now = timeline_signal().addr();
      if (!is_timeline(now)) timeline_addr_[1].store(now);
    });
    fault_watcher_ = std::thread([this] { watch_faults(); });
  } catch (...) {
    shutdown_runtime();
    if (mapper_registered_) process().signals.remove_mapper(this);
    throw;
  }
}

AmdDevice::~AmdDevice() {
  shutdown_runtime();  // a fault seen while draining still ends the drain at once
  stopping_.store(true);
  if (fault_watcher_.joinable()) {
    try {
      gpu_->wake_exception_waiter();
      fault_watcher_.join();
    } catch (const Error&) {
      fault_watcher_.detach();  // cannot happen with a live KFD fd; never terminate() over it
    }
  }
  if (mapper_registered_) process().signals.remove_mapper(this);
  std::lock_guard lock(mu_);
  foreign_.clear();
  buffers_.clear();
  signal_pages_.clear();
}

DeviceInfo AmdDevice::info() const {
  const KfdNode& n = gpu_->node();
  DeviceInfo i;
  i.name = name();
  i.interface = interface_;
  i.arch = n.gfx;
  i.memory_bytes = n.vram_bytes;
  i.compute_queues = n.num_cp_queues;
  i.copy_queues = n.num_sdma_engines * n.num_sdma_queues_per_engine;
  i.driver_version = cat("KFD ", gpu_->version_major(), ".", gpu_->version_minor());
  // What the render node says through libdrm: "KFD 1.11, amdgpu 3.57.0; AMD Radeon RX 7900 XTX". Skipped for the
  // simulator's node (drm_query.hpp).
  if (const std::optional<RenderNodeInfo> drm = query_render_minor(*os_, n.render_minor)) {
    i.driver_version += cat(", ", drm->drm_driver, " ", drm->drm_version);
    if (!drm->marketing_name.empty()) i.driver_version += cat("; ", drm->marketing_name);
  }
  i.uuid = n.uuid();
  i.launch_limits = amd_launch_limits();
  // The topology's own numbers (the simulated KFD reports its spec's, sim_gpus.cpp).
  i.wave_size = n.wave_front_size;
  i.shared_memory_bytes = n.lds_size_in_kb * 1024;
  i.compute_units = n.cu_count();
  i.matrix_unit = Target::from_gfx(n.gfx).matrix_unit;
  // Copies are SDMA packets; the PM4 and AQL compute queues refuse them (amd_queue.cpp).
  i.copies_on_compute = false;
  return i;
}

bool AmdDevice::aql_compute() const {
  // Multi-XCC parts (gfx942, gfx950) run compute queues in HSA mode, as ROCr and tinygrad drive them.
  const std::string& gfx = gpu_->node().gfx;
  return gpu_->node().num_xcc > 1 || gfx.rfind("gfx94", 0) == 0 || gfx.rfind("gfx95", 0) == 0;
}

std::unique_ptr<HWQueue> AmdDevice::new_queue(QueueKind kind) {
  // 256 KiB rings; a submission larger than the ring streams through it with backpressure.
  constexpr uint32_t kRingBytes = 256 * 1024;
  std::lock_guard lock(rings_mu_);
  auto make_ring = [&](KfdQueue::Type type) {
    auto r = std::make_unique<AmdRing>(*gpu_, Target::from_gfx(gpu_->node().gfx), type, kRingBytes, name());
    r->set_fault_check([this] { check_fault(); });
    return r;
  };
  if (kind == QueueKind::compute) {
    if (!compute_ring_)
      compute_ring_ = make_ring(aql_compute() ? KfdQueue::Type::compute_aql : KfdQueue::Type::compute_pm4);
    if (compute_ring_->type() == KfdQueue::Type::compute_aql)
      return std::make_unique<AmdAqlQueue>(*this, *compute_ring_);
    return std::make_unique<AmdPm4Queue>(*this, *compute_ring_);
  }
  if (!sdma_ring_) sdma_ring_ = make_ring(KfdQueue::Type::sdma);
  return std::make_unique<AmdSdmaQueue>(*this, *sdma_ring_);
}

Compiler& AmdDevice::compiler() {
  std::call_once(compiler_once_, [&] { compiler_ = std::make_unique<AmdCompiler>(gpu_->node().gfx); });
  return *compiler_;
}

void AmdDevice::set_program_hooks(ProgramHooks hooks) {
  auto h = std::make_shared<const ProgramHooks>(std::move(hooks));
  std::lock_guard lock(mu_);
  program_hooks_ = std::move(h);
}

ProgramHooks AmdDevice::program_hooks() const {
  std::lock_guard lock(mu_);
  return program_hooks_ ? *program_hooks_ : ProgramHooks{};
}

std::unique_ptr<Program> AmdDevice::load_program(const std::string& prog, std::span<const uint8_t> binary) {
  const CodeObject co = CodeObject::parse(binary);  // CompileError("bad code object: ...")
  const CodeObjectKernel* k = co.find(prog);
  if (!k) {
    std::string have;
    for (const CodeObjectKernel& x : co.kernels()) have += (have.empty() ? "" : ", ") + x.name;
    throw InvalidArgument(cat(name(), ": kernel '", prog,
                              "' is not in the code object (it defines: ", have.empty() ? "no kernels" : have, ")"));
  }
  const Target& t = Target::from_gfx(gpu_->node().gfx);
  AmdProgram::Facts f;
  try {
    f.info = co.info(prog, t);  // InvalidArgument: built for another target, or wants inputs we do not set up
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(cat(name(), ": cannot load kernel '", prog, "': ", e.what()));
  }
  const uint64_t align = co.image_alignment();
  if (align > 4096)
    throw CompileError(
        cat(name(), ": kernel '", prog, "': code object wants ", align, "-byte alignment, more than a page"));
  if (co.image().empty()) throw CompileError(cat(name(), ": kernel '", prog, "': code object has an empty image"));

  // Host-visible VRAM (page aligned, so the 256-byte code alignment holds), written through the host mapping.
  KfdAllocOptions o;
  o.host_visible = true;
  o.executable = true;
  std::unique_ptr<KfdBuffer> image = gpu_->alloc(co.image().size(), KfdBuffer::Kind::vram, o);
  const uint64_t base = image->va();
  const std::vector<uint8_t> bytes = co.relocations().empty() ? co.image() : co.image_at(base);
  std::memcpy(image->host(), bytes.data(), bytes.size());

  f.code_va = base + k->code_offset;
  f.descriptor_va = base + k->descriptor_offset;
  f.image_va = base;
  f.image_size = bytes.size();
  f.kernarg_segment_size = k->kernarg_segment_size;
  f.kernarg_segment_align = k->kernarg_segment_align ? k->kernarg_segment_align : 16;
  f.num_bufs = k->num_buffers;
  f.num_vals = k->num_values;
  f.code_object_id = co.identity();
  if (f.code_va % 256)
    throw CompileError(cat(name(), ": kernel '", prog, "': code entry ", hex(f.code_va), " is not 256-byte aligned"));

  std::shared_ptr<const ProgramHooks> hooks;
  {
    std::lock_guard lock(mu_);
    hooks = program_hooks_;
  }
  std::function<void()> on_unload;
  if (hooks) {
    if (hooks->loaded) hooks->loaded(base, co);  // throws: `image` is freed on the way out
    if (hooks->unloaded) on_unload = [hooks, base] { hooks->unloaded(base); };
  }
  return std::make_unique<AmdProgram>(*this, prog, std::move(f), std::move(image), std::move(on_unload));
}

Allocation AmdDevice::alloc_memory(uint64_t size, const BufferSpec& spec) {
  if (size == 0) throw InvalidArgument(cat(name(), ": allocation of 0 bytes"));
  std::unique_ptr<KfdBuffer> b;
  if (spec.external_ptr) {
    b = gpu_->map_user(spec.external_ptr, size);
  } else {
    const KfdBuffer::Kind kind = spec.host ? KfdBuffer::Kind::gtt : KfdBuffer::Kind::vram;
    KfdAllocOptions o;
    o.uncached = spec.uncached;
    o.host_visible = spec.cpu_access || spec.host || spec.uncached || spec.zero;
    b = gpu_->alloc(size, kind, o);
    if (spec.zero) std::memset(b->host(), 0, b->size());
  }
  Allocation a{b->va(), size, spec, this, b->host_visible(), b->handle()};
  const uint64_t bytes = spec.external_ptr ? 0 : b->size();
  std::lock_guard lock(mu_);
  buffers_[a.va] = std::move(b);
  note_alloc(static_cast<int64_t>(bytes));
  return a;
}

void AmdDevice::free_memory(const Allocation& a) {
  if (a.device != this)
    throw InvalidArgument(cat(name(), ": free of ", hex(a.va), " which belongs to ",
                              a.device ? a.device->name() : std::string("no device")));
  std::unique_ptr<KfdBuffer> b;
  {
    std::lock_guard lock(mu_);
    auto it = buffers_.find(a.va);
    if (it == buffers_.end() || it->second->handle() != a.handle)
      throw InvalidArgument(cat(name(), ": free of ", hex(a.va), ": not a live allocation of this device"));
    b = std::move(it->second);
    buffers_.erase(it);
    if (!a.spec.external_ptr) note_alloc(-static_cast<int64_t>(b->size()));
  }
  b.reset();
}

void AmdDevice::map_memory(const Allocation& a) {
  if (a.device == this || a.size == 0) return;
  if (auto* peer = dynamic_cast<AmdDevice*>(a.device); peer && peer->os_ == os_) {
    // Same KFD process: map the peer's buffer on our GPU at the same VA.
    std::lock_guard lock(peer->mu_);
    auto it = peer->buffers_.find(a.va);
    if (it == peer->buffers_.end()) throw InvalidArgument(cat(name(), ": map of ", hex(a.va), ": not a live buffer"));
    it->second->map_on(gpu_->gpu_id());
    return;
  }
  if (!a.host_mapped)
    throw InvalidArgument(cat(name(), ": cannot map ", hex(a.va), " of ", a.device ? a.device->name() : "?",
                              ": it is not host memory and not on a GPU of the same KFD"));
  std::lock_guard lock(mu_);
  if (foreign_.count(a.va)) return;
  const uint64_t page = 4096;
  const uint64_t lo = align_down(a.va, page), hi = align_up(a.va + a.size, page);
  foreign_[a.va] = gpu_->map_user(reinterpret_cast<void*>(lo), hi - lo);
}

void AmdDevice::map_signal_page(void* addr, size_t size) {
  std::lock_guard lock(mu_);
  signal_pages_[reinterpret_cast<uint64_t>(addr)] = gpu_->map_user(addr, size);
}

void AmdDevice::unmap_signal_page(void* addr, size_t) {
  std::lock_guard lock(mu_);
  signal_pages_.erase(reinterpret_cast<uint64_t>(addr));
}

std::string AmdDevice::timeline_state() const {
  // Only the signal: timeline_value() belongs to the submitting thread, and this runs on waiters and the watcher.
  const Signal& t = timeline_signal();
  return cat("timeline signal ", hex(t.addr()), " = ", t.value());
}

std::string AmdDevice::describe_state() const {
  std::string s = cat(" [", gpu_->describe(), "; ", timeline_state());
  std::lock_guard lock(rings_mu_);
  for (const AmdRing* r : {compute_ring_.get(), sdma_ring_.get()})
    if (r) s += cat("; ", r->describe());
  return s + "]";
}

std::vector<capture::RingDump> AmdDevice::pending_rings() const {
  std::vector<capture::RingDump> out;
  std::lock_guard lock(rings_mu_);
  for (const AmdRing* r : {compute_ring_.get(), sdma_ring_.get()})
    if (r) out.push_back(r->pending());
  return out;
}

void AmdDevice::check_fault() const {
  std::lock_guard lock(fault_mu_);
  if (fault_) std::rethrow_exception(fault_);
}

std::string AmdDevice::fault_message(const KfdException& e) const {
  // KFD does not say which queue faulted: name the queues that stopped with work left, and what they stopped at.
  std::string queues;
  {
    std::lock_guard lock(rings_mu_);
    for (const AmdRing* r : {compute_ring_.get(), sdma_ring_.get()})
      if (r && !r->drained()) queues += cat("; ", r->describe());
  }
  if (queues.empty()) queues = "; every queue had read all it was given";
  return cat(name(), ": ", e.describe(), " reported by KFD for ", gpu_->describe(), queues, "; ", timeline_state());
}

void AmdDevice::watch_faults() {
  while (!stopping_.load()) {
    std::optional<KfdException> e;
    try {
      e = gpu_->wait_exception(KfdGpu::kWaitForever);
    } catch (const Error& err) {
      // WAIT_EVENTS itself failed: the watcher cannot work, and saying so beats silently missing faults.
      if (!stopping_.load())
        record_error(std::make_exception_ptr(DeviceFault(cat(name(), ": fault watcher stopped: ", err.what()))));
      return;
    }
    if (!e || e->gpu_id != gpu_->gpu_id()) continue;  // a wake-up, or another GPU's exception
    auto fault = std::make_exception_ptr(DeviceFault(fault_message(*e)));
    {
      std::lock_guard lock(fault_mu_);
      if (!fault_) fault_ = fault;
    }
    record_error(fault);
    // Waiters sleeping on the signal event would see the fault only when their slice ends: wake them now.
    try {
      gpu_->set_signal_event();
    } catch (const Error&) {
    }
  }
}

bool AmdDevice::sleep_on_signal(const Signal& s, uint64_t /*target*/, std::chrono::microseconds limit) const {
  if (event_.mailbox == 0 || !is_timeline(s.addr())) return false;
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(limit).count();
  // A spurious return (the event was left set by an earlier signal no one waited for) only costs a re-check.
  gpu_->wait_signal_event(static_cast<uint32_t>(std::clamp<int64_t>(ms, 1, KfdGpu::kWaitForever - 1)));
  return true;
}

std::unique_ptr<Device> open_kfd_device_on(const std::string& name, std::shared_ptr<Os> os, unsigned index,
                                           const std::string& interface) {
  const std::vector<KfdNode> nodes = kfd_topology(*os);
  if (index >= nodes.size())
    throw UnsupportedDriver(cat(name, ": the KFD topology has ", nodes.size(), " GPU node(s)"));
  return std::make_unique<AmdDevice>(name, std::move(os), nodes[index], interface);
}

std::unique_ptr<Device> open_kfd_device(const std::string& name, unsigned index) {
  std::shared_ptr<Os> os(std::shared_ptr<Os>(), &real_os());  // not owned: real_os() lives for the process
  const std::vector<KfdNode> nodes = kfd_topology(*os);
  if (nodes.empty()) {
    struct stat st{};
    if (::stat("/dev/kfd", &st) != 0)
      throw UnsupportedDriver(cat(name, ": no /dev/kfd (amdgpu not loaded, or no AMD GPU)"));
    if (::access("/dev/kfd", R_OK | W_OK) != 0)
      throw UnsupportedDriver(cat(name, ": no permission on /dev/kfd (join the render/video group)"));
    throw UnsupportedDriver(cat(name, ": /dev/kfd is present but the KFD topology lists no GPU"));
  }
  return open_kfd_device_on(name, std::move(os), index, "kfd");
}

}  // namespace hcq::amd
