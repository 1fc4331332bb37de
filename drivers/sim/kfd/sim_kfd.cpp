// The simulated KFD driver. Validation and errnos follow the Linux amdkfd driver (kfd_chardev.c, kfd_events.c,
// kfd_queue.c, amdgpu_amdkfd_gpuvm.c); where this file is stricter than the kernel, the comment says so.
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
#include "sim/common/memfd_backing.hpp"

namespace hcq::sim {

const char* to_string(SimQueueType t) {
  switch (t) {
    case SimQueueType::compute_pm4: return "compute (PM4)";
    case SimQueueType::sdma: return "SDMA";
    case SimQueueType::compute_aql: return "compute (AQL)";
  }
  return "?";
}

namespace {

constexpr uint64_t kUserVaTop = uint64_t{1} << 47;  // TASK_SIZE: access_ok() fails at or above it
constexpr uint64_t kGpuVmBase = uint64_t{1} << 16;  // AMDGPU_VA_RESERVED_BOTTOM
constexpr uint32_t kMaxQueuePercentage = 100, kMaxQueuePriority = 15, kMinRingSize = 1024;
constexpr uint32_t kMaxQueues = 1024;  // doorbell slots in a process's slice
constexpr int kENOTSUPP = 524;         // the kernel's internal ENOTSUPP, which CREATE_QUEUE lets reach userspace
// mmap offsets of /dev/kfd (kfd_priv.h): the type in bits 62-63, the gpu_id in bits 46-61.
constexpr uint64_t kMmapTypeShift = 62, kMmapTypeDoorbell = 3, kMmapTypeEvents = 2, kMmapTypeMmio = 0;
constexpr uint64_t kMmapGpuIdShift = 46;
constexpr uint32_t kEventTimeoutInfinite = 0xffffffffu;
constexpr unsigned kCommandEnd = 0x27;  // KFD 1.13: ... RUNTIME_ENABLE 0x25, DBG_TRAP 0x26

constexpr uint32_t kAllocTypeFlags = KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_GTT |
                                     KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL |
                                     KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP;
constexpr uint32_t kAllocKnownFlags =
    kAllocTypeFlags | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE |
    KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM |
    KFD_IOC_ALLOC_MEM_FLAGS_COHERENT | KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED | (1u << 24) /* EXT_COHERENT */;

bool access_ok(uint64_t addr, uint64_t size) { return addr <= kUserVaTop && size <= kUserVaTop - addr; }

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
struct SimKfd::Bo {
  enum class Kind { vram, gtt, userptr, doorbell, mmio };
  uint64_t handle = 0;
  uint32_t gpu_id = 0;
  size_t gpu_index = 0;
  Kind kind = Kind::gtt;
  uint64_t va = 0, size = 0;  // size page aligned
  uint32_t flags = 0;
  uint64_t mmap_offset = 0;   // render-node offset (userptr: the user address)
  int fd = -1;                // backing memfd, or the GPU's doorbell/MMIO memfd (not owned) for those kinds
  bool owns_fd = false;
  std::byte* host = nullptr;  // the simulator's pointer to byte 0
  // The process's own mapping of byte 0 (its render-node mmap) while it lasts, guarded by vm_mu_. translate()
  // prefers it: the simulated GPU then reads and writes the very addresses the host uses, so the host's release
  // stores (write pointers, signals) and the engines' acquire loads pair up for ThreadSanitizer as they do in
  // hardware's coherent view; the simulator's own mapping serves only bytes the process has not mapped.
  std::byte* process_view = nullptr;
  uint64_t process_view_bytes = 0;
  std::set<uint32_t> mapped_on;  // gpu ids
  ~Bo() {
    if (owns_fd) {
      ::munmap(host, size);
      ::close(fd);
    }
  }
};

struct SimKfd::Gpu {
  const SimGpuSpec* spec = nullptr;
  const amd::Target* target = nullptr;
  size_t index = 0;
  uint32_t gpu_id = 0, node = 0, render_minor = 0;
  MemfdBacking doorbells;  // the process's doorbell slice on this GPU
  MemfdBacking mmio;       // the MMIO remap page (HDP flush registers)
  uint64_t vram_used = 0;
  bool acquired = false;
  int drm_file = -1;
  std::map<uint64_t, Bo*> vm;  // GPU VA -> buffer mapped on this GPU (vm_mu_)
  uint32_t next_idr = 0;
};

struct SimKfd::File {
  enum class Kind { kfd, render } kind;
  size_t gpu_index = 0;
};

// One WAIT_EVENTS caller's hold on one event (the kernel's kfd_event_waiter); lives on the waiting thread's stack.
struct SimKfd::Waiter {
  uint32_t event_id = 0;
  bool activated = false;  // the event fired for this waiter
  bool queued = false;     // in the event's waiter list
  bool gone = false;       // the event was destroyed while we waited
};

struct SimKfd::Event {
  uint32_t id = 0, type = 0;
  bool auto_reset = false, signaled = false;
  kfd_event_data data{};  // exception data handed to waiters
  std::vector<Waiter*> waiters;  // blocked in WAIT_EVENTS on it (mu_)
  EventCounters counters;
};

class SimKfd::Host final : public QueueHost {
 public:
  Host(SimKfd& kfd, uint32_t gpu_id, uint32_t queue_id) : kfd_(kfd), gpu_id_(gpu_id), queue_id_(queue_id) {}
  std::byte* translate(uint64_t va, uint64_t size) override { return kfd_.translate(gpu_id_, va, size); }
  uint64_t gpu_clock() override { return kfd_.gpu_clock(); }
  void interrupt(uint32_t context_id) override { kfd_.raise_interrupt(gpu_id_, context_id); }
  void fault(uint64_t address, bool is_memory_fault, const std::string& reason) override {
    kfd_.inject_fault(queue_id_, address, is_memory_fault, reason);
  }

 private:
  SimKfd& kfd_;
  uint32_t gpu_id_, queue_id_;
};

struct SimKfd::Queue {
  SimQueueDesc desc;
  size_t gpu_index = 0;
  uint32_t slot = 0;
  std::atomic<uint64_t> doorbell_writes{0}, last_doorbell{0};
  bool faulted = false;
  std::string fault_reason;
  std::unique_ptr<Host> host;
  std::unique_ptr<QueueRunner> runner;  // destroyed before host
  ~Queue() { runner.reset(); }
};

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
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::steady_clock::now().time_since_epoch()).count();
  return static_cast<uint64_t>(ns) / 10;  // 100 MHz
}

// ---------------------------------------------------------------------------------------------------------------
// Files and sysfs

namespace {
constexpr std::string_view kTopology = "/sys/devices/virtual/kfd/kfd/topology";
constexpr std::string_view kTopologyAlias = "/sys/class/kfd/kfd/topology";

// The path below the topology root ("" for the root itself), or nullopt if `path` is not in the topology.
std::optional<std::string> topology_rel(std::string_view path) {
  for (std::string_view root : {kTopology, kTopologyAlias}) {
    if (path.substr(0, root.size()) != root) continue;
    std::string_view rest = path.substr(root.size());
    while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    if (rest.empty()) return std::string();
    if (rest.front() != '/') continue;
    return std::string(rest.substr(1));
  }
  return std::nullopt;
}

bool parse_uint(std::string_view s, uint32_t& out) {
  if (s.empty() || s.size() > 9) return false;
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<uint32_t>(c - '0');
  }
  return true;
}
}  // namespace

bool SimKfd::handles_path(std::string_view path) const {
  if (path == "/dev/kfd" || topology_rel(path)) return true;
  constexpr std::string_view render = "/dev/dri/renderD";
  uint32_t minor = 0;
  if (path.substr(0, render.size()) != render || !parse_uint(path.substr(render.size()), minor)) return false;
  for (const auto& g : gpus_)
    if (g->render_minor == minor) return true;
  return false;
}

int SimKfd::open(const std::string& path, int /*flags*/) {
  File f{File::Kind::kfd, 0};
  if (path != "/dev/kfd") {
    constexpr std::string_view render = "/dev/dri/renderD";
    uint32_t minor = 0;
    if (std::string_view(path).substr(0, render.size()) != render ||
        !parse_uint(std::string_view(path).substr(render.size()), minor))
      return -ENOENT;  // sysfs files are read with read_file, not opened
    Gpu* g = gpu_by_minor(minor);
    if (g == nullptr) return -ENOENT;
    f = File{File::Kind::render, g->index};
  }
  std::lock_guard lock(mu_);
  const int id = next_file_++;
  files_.emplace(id, f);
  return id;
}

void SimKfd::close(int file) {
  std::vector<std::shared_ptr<Queue>> dying;
  {
    std::lock_guard lock(mu_);
    auto it = files_.find(file);
    if (it == files_.end()) return;
    const bool was_kfd = it->second.kind == File::Kind::kfd;
    files_.erase(it);
    // The KFD process goes away with the last /dev/kfd descriptor (the kernel keeps it until the address space
    // goes; a simulator that outlives many devices in one process must not).
    const bool any_kfd = std::any_of(files_.begin(), files_.end(),
                                     [](const auto& kv) { return kv.second.kind == File::Kind::kfd; });
    if (was_kfd && !any_kfd) teardown_process_locked(dying);
  }
}

std::optional<std::string> SimKfd::read_file(const std::string& path) {
  const std::optional<std::string> rel = topology_rel(path);
  if (!rel) return std::nullopt;
  if (*rel == "generation_id") return "1\n";
  if (*rel == "system_properties") return "platform_oem 0\nplatform_id 0\nplatform_rev 0\n";
  // nodes/<n>/<file>
  constexpr std::string_view nodes = "nodes/";
  if (rel->rfind(nodes, 0) != 0) return std::nullopt;
  const std::string_view rest = std::string_view(*rel).substr(nodes.size());
  const size_t slash = rest.find('/');
  uint32_t node = 0;
  if (slash == std::string_view::npos || !parse_uint(rest.substr(0, slash), node)) return std::nullopt;
  const std::string_view file = rest.substr(slash + 1);
  if (node == 0) {  // the CPU node
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    if (file == "gpu_id") return "0\n";
    if (file == "name") return "\n";
    if (file == "properties")
      return cat("cpu_cores_count ", cores, "\nsimd_count 0\nmem_banks_count 1\ncaches_count 0\nio_links_count ",
                 gpus_.size(), "\np2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base 0\nmax_waves_per_simd 0\n",
                 "lds_size_in_kb 0\ngds_size_in_kb 0\nnum_gws 0\nwave_front_size 0\narray_count 0\n",
                 "simd_arrays_per_engine 0\ncu_per_simd_array 0\nsimd_per_cu 0\nmax_slots_scratch_cu 0\n",
                 "gfx_target_version 0\nvendor_id 0\ndevice_id 0\nlocation_id 0\ndomain 0\ndrm_render_minor 0\n",
                 "hive_id 0\nnum_sdma_engines 0\nnum_sdma_xgmi_engines 0\nnum_sdma_queues_per_engine 0\n",
                 "num_cp_queues 0\nmax_engine_clk_ccompute 3000\n");
    return std::nullopt;
  }
  if (node > gpus_.size()) return std::nullopt;
  const Gpu& g = *gpus_[node - 1];
  const SimGpuSpec& s = *g.spec;
  if (file == "gpu_id") return cat(g.gpu_id, "\n");
  if (file == "name") return cat(s.gfx, "\n");
  if (file == "mem_banks/0/properties")
    return cat("heap_type 1\nsize_in_bytes ", s.vram_bytes, "\nflags 0\nwidth 4096\nmem_clk_max 1300\n");
  if (file != "properties") return std::nullopt;
  // local_mem_size reads 0 on current kernels (the size is in mem_banks); capability bits as the parts report.
  return cat("cpu_cores_count 0\nsimd_count ", s.simd_count, "\nmem_banks_count 1\ncaches_count 0\n",
             "io_links_count 1\np2p_links_count 0\ncpu_core_id_base 0\nsimd_id_base ", 2147487744u + 4096 * g.index,
             "\nmax_waves_per_simd ", s.max_waves_per_simd, "\nlds_size_in_kb ", s.lds_size_in_kb,
             "\ngds_size_in_kb 0\nnum_gws 64\nwave_front_size ", s.wave_front_size, "\narray_count ", s.array_count,
             "\nsimd_arrays_per_engine ", s.simd_arrays_per_engine, "\ncu_per_simd_array ", s.cu_per_simd_array,
             "\nsimd_per_cu ", s.simd_per_cu, "\nmax_slots_scratch_cu 32\ngfx_target_version ",
             s.gfx_target_version, "\nvendor_id 4098\ndevice_id ", s.device_id, "\nlocation_id ", 768 + 256 * g.index,
             "\ndomain 0\ndrm_render_minor ", g.render_minor, "\nhive_id 0\nnum_sdma_engines ", s.num_sdma_engines,
             "\nnum_sdma_xgmi_engines ", s.num_sdma_xgmi_engines, "\nnum_sdma_queues_per_engine ",
             s.num_sdma_queues_per_engine, "\nnum_cp_queues ", s.num_cp_queues, "\nmax_engine_clk_fcompute ",
             s.max_engine_clk_fcompute, "\nlocal_mem_size 0\nfw_version ", s.fw_version,
             "\ncapability 671588992\ndebug_prop 1495\nsdma_fw_version ", s.sdma_fw_version,
             "\nunique_id ", 0x5a17000000000000ull + g.gpu_id, "\nnum_xcc ", s.num_xcc,
             "\nmax_engine_clk_ccompute 3000\n");
}

std::vector<std::string> SimKfd::list_dir(const std::string& path) {
  const std::optional<std::string> rel = topology_rel(path);
  if (!rel) return {};
  if (rel->empty()) return {"generation_id", "nodes", "system_properties"};
  if (*rel == "nodes") {
    std::vector<std::string> v{"0"};
    for (const auto& g : gpus_) v.push_back(std::to_string(g->node));
    std::sort(v.begin(), v.end());
    return v;
  }
  constexpr std::string_view nodes = "nodes/";
  if (rel->rfind(nodes, 0) != 0) return {};
  const std::string_view rest = std::string_view(*rel).substr(nodes.size());
  const size_t slash = rest.find('/');
  uint32_t node = 0;
  if (!parse_uint(rest.substr(0, slash), node) || node > gpus_.size()) return {};
  const std::string_view sub = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  if (sub.empty()) return {"gpu_id", "io_links", "mem_banks", "name", "properties"};
  if (sub == "mem_banks") return {"0"};
  if (sub == "mem_banks/0") return {"properties"};
  return {};
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
    case _IOC_NR(AMDKFD_IOC_SET_EVENT):
      def = {AMDKFD_IOC_SET_EVENT, nullptr};
      break;
    case _IOC_NR(AMDKFD_IOC_RESET_EVENT):
      def = {AMDKFD_IOC_RESET_EVENT, nullptr};
      break;
    case _IOC_NR(AMDKFD_IOC_WAIT_EVENTS): def = {AMDKFD_IOC_WAIT_EVENTS, &SimKfd::wait_events}; break;
    case _IOC_NR(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW):
      def = {AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &SimKfd::get_apertures_new};
      break;
    case _IOC_NR(AMDKFD_IOC_ACQUIRE_VM): def = {AMDKFD_IOC_ACQUIRE_VM, &SimKfd::acquire_vm}; break;
    case _IOC_NR(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU):
      def = {AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &SimKfd::alloc_memory};
      break;
    case _IOC_NR(AMDKFD_IOC_FREE_MEMORY_OF_GPU):
      def = {AMDKFD_IOC_FREE_MEMORY_OF_GPU, &SimKfd::free_memory};
      break;
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
  else
    rc = (this->*def.fn)(kdata.data());
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
  if (runtime_enabled_) return -EBUSY;    // "runtime enable call already pending"
  if (!queues_.empty()) return -EEXIST;   // user queues made before the runtime said it is up
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

// ---------------------------------------------------------------------------------------------------------------
// Memory

int SimKfd::alloc_memory(void* a) {
  auto* args = static_cast<kfd_ioctl_alloc_memory_of_gpu_args*>(a);
  std::lock_guard lock(mu_);
  Gpu* g = gpu_by_id(args->gpu_id);
  if (g == nullptr) return -EINVAL;
  if (!g->acquired) return -ENODEV;  // kfd_bind_process_to_device: no VM acquired yet
  // Stricter than the kernel, which ignores bits it does not know.
  if (args->flags & ~kAllocKnownFlags) return -EINVAL;
  if (args->size == 0) return -EINVAL;
  const uint64_t size = align_up(args->size, kPage);
  if (size < args->size) return -EINVAL;  // overflow
  if (args->va_addr % kPage != 0 || args->va_addr < kGpuVmBase || args->va_addr >= kUserVaTop ||
      size > kUserVaTop - args->va_addr)
    return -EINVAL;  // amdgpu_vm_bo_map: unaligned or outside the GPUVM aperture

  auto bo = std::make_shared<Bo>();
  bo->gpu_id = g->gpu_id;
  bo->gpu_index = g->index;
  bo->va = args->va_addr;
  bo->size = size;
  bo->flags = args->flags;
  // The first memory type bit wins, as in amdgpu_amdkfd_gpuvm_alloc_memory_of_gpu.
  const uint32_t f = args->flags;
  if (f & KFD_IOC_ALLOC_MEM_FLAGS_VRAM) {
    if (g->vram_used + size > g->spec->vram_bytes) return -ENOMEM;
    bo->kind = Bo::Kind::vram;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_GTT) {
    bo->kind = Bo::Kind::gtt;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_USERPTR) {
    const uint64_t user = args->mmap_offset;
    if (user == 0 || user % kPage != 0 || !access_ok(user, size)) return -EINVAL;
    bo->kind = Bo::Kind::userptr;
    bo->host = reinterpret_cast<std::byte*>(user);
    bo->mmap_offset = user;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL) {
    if (args->size != kDoorbellSliceBytes) return -EINVAL;
    bo->kind = Bo::Kind::doorbell;
    bo->fd = g->doorbells.fd;
    bo->host = g->doorbells.host;
  } else if (f & KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP) {
    if (args->size != kPage) return -EINVAL;
    bo->kind = Bo::Kind::mmio;
    bo->fd = g->mmio.fd;
    bo->host = g->mmio.host;
  } else {
    return -EINVAL;  // no memory type
  }
  if (bo->kind == Bo::Kind::vram || bo->kind == Bo::Kind::gtt) {
    auto b = MemfdBacking::make(bo->kind == Bo::Kind::vram ? "hcq-sim-vram" : "hcq-sim-gtt", size);
    if (!b) return -ENOMEM;
    bo->fd = b->fd;
    bo->host = b->host;
    bo->owns_fd = true;
    if (bo->kind == Bo::Kind::vram) g->vram_used += size;
  }
  if (bo->kind != Bo::Kind::userptr) {
    bo->mmap_offset = next_mmap_offset_;
    next_mmap_offset_ += size;
  }
  bo->handle = (uint64_t{g->gpu_id} << 32) | g->next_idr++;
  args->handle = bo->handle;
  args->mmap_offset = bo->mmap_offset;
  bos_.emplace(bo->handle, std::move(bo));
  return 0;
}

int SimKfd::free_memory(void* a) {
  auto* args = static_cast<kfd_ioctl_free_memory_of_gpu_args*>(a);
  std::lock_guard lock(mu_);
  if (gpu_by_id(static_cast<uint32_t>(args->handle >> 32)) == nullptr) return -EINVAL;
  auto it = bos_.find(args->handle);
  if (it == bos_.end()) return -EINVAL;
  Bo& bo = *it->second;
  if (!bo.mapped_on.empty()) return -EBUSY;  // "BO VA ... is still mapped"
  if (bo.kind == Bo::Kind::vram) gpus_[bo.gpu_index]->vram_used -= bo.size;
  bos_.erase(it);  // the event page keeps its buffer alive through event_page_bo_, as the kernel's reference does
  return 0;
}

bool SimKfd::range_mapped(const Gpu& g, uint64_t va, uint64_t size) const {
  if (size == 0 || va + size < va) return false;
  auto it = g.vm.upper_bound(va);
  if (it == g.vm.begin()) return false;
  --it;
  const Bo& bo = *it->second;
  return va >= bo.va && va + size <= bo.va + bo.size;
}

int SimKfd::map_memory(void* a, bool map) {
  auto* args = static_cast<kfd_ioctl_map_memory_to_gpu_args*>(a);  // unmap args have the same layout
  static_assert(sizeof(kfd_ioctl_map_memory_to_gpu_args) == sizeof(kfd_ioctl_unmap_memory_from_gpu_args));
  if (args->n_devices == 0) return -EINVAL;
  if (args->n_success > args->n_devices) return -EINVAL;
  if (args->n_devices > 65536) return -ENOMEM;  // the kernel's kmalloc_array of the id list fails first
  if (args->device_ids_array_ptr == 0) return -EFAULT;
  std::vector<uint32_t> ids(args->n_devices);
  std::memcpy(ids.data(), reinterpret_cast<const void*>(args->device_ids_array_ptr), ids.size() * 4);

  std::lock_guard lock(mu_);
  if (gpu_by_id(static_cast<uint32_t>(args->handle >> 32)) == nullptr) return -EINVAL;
  std::shared_ptr<Bo> bo = bo_by_handle(args->handle);
  if (!bo) return -EINVAL;
  for (uint32_t i = args->n_success; i < args->n_devices; ++i) {
    Gpu* g = gpu_by_id(ids[i]);
    if (g == nullptr) return -EINVAL;
    if (!g->acquired) return -ENODEV;
    std::unique_lock vm(vm_mu_);
    const bool mapped = bo->mapped_on.count(g->gpu_id) != 0;
    if (map) {
      if (!mapped) {
        // amdgpu_vm_bo_map: a range that overlaps another mapping on this VM is refused.
        auto next = g->vm.lower_bound(bo->va);
        if (next != g->vm.end() && next->first < bo->va + bo->size) return -EINVAL;
        if (next != g->vm.begin()) {
          auto prev = std::prev(next);
          if (prev->second->va + prev->second->size > bo->va) return -EINVAL;
        }
        g->vm.emplace(bo->va, bo.get());
        bo->mapped_on.insert(g->gpu_id);
      }
    } else {
      if (!mapped) return -EINVAL;  // "BO VA ... is not mapped to vm"
      g->vm.erase(bo->va);
      bo->mapped_on.erase(g->gpu_id);
    }
    args->n_success = i + 1;
  }
  return 0;
}

std::byte* SimKfd::translate(uint32_t gpu_id, uint64_t va, uint64_t size) {
  std::shared_lock vm(vm_mu_);
  const Gpu* g = nullptr;
  for (const auto& x : gpus_)
    if (x->gpu_id == gpu_id) g = x.get();
  if (g == nullptr || !range_mapped(*g, va, size)) return nullptr;
  const Bo& bo = *std::prev(g->vm.upper_bound(va))->second;
  if (bo.process_view != nullptr && va + size <= bo.va + bo.process_view_bytes) return bo.process_view + (va - bo.va);
  return bo.host + (va - bo.va);
}

void* SimKfd::mmap(int file, void* addr, size_t length, int prot, int flags, off_t offset, int* err) {
  const uint64_t off = static_cast<uint64_t>(offset);
  if (off % kPage != 0 || length == 0) {
    *err = EINVAL;
    return MAP_FAILED;
  }
  std::unique_lock lock(mu_);
  auto fit = files_.find(file);
  if (fit == files_.end()) {
    *err = EBADF;
    return MAP_FAILED;
  }
  const File f = fit->second;
  int fd = -1;
  off_t fd_offset = 0;
  bool doorbell = false;
  size_t doorbell_gpu = 0;
  Bo* viewed = nullptr;  // a buffer the process now maps (its byte 0 at the returned address)
  if (f.kind == File::Kind::render) {
    // A buffer's render-node offset, exactly (drm_gem_mmap looks the offset up exactly); no larger than the buffer.
    Bo* found = nullptr;
    for (const auto& [h, bo] : bos_)
      if (bo->kind != Bo::Kind::userptr && bo->gpu_index == f.gpu_index && bo->mmap_offset == off) found = bo.get();
    viewed = found;
    if (found == nullptr || length > found->size) {
      *err = EINVAL;
      return MAP_FAILED;
    }
    fd = found->fd;
    doorbell = found->kind == Bo::Kind::doorbell;
    doorbell_gpu = found->gpu_index;
  } else {
    const uint64_t type = off >> kMmapTypeShift;
    const uint32_t gpu_id = static_cast<uint32_t>((off >> kMmapGpuIdShift) & 0xffff);
    if (type == kMmapTypeDoorbell || type == kMmapTypeMmio) {
      Gpu* g = gpu_by_id(gpu_id);
      const uint64_t want = type == kMmapTypeDoorbell ? kDoorbellSliceBytes : kPage;
      if (g == nullptr || length != want) {
        *err = EINVAL;
        return MAP_FAILED;
      }
      fd = type == kMmapTypeDoorbell ? g->doorbells.fd : g->mmio.fd;
      doorbell = type == kMmapTypeDoorbell;
      doorbell_gpu = g->index;
    } else if (type == kMmapTypeEvents) {
      // The event page: its size must round to the same page order as KFD_SIGNAL_EVENT_LIMIT slots.
      const uint64_t pages_bytes = align_up(length, kPage);
      if (!event_page_bo_ || pages_bytes <= kEventPageBytes / 2 || pages_bytes > kEventPageBytes) {
        *err = EINVAL;
        return MAP_FAILED;
      }
      fd = event_page_bo_->fd;
      fd_offset = 0;
    } else {
      *err = EFAULT;
      return MAP_FAILED;
    }
  }
  void* p = ::mmap(addr, length, prot, (flags & ~MAP_ANONYMOUS & ~MAP_PRIVATE) | MAP_SHARED, fd, fd_offset);
  if (p == MAP_FAILED) {
    *err = errno;
    return MAP_FAILED;
  }
  {
    std::unique_lock vm(vm_mu_);
    forget_process_views(p, length);  // a mapping over an older one replaces it
    if (viewed != nullptr) {
      viewed->process_view = static_cast<std::byte*>(p);
      viewed->process_view_bytes = length;
    }
  }
  lock.unlock();
  if (doorbell) {
    std::unique_lock dl(doorbell_mu_);
    doorbell_maps_[reinterpret_cast<uintptr_t>(p)] = doorbell_gpu;
  }
  return p;
}

void SimKfd::forget_process_views(void* addr, size_t length) {
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  for (const auto& [h, bo] : bos_) {
    const auto view = reinterpret_cast<uintptr_t>(bo->process_view);
    if (bo->process_view != nullptr && view < lo + length && lo < view + bo->process_view_bytes) {
      bo->process_view = nullptr;  // even a partial unmap: the simulator's own mapping serves it from now on
      bo->process_view_bytes = 0;
    }
  }
}

void SimKfd::on_munmap(void* addr, size_t length) {
  {
    std::lock_guard lock(mu_);
    std::unique_lock vm(vm_mu_);
    forget_process_views(addr, length);
  }
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  std::unique_lock dl(doorbell_mu_);
  for (auto it = doorbell_maps_.lower_bound(lo); it != doorbell_maps_.end() && it->first < lo + length;)
    it = doorbell_maps_.erase(it);
}

// ---------------------------------------------------------------------------------------------------------------
// Queues

int SimKfd::create_queue(void* a) {
  auto* args = static_cast<kfd_ioctl_create_queue_args*>(a);
  // set_queue_properties_from_user
  if (args->queue_percentage > kMaxQueuePercentage) return -EINVAL;
  if (args->queue_priority > kMaxQueuePriority) return -EINVAL;
  if (args->ring_base_address && !access_ok(args->ring_base_address, args->ring_size)) return -EFAULT;
  if (args->ring_size != 0 && !std::has_single_bit(args->ring_size)) return -EINVAL;
  if (!access_ok(args->read_pointer_address, 4) || !access_ok(args->write_pointer_address, 4)) return -EFAULT;
  if (args->eop_buffer_address && !access_ok(args->eop_buffer_address, args->eop_buffer_size)) return -EFAULT;
  if (args->ctx_save_restore_address && !access_ok(args->ctx_save_restore_address, args->ctx_save_restore_size))
    return -EFAULT;
  SimQueueType type;
  switch (args->queue_type) {
    case KFD_IOC_QUEUE_TYPE_COMPUTE: type = SimQueueType::compute_pm4; break;
    case KFD_IOC_QUEUE_TYPE_SDMA:
    case KFD_IOC_QUEUE_TYPE_SDMA_XGMI: type = SimQueueType::sdma; break;
    case KFD_IOC_QUEUE_TYPE_COMPUTE_AQL: type = SimQueueType::compute_aql; break;
    default: return -kENOTSUPP;
  }
  const uint32_t ring_size = std::max(args->ring_size, kMinRingSize);

  std::lock_guard lock(mu_);
  Gpu* g = gpu_by_id(args->gpu_id);
  if (g == nullptr) return -EINVAL;
  if (!g->acquired) return -ESRCH;  // kfd_bind_process_to_device failed
  {
    // kfd_queue_acquire_buffers: what the queue points at must lie in memory mapped on this GPU.
    std::shared_lock vm(vm_mu_);
    if (!range_mapped(*g, args->ring_base_address, ring_size)) return -EINVAL;
    if (!range_mapped(*g, args->read_pointer_address, 8) || !range_mapped(*g, args->write_pointer_address, 8))
      return -EINVAL;
    if (type != SimQueueType::sdma) {
      if (args->eop_buffer_address && !range_mapped(*g, args->eop_buffer_address, args->eop_buffer_size))
        return -EINVAL;
      if (args->ctx_save_restore_address &&
          !range_mapped(*g, args->ctx_save_restore_address, args->ctx_save_restore_size))
        return -EINVAL;
    }
  }
  // Lowest free queue id and doorbell slot of this GPU.
  uint32_t qid = 0;
  while (queues_.count(qid)) ++qid;
  std::vector<bool> used(kMaxQueues);
  for (const auto& [id, q] : queues_)
    if (q->gpu_index == g->index) used[q->slot] = true;
  uint32_t slot = 0;
  while (slot < kMaxQueues && used[slot]) ++slot;
  if (slot == kMaxQueues || qid >= kMaxQueues * gpus_.size()) return -ENOMEM;

  auto q = std::make_shared<Queue>();
  q->gpu_index = g->index;
  q->slot = slot;
  SimQueueDesc& d = q->desc;
  d.queue_id = qid;
  d.gpu_id = g->gpu_id;
  d.target = g->target;
  d.num_xcc = g->spec->num_xcc;
  d.type = type;
  d.ring_va = args->ring_base_address;
  d.ring_size = ring_size;
  d.rptr_va = args->read_pointer_address;
  d.wptr_va = args->write_pointer_address;
  d.doorbell_offset = uint64_t{slot} * 8;
  d.eop_va = args->eop_buffer_address;
  d.eop_size = args->eop_buffer_size;
  d.ctx_save_va = args->ctx_save_restore_address;
  d.ctx_save_size = args->ctx_save_restore_size;
  d.queue_percentage = args->queue_percentage;
  d.queue_priority = args->queue_priority;
  q->host = std::make_unique<Host>(*this, g->gpu_id, qid);
  // The factory must not call back into the host while constructing (the process lock is held here).
  if (factory_) q->runner = factory_(d, *q->host);
  queues_.emplace(qid, q);

  args->queue_id = qid;
  args->doorbell_offset = (kMmapTypeDoorbell << kMmapTypeShift) | (uint64_t{g->gpu_id} << kMmapGpuIdShift) |
                          d.doorbell_offset;
  return 0;
}

int SimKfd::destroy_queue(void* a) {
  auto* args = static_cast<kfd_ioctl_destroy_queue_args*>(a);
  std::shared_ptr<Queue> dying;
  {
    std::lock_guard lock(mu_);
    auto it = queues_.find(args->queue_id);
    if (it == queues_.end()) return -EINVAL;
    dying = std::move(it->second);
    queues_.erase(it);
  }
  dying.reset();  // stops the runner outside the lock
  return 0;
}

bool SimKfd::write_doorbell(volatile void* where, uint64_t value, unsigned bytes) {
  const auto addr = reinterpret_cast<uintptr_t>(where);
  size_t gpu_index = 0;
  uint64_t offset = 0;
  {
    std::shared_lock dl(doorbell_mu_);
    auto it = doorbell_maps_.upper_bound(addr);
    if (it == doorbell_maps_.begin()) return false;
    --it;
    if (addr - it->first >= kDoorbellSliceBytes) return false;
    gpu_index = it->second;
    offset = addr - it->first;
  }
  if (bytes == 8)
    *static_cast<volatile uint64_t*>(where) = value;
  else
    *static_cast<volatile uint32_t*>(where) = static_cast<uint32_t>(value);
  std::shared_ptr<Queue> q;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, x] : queues_)
      if (x->gpu_index == gpu_index && x->desc.doorbell_offset == (offset & ~uint64_t{7})) q = x;
  }
  if (!q) return true;  // a doorbell no queue owns: the store lands, nothing listens (as on hardware)
  q->doorbell_writes.fetch_add(1);
  q->last_doorbell.store(value);
  if (q->runner) q->runner->doorbell(value);
  return true;
}

std::optional<SimKfd::QueueState> SimKfd::queue_state(uint32_t queue_id) const {
  std::lock_guard lock(mu_);
  auto it = queues_.find(queue_id);
  if (it == queues_.end()) return std::nullopt;
  const Queue& q = *it->second;
  return QueueState{q.desc, q.doorbell_writes.load(), q.last_doorbell.load(), q.faulted, q.fault_reason};
}

std::vector<uint32_t> SimKfd::queue_ids() const {
  std::lock_guard lock(mu_);
  std::vector<uint32_t> ids;
  for (const auto& [id, q] : queues_) ids.push_back(id);
  return ids;
}

// ---------------------------------------------------------------------------------------------------------------
// Events

int SimKfd::create_event(void* a) {
  auto* args = static_cast<kfd_ioctl_create_event_args*>(a);
  std::lock_guard lock(mu_);
  if (args->event_page_offset) {
    // The process hands its own buffer as the event page (by handle).
    if (event_page_bo_) return -EINVAL;  // "Event page is already set"
    if (gpu_by_id(static_cast<uint32_t>(args->event_page_offset >> 32)) == nullptr) return -EINVAL;
    std::shared_ptr<Bo> bo = bo_by_handle(args->event_page_offset);
    if (!bo || bo->kind == Bo::Kind::userptr || bo->kind == Bo::Kind::doorbell || bo->kind == Bo::Kind::mmio)
      return -EINVAL;
    if (bo->size < kEventPageBytes) return -EINVAL;  // "Event page is too small"
    event_page_bo_ = bo;
    event_page_ = reinterpret_cast<uint64_t*>(bo->host);
    std::memset(event_page_, 0xff, kEventPageBytes);  // every slot unsignaled
  }
  if (args->event_type > KFD_IOC_EVENT_MEMORY) return -EINVAL;  // stricter: the kernel files these as "other"
  Event e;
  e.type = args->event_type;
  e.auto_reset = args->auto_reset != 0;
  if (e.type == KFD_IOC_EVENT_SIGNAL || e.type == KFD_IOC_EVENT_DEBUG_EVENT) {
    uint32_t id = 0;
    while (id < 4096 && events_.count(id)) ++id;
    if (id == 4096) return -ENOSPC;
    if (!event_page_bo_) {
      // No page given: the kernel allocates one, which the process maps through /dev/kfd.
      auto bo = std::make_shared<Bo>();
      auto b = MemfdBacking::make("hcq-sim-events", kEventPageBytes);
      if (!b) return -ENOMEM;
      bo->fd = b->fd;
      bo->host = b->host;
      bo->size = kEventPageBytes;
      bo->owns_fd = true;
      event_page_bo_ = bo;
      event_page_ = reinterpret_cast<uint64_t*>(bo->host);
      std::memset(event_page_, 0xff, kEventPageBytes);
      args->event_page_offset = kMmapTypeEvents << kMmapTypeShift;
    }
    e.id = id;
    event_page_[id] = kUnsignaledSlot;
    args->event_trigger_data = id;
    args->event_slot_index = id;
  } else {
    e.id = next_nonsignal_event_++;
  }
  args->event_id = e.id;
  events_.emplace(e.id, e);
  return 0;
}

int SimKfd::destroy_event(void* a) {
  auto* args = static_cast<kfd_ioctl_destroy_event_args*>(a);
  std::lock_guard lock(mu_);
  auto it = events_.find(args->event_id);
  if (it == events_.end()) return -EINVAL;
  forget_waiters_locked(it->second);
  events_.erase(it);
  return 0;
}

void SimKfd::forget_waiters_locked(Event& e) {
  for (Waiter* w : e.waiters) {
    w->gone = true;
    w->queued = false;
  }
  e.waiters.clear();
  events_cv_.notify_all();
}

int SimKfd::set_event(void* a, bool set) {
  const uint32_t id = static_cast<kfd_ioctl_set_event_args*>(a)->event_id;  // reset args: same layout
  std::lock_guard lock(mu_);
  auto it = events_.find(id);
  // Only signal events can be signaled (or reset) from the CPU.
  if (it == events_.end() || it->second.type != KFD_IOC_EVENT_SIGNAL) return -EINVAL;
  if (set)
    signal_event_locked(it->second);
  else
    it->second.signaled = false;
  return 0;
}

void SimKfd::signal_event_locked(Event& e, bool by_interrupt) {
  // The kernel's set_event(): every waiter on the list is activated and woken; an auto-reset event stays set only
  // when no one was waiting (the next WAIT_EVENTS then takes it at once).
  e.signaled = !e.auto_reset || e.waiters.empty();
  if (by_interrupt) ++e.counters.interrupts;
  for (Waiter* w : e.waiters) {
    if (by_interrupt && !w->activated) ++e.counters.woken_by_interrupt;
    w->activated = true;
  }
  events_cv_.notify_all();
}

int SimKfd::wait_events(void* a) {
  auto* args = static_cast<kfd_ioctl_wait_events_args*>(a);
  if (args->num_events == 0) return -EINVAL;
  if (args->num_events > 4096 * 2) return -ENOMEM;
  if (args->events_ptr == 0) return -EFAULT;
  auto* user = reinterpret_cast<kfd_event_data*>(args->events_ptr);
  std::vector<kfd_event_data> evs(args->num_events);
  std::memcpy(evs.data(), user, evs.size() * sizeof(kfd_event_data));

  std::unique_lock lock(mu_);
  // kfd_wait_on_events: one waiter per event, in order. A waiter takes an event that is already set (resetting an
  // auto-reset one); otherwise it joins the event's list. An unknown id fails the call (events taken so far stay
  // taken, as in the kernel).
  std::vector<Waiter> ws(evs.size());
  auto leave = [&] {
    for (Waiter& w : ws) {
      if (!w.queued) continue;
      std::vector<Waiter*>& list = events_.at(w.event_id).waiters;
      list.erase(std::find(list.begin(), list.end(), &w));
      w.queued = false;
    }
  };
  for (size_t i = 0; i < evs.size(); ++i) {
    auto it = events_.find(evs[i].event_id);
    if (it == events_.end()) {
      leave();
      return -EINVAL;
    }
    Event& e = it->second;
    ++e.counters.waits;
    ws[i].event_id = e.id;
    ws[i].activated = e.signaled;
    if (e.auto_reset) e.signaled = false;
    if (!ws[i].activated) {
      e.waiters.push_back(&ws[i]);
      ws[i].queued = true;
    }
  }
  // test_event_condition: FAIL once an event is destroyed under us; COMPLETE when any (all) fired.
  auto condition = [&] {
    size_t fired = 0;
    for (const Waiter& w : ws) {
      if (w.gone) return static_cast<uint32_t>(KFD_IOC_WAIT_RESULT_FAIL);
      if (w.activated) ++fired;
    }
    const bool done = args->wait_for_all ? fired == ws.size() : fired > 0;
    return static_cast<uint32_t>(done ? KFD_IOC_WAIT_RESULT_COMPLETE : KFD_IOC_WAIT_RESULT_TIMEOUT);
  };
  auto settled = [&] { return condition() != KFD_IOC_WAIT_RESULT_TIMEOUT; };
  if (!settled() && args->timeout != 0) {  // a zero timeout is a poll
    if (args->timeout == kEventTimeoutInfinite)
      events_cv_.wait(lock, settled);
    else
      events_cv_.wait_for(lock, std::chrono::milliseconds(args->timeout), settled);
  }
  const uint32_t result = condition();
  leave();
  args->wait_result = result;
  if (result == KFD_IOC_WAIT_RESULT_FAIL) return -EIO;
  if (result == KFD_IOC_WAIT_RESULT_COMPLETE) {
    // copy_signaled_event_data: the exception data of the events that fired for this waiter.
    for (size_t i = 0; i < evs.size(); ++i) {
      if (!ws[i].activated) continue;
      const Event& e = events_.at(ws[i].event_id);
      if (e.type == KFD_IOC_EVENT_MEMORY) evs[i].memory_exception_data = e.data.memory_exception_data;
      if (e.type == KFD_IOC_EVENT_HW_EXCEPTION) evs[i].hw_exception_data = e.data.hw_exception_data;
    }
    lock.unlock();
    std::memcpy(user, evs.data(), evs.size() * sizeof(kfd_event_data));
  }
  return 0;
}

void SimKfd::raise_interrupt(uint32_t /*gpu_id*/, uint32_t context_id) {
  std::lock_guard lock(mu_);
  if (event_page_ == nullptr) return;  // no signal event yet: nothing an interrupt could name
  // kfd_signal_event_interrupt: the event the context id names, if the GPU wrote its slot; otherwise (an id that
  // names nothing, or a slot not written) every signal event whose slot was written. Each slot found written is
  // acknowledged (set back to unsignaled) before its event is set.
  constexpr uint32_t kSlots = kEventPageBytes / 8;
  auto fire = [&](Event& e) {
    if (e.type != KFD_IOC_EVENT_SIGNAL && e.type != KFD_IOC_EVENT_DEBUG_EVENT) return false;
    if (e.id >= kSlots) return false;
    // The GPU stores the slot from its own thread (the engines store atomically); so do we.
    std::atomic_ref<uint64_t> slot(event_page_[e.id]);
    if (slot.load(std::memory_order_acquire) == kUnsignaledSlot) return false;
    slot.store(kUnsignaledSlot, std::memory_order_relaxed);
    signal_event_locked(e, true);
    return true;
  };
  if (auto it = events_.find(context_id); it != events_.end() && fire(it->second)) return;
  for (auto& [id, e] : events_) fire(e);
}

std::optional<SimKfd::EventCounters> SimKfd::event_counters(uint32_t event_id) const {
  std::lock_guard lock(mu_);
  auto it = events_.find(event_id);
  if (it == events_.end()) return std::nullopt;
  return it->second.counters;
}

void SimKfd::fire_exception_events(uint32_t type, uint32_t gpu_id, uint64_t va) {
  for (auto& [id, e] : events_) {
    if (e.type != type) continue;
    e.data = kfd_event_data{};
    if (type == KFD_IOC_EVENT_MEMORY) {
      e.data.memory_exception_data.gpu_id = gpu_id;
      e.data.memory_exception_data.va = va;
      e.data.memory_exception_data.failure.NotPresent = 1;
    } else {
      e.data.hw_exception_data.gpu_id = gpu_id;
      e.data.hw_exception_data.reset_type = KFD_HW_EXCEPTION_PER_ENGINE_RESET;
      e.data.hw_exception_data.reset_cause = KFD_HW_EXCEPTION_GPU_HANG;
    }
    signal_event_locked(e);
  }
}

void SimKfd::inject_fault(uint32_t queue_id, uint64_t address, bool memory_fault, const std::string& reason) {
  std::lock_guard lock(mu_);
  auto it = queues_.find(queue_id);
  if (it == queues_.end()) return;
  Queue& q = *it->second;
  if (!q.faulted) {
    q.faulted = true;
    q.fault_reason = reason;
  }
  fire_exception_events(memory_fault ? KFD_IOC_EVENT_MEMORY : KFD_IOC_EVENT_HW_EXCEPTION, q.desc.gpu_id, address);
}

}  // namespace hcq::sim
