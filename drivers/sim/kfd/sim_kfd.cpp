// The simulated KFD driver. Validation and errnos follow the Linux amdkfd driver (kfd_chardev.c, kfd_events.c,
// kfd_queue.c, amdgpu_amdkfd_gpuvm.c); where these files are stricter than the kernel, the comment says so.
// This file: construction and teardown, lookups, and the ioctl dispatch with the process-level ioctls (version,
// clocks, runtime enable, VM acquire, apertures). Topology is sim_kfd_topology.cpp, memory sim_kfd_memory.cpp,
// queues sim_kfd_queues.cpp, events sim_kfd_events.cpp.
#include "sim/kfd/sim_kfd.hpp"

#include <linux/kfd_ioctl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>
#include <thread>

#include "amd/kfd/compat/kfd_runtime_enable.hpp"
#include "amd/target.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "sim/common/memfd_backing.hpp"
#include "sim/kfd/sim_kfd_objects.hpp"

namespace hcq::sim {

using namespace sim_kfd_detail;

const char* to_string(SimQueueType t) {
  switch (t) {
    case SimQueueType::compute_pm4: return "compute (PM4)";
    case SimQueueType::sdma: return "SDMA";
    case SimQueueType::compute_aql: return "compute (AQL)";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------------------------
SimKfd::SimKfd(const std::vector<std::string>& targets, QueueRunnerFactory runner_factory)
    : factory_(std::move(runner_factory)) {
  if (targets.empty()) throw InvalidArgument("simulated KFD: no GPU targets given");
  for (size_t i = 0; i < targets.size(); ++i) {
    auto g = std::make_unique<Gpu>();
    g->spec = &SimGpuSpec::of(targets[i]);
    g->target = &amd::Target::from_gfx(targets[i]);
    g->index = i;
    g->node = static_cast<uint32_t>(i + 1);
    g->render_minor = static_cast<uint32_t>(128 + i);
    // Real gpu_ids are a hash of the PCI location and properties; any stable non-zero 16-bit value will do.
    g->gpu_id = 0x4a2c + 0x1111 * static_cast<uint32_t>(i);
    auto db = MemfdBacking::make("hcq-sim-doorbells", kDoorbellSliceBytes);
    auto mmio = MemfdBacking::make("hcq-sim-mmio", kPage);
    if (!db || !mmio) throw OutOfMemory(cat("simulated KFD: no memory for ", targets[i], "'s doorbells"));
    g->doorbells = *db;
    g->mmio = *mmio;
    g->view = GpuView::of_unified_va();
    // A kernel's writes reach memory through the writebacks its queue's commands ask for (HCQ_SIM_L2=0: at once).
    if (knobs::sim_l2()) g->view->enable_cache();
    gpus_.push_back(std::move(g));
  }
}

SimKfd::~SimKfd() {
  std::vector<std::shared_ptr<Queue>> dying;
  {
    std::lock_guard lock(mu_);
    teardown_process_locked(dying);
  }
  dying.clear();  // runners stop here, outside the lock (they may be calling back into us)
  for (auto& g : gpus_) {
    g->doorbells.release();
    g->mmio.release();
  }
}

void SimKfd::teardown_process_locked(std::vector<std::shared_ptr<Queue>>& dying) {
  for (auto& [id, q] : queues_) dying.push_back(std::move(q));
  queues_.clear();
  {
    std::unique_lock dl(doorbell_mu_);
    for (auto& g : gpus_)
      for (auto& q : g->by_slot) q.reset();
  }
  for (auto& [id, e] : events_) forget_waiters_locked(e);
  events_.clear();
  runtime_enabled_ = false;
  event_page_ = nullptr;
  event_page_bo_.reset();
  {
    std::unique_lock vm(vm_mu_);
    for (auto& g : gpus_) {
      g->vm.clear();
      g->acquired = false;
      g->drm_file = -1;
      g->vram_used = 0;
    }
  }
  bos_.clear();
}

uint32_t SimKfd::gpu_id(size_t index) const {
  if (index >= gpus_.size()) throw InvalidArgument(cat("simulated KFD: no GPU ", index));
  return gpus_[index]->gpu_id;
}

SimKfd::Gpu* SimKfd::gpu_by_id(uint32_t gpu_id) {
  for (auto& g : gpus_)
    if (g->gpu_id == gpu_id) return g.get();
  return nullptr;
}

SimKfd::Gpu* SimKfd::gpu_by_minor(uint32_t minor) {
  for (auto& g : gpus_)
    if (g->render_minor == minor) return g.get();
  return nullptr;
}

std::shared_ptr<SimKfd::Bo> SimKfd::bo_by_handle(uint64_t handle) {
  auto it = bos_.find(handle);
  return it == bos_.end() ? nullptr : it->second;
}

uint64_t SimKfd::gpu_clock() const {
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return static_cast<uint64_t>(ns) / 10;  // 100 MHz
}

// ---------------------------------------------------------------------------------------------------------------
// ioctl entry: the kernel's kfd_ioctl() copy-in/copy-out discipline.
int SimKfd::ioctl(int file, unsigned long request, void* arg) {
  File f;
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(file);
    if (it == files_.end()) return -EBADF;
    f = it->second;
  }
  if (f.kind == File::Kind::render) return _IOC_TYPE(request) == 'd' ? -EINVAL : -ENOTTY;  // no DRM ioctls here

  struct Def {
    unsigned long cmd;
    int (SimKfd::*fn)(void*);
  };
  const unsigned nr = _IOC_NR(request);
  if (nr < AMDKFD_COMMAND_START || nr >= kCommandEnd) return -ENOTTY;
  Def def{0, nullptr};
  switch (nr) {
    case _IOC_NR(AMDKFD_IOC_GET_VERSION): def = {AMDKFD_IOC_GET_VERSION, &SimKfd::get_version}; break;
    case _IOC_NR(AMDKFD_IOC_CREATE_QUEUE): def = {AMDKFD_IOC_CREATE_QUEUE, &SimKfd::create_queue}; break;
    case _IOC_NR(AMDKFD_IOC_DESTROY_QUEUE): def = {AMDKFD_IOC_DESTROY_QUEUE, &SimKfd::destroy_queue}; break;
    case _IOC_NR(AMDKFD_IOC_GET_CLOCK_COUNTERS):
      def = {AMDKFD_IOC_GET_CLOCK_COUNTERS, &SimKfd::get_clock_counters};
      break;
    case _IOC_NR(AMDKFD_IOC_CREATE_EVENT): def = {AMDKFD_IOC_CREATE_EVENT, &SimKfd::create_event}; break;
    case _IOC_NR(AMDKFD_IOC_DESTROY_EVENT): def = {AMDKFD_IOC_DESTROY_EVENT, &SimKfd::destroy_event}; break;
    case _IOC_NR(AMDKFD_IOC_SET_EVENT): def = {AMDKFD_IOC_SET_EVENT, nullptr}; break;
    case _IOC_NR(AMDKFD_IOC_RESET_EVENT): def = {AMDKFD_IOC_RESET_EVENT, nullptr}; break;
    case _IOC_NR(AMDKFD_IOC_WAIT_EVENTS): def = {AMDKFD_IOC_WAIT_EVENTS, &SimKfd::wait_events}; break;
    case _IOC_NR(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW):
      def = {AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &SimKfd::get_apertures_new};
      break;
    case _IOC_NR(AMDKFD_IOC_ACQUIRE_VM): def = {AMDKFD_IOC_ACQUIRE_VM, &SimKfd::acquire_vm}; break;
    case _IOC_NR(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU): def = {AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &SimKfd::alloc_memory}; break;
    case _IOC_NR(AMDKFD_IOC_FREE_MEMORY_OF_GPU): def = {AMDKFD_IOC_FREE_MEMORY_OF_GPU, &SimKfd::free_memory}; break;
    case _IOC_NR(AMDKFD_IOC_MAP_MEMORY_TO_GPU): def = {AMDKFD_IOC_MAP_MEMORY_TO_GPU, nullptr}; break;
    case _IOC_NR(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU): def = {AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, nullptr}; break;
    case _IOC_NR(amd::kfd_compat::kIocRuntimeEnable):
      def = {amd::kfd_compat::kIocRuntimeEnable, &SimKfd::runtime_enable};
      break;
    default:
      // A command the kernel has but this simulator does not: refused loudly rather than faked.
      return -EINVAL;
  }
  // The kernel trusts its own definition of the command, not the caller's: it copies the caller's size in, zero
  // fills up to its own size, runs, and copies the caller's size back.
  const size_t usize = _IOC_SIZE(request), ksize = _IOC_SIZE(def.cmd);
  std::vector<std::byte> kdata(std::max(usize, ksize));
  const unsigned dir = _IOC_DIR(def.cmd);
  if ((dir & (_IOC_READ | _IOC_WRITE)) && usize > 0 && arg == nullptr) return -EFAULT;
  if (dir & _IOC_WRITE) std::memcpy(kdata.data(), arg, usize);
  int rc;
  if (nr == _IOC_NR(AMDKFD_IOC_SET_EVENT) || nr == _IOC_NR(AMDKFD_IOC_RESET_EVENT))
    rc = set_event(kdata.data(), nr == _IOC_NR(AMDKFD_IOC_SET_EVENT));
  else if (nr == _IOC_NR(AMDKFD_IOC_MAP_MEMORY_TO_GPU) || nr == _IOC_NR(AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU))
    rc = map_memory(kdata.data(), nr == _IOC_NR(AMDKFD_IOC_MAP_MEMORY_TO_GPU));
  else rc = (this->*def.fn)(kdata.data());
  // The kernel copies the result back even when the handler failed (n_success of a partial map, for one).
  if ((dir & _IOC_READ) && usize > 0) std::memcpy(arg, kdata.data(), usize);
  return rc;
}

int SimKfd::get_version(void* a) {
  auto* args = static_cast<kfd_ioctl_get_version_args*>(a);
  args->major_version = kKfdMajor;
  args->minor_version = kKfdMinor;
  return 0;
}

int SimKfd::get_clock_counters(void* a) {
  auto* args = static_cast<kfd_ioctl_get_clock_counters_args*>(a);
  std::lock_guard lock(mu_);
  args->gpu_clock_counter = gpu_by_id(args->gpu_id) ? gpu_clock() : 0;  // a node without a GPU reads 0
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  args->cpu_clock_counter = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now).count());
  args->system_clock_counter = args->cpu_clock_counter;
  args->system_clock_freq = 1000000000;
  return 0;
}

int SimKfd::runtime_enable(void* a) {
  auto* args = static_cast<amd::kfd_compat::RuntimeEnableArgs*>(a);
  std::lock_guard lock(mu_);
  if (!(args->mode_mask & amd::kfd_compat::kRuntimeEnable)) {  // disable: always fine
    runtime_enabled_ = false;
    return 0;
  }
  if (runtime_enabled_) return -EBUSY;   // "runtime enable call already pending"
  if (!queues_.empty()) return -EEXIST;  // user queues made before the runtime said it is up
  runtime_enabled_ = true;
  args->capabilities_mask = 0;
  return 0;
}

int SimKfd::acquire_vm(void* a) {
  auto* args = static_cast<kfd_ioctl_acquire_vm_args*>(a);
  std::optional<SimOs::OpenFile> drm;
  if (os_ != nullptr) drm = os_->lookup(static_cast<int>(args->drm_fd));
  std::lock_guard lock(mu_);
  Gpu* g = gpu_by_id(args->gpu_id);
  if (g == nullptr) return -EINVAL;
  // Not a descriptor, or not one of our render nodes: the kernel's fget()/amdgpu checks give EINVAL.
  if (!drm || drm->driver != this) return -EINVAL;
  auto it = files_.find(drm->file);
  if (it == files_.end() || it->second.kind != File::Kind::render) return -EINVAL;
  if (it->second.gpu_index != g->index) return -EINVAL;  // the render node of another GPU
  if (g->acquired) return g->drm_file == drm->file ? 0 : -EBUSY;
  g->acquired = true;
  g->drm_file = drm->file;
  return 0;
}

int SimKfd::get_apertures_new(void* a) {
  auto* args = static_cast<kfd_ioctl_get_process_apertures_new_args*>(a);
  std::lock_guard lock(mu_);
  const uint32_t count = static_cast<uint32_t>(gpus_.size());
  if (args->num_of_nodes == 0) {
    args->num_of_nodes = count;
    return 0;
  }
  const uint32_t n = std::min(count, args->num_of_nodes);
  if (args->kfd_process_device_apertures_ptr == 0) return -EFAULT;
  auto* out = reinterpret_cast<kfd_process_device_apertures*>(args->kfd_process_device_apertures_ptr);
  for (uint32_t i = 0; i < n; ++i) {
    kfd_process_device_apertures ap{};
    ap.lds_base = uint64_t{1} << 48;  // the GFX9+ flat apertures
    ap.lds_limit = ap.lds_base + 0xffffffffull;
    ap.scratch_base = uint64_t{2} << 48;
    ap.scratch_limit = ap.scratch_base + 0xffffffffull;
    ap.gpuvm_base = kGpuVmBase;
    ap.gpuvm_limit = kUserVaTop - 1;
    ap.gpu_id = gpus_[i]->gpu_id;
    std::memcpy(&out[i], &ap, sizeof ap);
  }
  args->num_of_nodes = n;
  return 0;
}

}  // namespace hcq::sim
