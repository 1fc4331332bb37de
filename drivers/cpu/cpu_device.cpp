#include "cpu_device.hpp"

#include <elf.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "cpu_features.hpp"
#include "cpu_limits.hpp"
#include "cpu_program.hpp"
#include "cpu_queue.hpp"
#include "cpu_ring.hpp"
#include "cpu_thread_pool.hpp"
#include "cpu_worker.hpp"
#include "hcq/allocator.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/backend/capture.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "workgroup_threads.hpp"

namespace hcq::cpu {
namespace {

constexpr uint64_t kPage = 4096;
// A descriptor asking for more arguments than this is garbage, not a kernel.
constexpr uint32_t kMaxKernelArgs = 1u << 16;

// MemTotal of /proc/meminfo in bytes, or 0 when it cannot be read.
uint64_t host_memory_bytes(Os& os) {
  const std::string text = os.read_file("/proc/meminfo").value_or("");
  const size_t at = text.find("MemTotal:");
  if (at == std::string::npos) return 0;
  return std::strtoull(text.c_str() + at + 9, nullptr, 10) * 1024;  // the kernel reports kB
}

}  // namespace

CpuDevice::CpuDevice(std::string name)
    : Device(std::move(name)),
      os_(real_os()),
      memory_bytes_(host_memory_bytes(os_)),
      mappings_(std::make_shared<CpuMappings>()),
      compiler_(os_),
      isa_(host_cpu_isa()) {
  try {
    process().signals.add_mapper(this);
    mapper_registered_ = true;
    for (QueueKind kind : {QueueKind::compute, QueueKind::copy}) {
      const size_t i = queue_index(kind);
      BufferSpec spec;
      spec.uncached = spec.cpu_access = spec.nolru = true;
      ring_memory_[i] = alloc_memory(kRingDwords * sizeof(uint32_t), spec);
      rings_[i] =
          std::make_unique<CpuRing>(std::span<uint32_t>(reinterpret_cast<uint32_t*>(ring_memory_[i].va), kRingDwords),
                                    cat(this->name(), " ", to_string(kind), " queue"));
    }
    pool_ = std::make_unique<CpuThreadPool>(knobs::cpu_threads() - 1);
    spare_core_ = std::thread::hardware_concurrency() > knobs::cpu_threads();
    workers_[0] = std::make_unique<CpuWorker>(*this, "compute", *rings_[0], *mappings_, signal_wake_, pool_.get());
    workers_[1] = std::make_unique<CpuWorker>(*this, "copy", *rings_[1], *mappings_, signal_wake_, nullptr);
    HCQAllocator::Options opts = HCQAllocator::kDefaultOptions;
    opts.copyout_in_place = true;  // the device's memory is the host's
    init_runtime(std::make_unique<HCQAllocator>(*this, opts));
  } catch (...) {
    shutdown_runtime();
    stop_hardware();
    throw;
  }
}

CpuDevice::~CpuDevice() {
  shutdown_runtime();  // synchronizes, empties the allocator cache, returns side memory: the backend still works
  stop_hardware();
}

void CpuDevice::stop_hardware() noexcept {
  for (auto& w : workers_) w.reset();
  pool_.reset();
  for (size_t i = 0; i < rings_.size(); ++i) {
    rings_[i].reset();
    if (ring_memory_[i].size != 0) {
      try {
        free_memory(ring_memory_[i]);
      } catch (...) {
      }
      ring_memory_[i] = {};
    }
  }
  if (mapper_registered_) {
    process().signals.remove_mapper(this);
    mapper_registered_ = false;
  }
}

DeviceInfo CpuDevice::info() const {
  DeviceInfo i;
  i.name = name();
  i.interface = "cpu";
  i.arch = "x86_64";
  i.memory_bytes = memory_bytes_;
  i.compute_queues = 1;
  i.copy_queues = 1;
  i.driver_version = compiler_.identity();
  // The host has no device UUID to give: uuid stays std::nullopt.
  i.launch_limits = kCpuLaunchLimits;
  // A workgroup's threads run one after another on one worker (no lockstep); shared arrays live in the thread
  // runner's arena; the compute worker and its pool's helpers run workgroups at once.
  i.wave_size = 1;
  i.shared_memory_bytes = static_cast<uint32_t>(kWorkgroupSharedBytes);
  i.compute_units = pool_ ? pool_->helpers() + 1 : 1;
  // One worker runs every command kind, whichever queue it came from.
  i.copies_on_compute = true;
  i.cpu_isa = isa_;
  return i;
}

std::unique_ptr<HWQueue> CpuDevice::new_queue(QueueKind kind) {
  return std::make_unique<CpuQueue>(*this, kind, *rings_[queue_index(kind)]);
}

Allocation CpuDevice::alloc_memory(uint64_t size, const BufferSpec& spec) {
  if (size == 0) throw InvalidArgument(cat(name(), ": allocation of 0 bytes"));
  if (spec.external_ptr) {
    // The caller's memory, wrapped as is: mapped for our queues, never unmapped or freed by us.
    const auto va = reinterpret_cast<uint64_t>(spec.external_ptr);
    mappings_->add_range(va, size);
    return Allocation{va, size, spec, this, true, 0};
  }
  if (size > (uint64_t{1} << 62))
    throw OutOfMemory(cat(name(), ": ", size, " bytes asked, the host has ", memory_bytes_));
  const uint64_t bytes = align_up(size, kPage);

  std::lock_guard lock(mem_mu_);
  if (memory_bytes_ != 0 && bytes_in_use() + bytes > memory_bytes_)
    throw OutOfMemory(cat(name(), ": ", size, " bytes asked, ", bytes_in_use(), " of the host's ", memory_bytes_,
                          " bytes already in use"));
  VaSpace& va_space = process().va;
  const uint64_t va = va_space.alloc(bytes);
  // MAP_FIXED over our own PROT_NONE reservation: fresh anonymous pages, zero-filled by the kernel (spec.zero).
  void* p = os_.mmap(reinterpret_cast<void*>(va), bytes, PROT_READ | PROT_WRITE,
                     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    va_space.free(va, bytes);
    if (err == ENOMEM)
      throw OutOfMemory(cat(name(), ": mmap of ", size, " bytes at ", hex(va), ": ", std::strerror(err), " (",
                            bytes_in_use(), " bytes in use)"));
    throw OsError(cat(name(), ": mmap of ", size, " bytes at ", hex(va), ": ", std::strerror(err)), err);
  }
  mappings_->add_range(va, bytes);
  note_alloc(static_cast<int64_t>(bytes));
  return Allocation{va, size, spec, this, true, bytes};
}

void CpuDevice::free_memory(const Allocation& a) {
  if (a.device != this)
    throw InvalidArgument(cat(name(), ": free of ", hex(a.va), " which belongs to ",
                              a.device ? a.device->name() : std::string("no device")));
  if (a.spec.external_ptr) {
    mappings_->remove_range(a.va, a.size);
    return;
  }
  const uint64_t bytes = a.handle;
  if (bytes == 0 || bytes < a.size)
    throw InvalidArgument(cat(name(), ": free of ", hex(a.va), ": not an allocation of this device"));

  // Unmap from our queues and every peer first: a command still using the range holds the mappings' shared lock,
  // so this waits for it, and any later command faults instead of touching freed memory.
  std::vector<std::weak_ptr<CpuMappings>> peers;
  {
    std::lock_guard lock(peers_mu_);
    if (auto it = peers_.find(a.va); it != peers_.end()) {
      peers = std::move(it->second);
      peers_.erase(it);
    }
  }
  for (const auto& weak : peers)
    if (auto peer = weak.lock()) peer->remove_range(a.va, bytes);
  mappings_->remove_range(a.va, bytes);

  std::lock_guard lock(mem_mu_);
  process().va.free(a.va, bytes);  // re-reserves PROT_NONE over the pages: they go back to the kernel
  note_alloc(-static_cast<int64_t>(bytes));
}

void CpuDevice::map_memory(const Allocation& a) {
  if (a.device == this || a.size == 0) return;
  // The CPU device's workers reach memory through the host's own mapping: another device's memory the host does not
  // map (VRAM without host access) would be a SIGSEGV in a worker, so it is refused here instead.
  if (!a.host_mapped)
    throw InvalidArgument(cat(name(), ": cannot map ", a.size, " bytes at ", hex(a.va), " of ",
                              a.device ? a.device->name() : std::string("another device"),
                              ": the host does not map that memory, so the CPU cannot reach it (let that device's "
                              "copy queue move it, or allocate it with cpu_access)"));
  const uint64_t bytes = a.handle >= a.size ? a.handle : a.size;
  if (auto* owner = dynamic_cast<CpuDevice*>(a.device); owner && !a.spec.external_ptr) {
    std::lock_guard lock(owner->peers_mu_);
    auto& list = owner->peers_[a.va];
    for (const auto& weak : list)
      if (weak.lock() == mappings_) return;  // already mapped here
    list.push_back(mappings_);
    mappings_->add_range(a.va, bytes);
    return;
  }
  std::lock_guard lock(peers_mu_);
  if (foreign_.insert({a.va, bytes}).second) mappings_->add_range(a.va, bytes);
}

std::unique_ptr<Program> CpuDevice::load_program(const std::string& name, std::span<const uint8_t> binary) {
  ElfImage image = ElfImage::load(binary);
  const std::optional<ElfSymbol> fn = image.find(name);
  if (!fn || fn->type != STT_FUNC) {
    std::string have;
    for (const std::string& f : image.function_names()) have += (have.empty() ? "" : ", ") + f;
    throw InvalidArgument(cat(this->name(), ": kernel '", name,
                              "' is not in the program (it defines: ", have.empty() ? "no functions" : have, ")"));
  }
  const std::optional<ElfSymbol> desc_sym = image.find(name + "_hcq_desc");
  if (!desc_sym || desc_sym->size < sizeof(hcq_kernel_desc))
    throw CompileError(cat(this->name(), ": kernel '", name, "' has no ", name,
                           "_hcq_desc descriptor: declare it with HCQ_KERNEL(name, nbufs, nvals)"));
  hcq_kernel_desc desc;
  std::memcpy(&desc, reinterpret_cast<const void*>(desc_sym->addr), sizeof desc);
  if (desc.magic != HCQ_KERNEL_MAGIC)
    throw CompileError(cat(this->name(), ": kernel '", name, "' descriptor magic ", hex(desc.magic), ", expected ",
                           hex(HCQ_KERNEL_MAGIC)));
  if (desc.nbufs > kMaxKernelArgs || desc.nvals > kMaxKernelArgs)
    throw CompileError(cat(this->name(), ": kernel '", name, "' descriptor claims ", desc.nbufs, " buffers and ",
                           desc.nvals, " values"));
  const KernelEntry entry{reinterpret_cast<KernelFn>(fn->addr), desc.nbufs, desc.nvals};
  return std::make_unique<CpuProgram>(*this, name, std::move(image), entry, next_program_handle_++);
}

bool CpuDevice::sleep_on_signal(const Signal& s, uint64_t target, std::chrono::microseconds limit) const {
  // The timeline only: this device's workers write it, and wake whoever sleeps. Any other signal may be written by
  // the host or another device, which wake no one (those waits back off instead). The host also writes the timeline
  // (set_timeline_value, after a synchronize, when no one waits for it): a sleeper it would leave asleep wakes by
  // kMaxTimelineSleep, and the wait looks again.
  if (!(s == timeline_signal())) return false;
  constexpr std::chrono::microseconds kMaxTimelineSleep{1000};
  // With a core to spare (fewer kernel threads than cores) the waiter polls for a while before it sleeps: it takes
  // no core a worker needs, and sees the end of the work at once instead of after a wake-up. This is CUDA's own
  // choice for a synchronising host thread (spin while its contexts are fewer than the processors, else yield).
  constexpr std::chrono::microseconds kSpinWithSpareCore{1000};
  signal_wake_.sleep(s.host_ptr(), target, std::min(limit, kMaxTimelineSleep),
                     spare_core_ ? kSpinWithSpareCore : std::chrono::microseconds{});
  return true;
}

std::string CpuDevice::describe_state() const {
  std::string s;
  for (const auto& w : workers_)
    if (w) s += (s.empty() ? "" : "; ") + w->describe();
  return s;
}

std::vector<capture::RingDump> CpuDevice::pending_rings() const {
  std::vector<capture::RingDump> out;
  for (QueueKind kind : {QueueKind::compute, QueueKind::copy})
    if (const CpuRing* r = rings_[queue_index(kind)].get()) out.push_back(pending_ring_words(*r, to_string(kind)));
  return out;
}

void CpuDevice::map_signal_page(void* addr, size_t size) {
  mappings_->add_range(reinterpret_cast<uint64_t>(addr), size);
}

void CpuDevice::unmap_signal_page(void* addr, size_t size) {
  mappings_->remove_range(reinterpret_cast<uint64_t>(addr), size);
}

}  // namespace hcq::cpu
