// KFD bring-up, memory and queues. Facts from the amdkfd uAPI (<linux/kfd_ioctl.h>) and the ROCt thunk's usage.
#include "amd/kfd/kfd.hpp"

#include <fcntl.h>
#include <linux/kfd_ioctl.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "amd/aql_facts.hpp"
#include "amd/kfd/compat/kfd_runtime_enable.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "hcq/memory.hpp"

namespace hcq::amd {
namespace {

constexpr const char* kTopologyNodes = "/sys/devices/virtual/kfd/kfd/topology/nodes";
constexpr uint64_t kPage = 4096;
constexpr uint64_t kEventPageBytes = 4096 * 8;  // KFD_SIGNAL_EVENT_LIMIT slots of 8 bytes
constexpr uint64_t kDoorbellSliceBytes = 8192;  // a process's doorbells on one GPU (GFX9+)
constexpr uint32_t kEopBytes = 4096;

// "key value" lines of a sysfs properties file.
std::map<std::string, uint64_t> parse_properties(const std::string& text) {
  std::map<std::string, uint64_t> props;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string_view line(text.data() + pos, eol - pos);
    pos = eol + 1;
    const size_t sp = line.find(' ');
    if (sp == std::string_view::npos) continue;
    uint64_t v = 0;
    const std::string_view num = line.substr(sp + 1);
    if (std::from_chars(num.data(), num.data() + num.size(), v).ec == std::errc())
      props.emplace(std::string(line.substr(0, sp)), v);
  }
  return props;
}

std::optional<uint64_t> parse_u64(const std::optional<std::string>& text) {
  if (!text) return std::nullopt;
  uint64_t v = 0;
  const char* b = text->data();
  if (std::from_chars(b, b + text->size(), v).ec != std::errc()) return std::nullopt;
  return v;
}

}  // namespace

std::string gfx_name(uint32_t v) {
  const uint32_t major = v / 10000, minor = (v / 100) % 100, step = v % 100;
  constexpr char hexd[] = "0123456789abcdef";
  std::string s = cat("gfx", major);
  s += hexd[minor & 15];
  s += hexd[step & 15];
  return s;
}

std::optional<std::array<uint8_t, 16>> KfdNode::uuid() const {
  if (unique_id == 0) return std::nullopt;
  constexpr char hexd[] = "0123456789abcdef";
  std::array<uint8_t, 16> u{};
  for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<uint8_t>(hexd[(unique_id >> (60 - 4 * i)) & 15]);
  return u;
}

std::vector<KfdNode> kfd_topology(Os& os) {
  std::vector<std::pair<uint32_t, std::string>> dirs;
  for (const std::string& name : os.list_dir(kTopologyNodes)) {
    uint32_t n = 0;
    if (std::from_chars(name.data(), name.data() + name.size(), n).ec == std::errc()) dirs.emplace_back(n, name);
  }
  std::sort(dirs.begin(), dirs.end());  // numerically: "10" after "9"
  std::vector<KfdNode> gpus;
  for (const auto& [n, name] : dirs) {
    const std::string dir = cat(kTopologyNodes, "/", name);
    const std::optional<uint64_t> gpu_id = parse_u64(os.read_file(dir + "/gpu_id"));
    const std::optional<std::string> text = os.read_file(dir + "/properties");
    if (!gpu_id || *gpu_id == 0 || !text) continue;  // the CPU node, or one we cannot read
    const auto p = parse_properties(*text);
    auto get = [&](const char* key) -> uint32_t {
      auto it = p.find(key);
      return it == p.end() ? 0 : static_cast<uint32_t>(it->second);
    };
    KfdNode k;
    k.node = n;
    k.gpu_id = static_cast<uint32_t>(*gpu_id);
    k.render_minor = get("drm_render_minor");
    k.gfx_target_version = get("gfx_target_version");
    if (k.gfx_target_version == 0) continue;  // not a GPU KFD can run compute on
    k.gfx = gfx_name(k.gfx_target_version);
    k.simd_count = get("simd_count");
    k.simd_per_cu = get("simd_per_cu");
    k.max_waves_per_simd = get("max_waves_per_simd");
    k.wave_front_size = get("wave_front_size");
    k.lds_size_in_kb = get("lds_size_in_kb");
    k.array_count = get("array_count");
    k.cu_per_simd_array = get("cu_per_simd_array");
    k.num_xcc = std::max<uint32_t>(1, get("num_xcc"));
    k.num_cp_queues = get("num_cp_queues");
    k.num_sdma_engines = get("num_sdma_engines");
    k.num_sdma_xgmi_engines = get("num_sdma_xgmi_engines");
    k.num_sdma_queues_per_engine = get("num_sdma_queues_per_engine");
    k.device_id = get("device_id");
    if (auto it = p.find("unique_id"); it != p.end()) k.unique_id = it->second;  // 64 bits: not through get()
    for (const std::string& bank : os.list_dir(dir + "/mem_banks")) {
      const std::optional<std::string> bt = os.read_file(cat(dir, "/mem_banks/", bank, "/properties"));
      if (!bt) continue;
      const auto bp = parse_properties(*bt);
      if (auto it = bp.find("size_in_bytes"); it != bp.end()) k.vram_bytes += it->second;
    }
    gpus.push_back(std::move(k));
  }
  return gpus;
}

// ---------------------------------------------------------------------------------------------------------------
KfdGpu::KfdGpu(Os& os, const KfdNode& node) : os_(os), node_(node) {
  const int kfd = os_.open("/dev/kfd", O_RDWR);
  if (kfd < 0) {
    const int err = errno;
    throw OsError(cat("open /dev/kfd for ", node_.gfx, " (gpu_id ", node_.gpu_id, ")"), err);
  }
  kfd_ = UniqueFd(os_, kfd);
  const std::string render_path = cat("/dev/dri/renderD", node_.render_minor);
  const int render = os_.open(render_path.c_str(), O_RDWR);
  if (render < 0) {
    const int err = errno;
    throw OsError(cat("open ", render_path, " for ", node_.gfx), err);
  }
  render_ = UniqueFd(os_, render);

  kfd_ioctl_get_version_args ver{};
  kfd_ioctl(AMDKFD_IOC_GET_VERSION, &ver, "GET_VERSION");
  major_ = ver.major_version;
  minor_ = ver.minor_version;
  if (major_ != 1) throw UnsupportedDriver(cat(describe(), ": KFD ioctl ABI ", major_, ".", minor_, " is not 1.x"));

  kfd_ioctl_acquire_vm_args vm{};
  vm.drm_fd = static_cast<uint32_t>(render_.get());
  vm.gpu_id = node_.gpu_id;
  kfd_ioctl(AMDKFD_IOC_ACQUIRE_VM, &vm, "ACQUIRE_VM");

  if (minor_ >= kfd_compat::kRuntimeEnableMinor) {
    // The runtime is up (as ROCr says at start). Per process: EBUSY when another GPU of this process said it
    // already, EEXIST when that one already made queues; both mean the process is enabled.
    kfd_compat::RuntimeEnableArgs re{};
    re.mode_mask = kfd_compat::kRuntimeEnable;
    if (os_.ioctl(kfd_.get(), kfd_compat::kIocRuntimeEnable, &re) < 0 && errno != EBUSY && errno != EEXIST)
      throw OsError(cat(describe(), ": RUNTIME_ENABLE"), errno);
    runtime_enabled_ = true;
  }

  // The apertures: the GPUVM range must cover the process's unified VA reservation.
  kfd_ioctl_get_process_apertures_new_args ap{};
  kfd_ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &ap, "GET_PROCESS_APERTURES_NEW (count)");
  std::vector<kfd_process_device_apertures> apertures(ap.num_of_nodes);
  ap.kfd_process_device_apertures_ptr = reinterpret_cast<uint64_t>(apertures.data());
  if (!apertures.empty()) kfd_ioctl(AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &ap, "GET_PROCESS_APERTURES_NEW");
  const VaSpace& space = process().va;
  for (uint32_t i = 0; i < ap.num_of_nodes && i < apertures.size(); ++i) {
    const kfd_process_device_apertures& a = apertures[i];
    if (a.gpu_id != node_.gpu_id) continue;
    if (space.base() < a.gpuvm_base || space.base() + space.size() - 1 > a.gpuvm_limit)
      throw UnsupportedDriver(cat(describe(), ": the GPUVM aperture ", hex(a.gpuvm_base), "..", hex(a.gpuvm_limit),
                                  " does not cover the process VA space ", hex(space.base()), "+", hex(space.size())));
  }

  create_events();
}

namespace {
// The GPUs of each KFD process (one per Os: every open of /dev/kfd through it shares the process), in order of
// bring-up. The first holds the process's event page; when it goes, the next takes the page over (KFD refuses to
// free an event page, and the others' mailboxes live in it).
struct EventPageUsers {
  std::mutex mu;
  std::map<const Os*, std::vector<KfdGpu*>> by_os;
};
EventPageUsers& event_page_users() {
  // Never destroyed: devices the registry closes at exit reach it after function-local statics made later than the
  // registry are gone.
  static EventPageUsers* const users = new EventPageUsers;  // NOLINT(cppcoreguidelines-owning-memory)
  return *users;
}
}  // namespace

void KfdGpu::create_events() {
  EventPageUsers& users = event_page_users();
  std::lock_guard lock(users.mu);
  std::vector<KfdGpu*>& peers = users.by_os[&os_];
  KfdBuffer* page = peers.empty() ? nullptr : peers.front()->event_page_.get();
  kfd_ioctl_create_event_args ev{};
  ev.event_type = KFD_IOC_EVENT_SIGNAL;
  ev.auto_reset = 1;
  if (peers.empty()) {
    // The event page: uncached GTT the GPU writes event ids into, given to KFD by handle with the first event.
    event_page_ = alloc(kEventPageBytes, KfdBuffer::Kind::gtt, KfdAllocOptions{true, true, false});
    ev.event_page_offset = event_page_->handle();
    if (os_.ioctl(kfd_.get(), AMDKFD_IOC_CREATE_EVENT, &ev) < 0) {
      // "Event page is already set" (EINVAL): another runtime of this process gave one, which we cannot address.
      if (errno != EINVAL) throw OsError(cat(describe(), ": CREATE_EVENT (signal)"), errno);
      event_page_.reset();
      ev = kfd_ioctl_create_event_args{};
      ev.event_type = KFD_IOC_EVENT_SIGNAL;
      ev.auto_reset = 1;
      kfd_ioctl(AMDKFD_IOC_CREATE_EVENT, &ev, "CREATE_EVENT (signal, in the process's event page)");
    } else {
      page = event_page_.get();
    }
  } else {
    // Our event takes a slot in the page another GPU of the process gave; our GPU must be able to write it.
    if (page) page->map_on(node_.gpu_id);
    kfd_ioctl(AMDKFD_IOC_CREATE_EVENT, &ev, "CREATE_EVENT (signal, in the process's event page)");
  }
  signal_event_ = ev.event_id;
  events_.push_back(signal_event_);
  if (page) event_slot_va_ = page->va() + uint64_t{ev.event_slot_index} * 8;
  // The exception events, as the thunk creates them; auto-reset, so a waiter sees each exception once.
  auto create = [&](uint32_t type, const char* what) {
    kfd_ioctl_create_event_args e{};
    e.event_type = type;
    e.auto_reset = 1;
    kfd_ioctl(AMDKFD_IOC_CREATE_EVENT, &e, what);
    events_.push_back(e.event_id);
    return e.event_id;
  };
  memory_event_ = create(KFD_IOC_EVENT_MEMORY, "CREATE_EVENT (memory exception)");
  hw_event_ = create(KFD_IOC_EVENT_HW_EXCEPTION, "CREATE_EVENT (HW exception)");
  wake_event_ = create(KFD_IOC_EVENT_SIGNAL, "CREATE_EVENT (exception waiter wake-up)");
  peers.push_back(this);
}

KfdGpu::~KfdGpu() {
  for (auto it = events_.rbegin(); it != events_.rend(); ++it) {
    kfd_ioctl_destroy_event_args d{};
    d.event_id = *it;
    os_.ioctl(kfd_.get(), AMDKFD_IOC_DESTROY_EVENT, &d);  // errors ignored: the fd closes next anyway
  }
  EventPageUsers& users = event_page_users();
  std::lock_guard lock(users.mu);
  auto it = users.by_os.find(&os_);
  if (it == users.by_os.end()) return;  // bring-up failed before the events
  std::vector<KfdGpu*>& peers = it->second;
  peers.erase(std::remove(peers.begin(), peers.end(), this), peers.end());
  if (peers.empty()) {
    users.by_os.erase(it);
    event_page_.reset();
  } else if (event_page_) {
    // The others still write their mailboxes here: the next GPU of the process holds (and later frees) the page.
    event_page_->gpu_ = peers.front();
    peers.front()->event_page_ = std::move(event_page_);
  }
}

std::string KfdGpu::describe() const {
  return cat(node_.gfx, " (gpu_id ", hex(node_.gpu_id), ", node ", node_.node, major_ ? ", KFD " : "",
             major_ ? cat(major_, ".", minor_) : std::string(), ")");
}

void KfdGpu::kfd_ioctl(unsigned long request, void* arg, const char* what) {
  if (os_.ioctl(kfd_.get(), request, arg) < 0) {
    const int err = errno;
    if (err == ENOMEM) throw OutOfMemory(cat(describe(), ": ", what, ": ", std::strerror(err)));
    throw OsError(cat(describe(), ": ", what), err);
  }
}

bool KfdGpu::wait_signal_event(uint32_t timeout_ms) {
  kfd_event_data data{};
  data.event_id = signal_event_;
  kfd_ioctl_wait_events_args w{};
  w.events_ptr = reinterpret_cast<uint64_t>(&data);
  w.num_events = 1;
  w.wait_for_all = 1;
  w.timeout = timeout_ms;
  kfd_ioctl(AMDKFD_IOC_WAIT_EVENTS, &w, "WAIT_EVENTS (signal)");
  return w.wait_result == KFD_IOC_WAIT_RESULT_COMPLETE;
}

void KfdGpu::set_signal_event() {
  kfd_ioctl_set_event_args s{};
  s.event_id = signal_event_;
  kfd_ioctl(AMDKFD_IOC_SET_EVENT, &s, "SET_EVENT (signal)");
}

std::string KfdException::describe() const {
  if (kind == Kind::memory) {
    std::string why;
    if (not_present) why += ", page not present";
    if (read_only) why += ", write to a read-only page";
    if (no_execute) why += ", execute of a no-execute page";
    if (imprecise) why += ", imprecise address";
    return cat("GPU memory fault at ", hex(va), why.empty() ? "" : " (", why.empty() ? "" : why.substr(2),
               why.empty() ? "" : ")");
  }
  return cat("GPU hardware exception (", reset_cause == KFD_HW_EXCEPTION_ECC ? "ECC error" : "hang",
             reset_type == KFD_HW_EXCEPTION_WHOLE_GPU_RESET ? ", whole-GPU reset" : ", engine reset",
             memory_lost ? ", memory lost" : "", ")");
}

std::optional<KfdException> KfdGpu::wait_exception(uint32_t timeout_ms) {
  kfd_event_data data[3]{};
  data[0].event_id = memory_event_;
  data[1].event_id = hw_event_;
  data[2].event_id = wake_event_;
  kfd_ioctl_wait_events_args w{};
  w.events_ptr = reinterpret_cast<uint64_t>(data);
  w.num_events = 3;
  w.wait_for_all = 0;
  w.timeout = timeout_ms;
  kfd_ioctl(AMDKFD_IOC_WAIT_EVENTS, &w, "WAIT_EVENTS (exceptions)");
  if (w.wait_result != KFD_IOC_WAIT_RESULT_COMPLETE) return std::nullopt;
  // KFD fills the data of the events that fired only; every exception names its GPU, so a zero gpu_id means
  // that event did not fire.
  const auto& m = data[0].memory_exception_data;
  const auto& h = data[1].hw_exception_data;
  KfdException e;
  if (m.gpu_id != 0) {
    e.kind = KfdException::Kind::memory;
    e.gpu_id = m.gpu_id;
    e.va = m.va;
    e.not_present = m.failure.NotPresent != 0;
    e.read_only = m.failure.ReadOnly != 0;
    e.no_execute = m.failure.NoExecute != 0;
    e.imprecise = m.failure.imprecise != 0;
    return e;
  }
  if (h.gpu_id != 0) {
    e.kind = KfdException::Kind::hardware;
    e.gpu_id = h.gpu_id;
    e.reset_type = h.reset_type;
    e.reset_cause = h.reset_cause;
    e.memory_lost = h.memory_lost != 0;
    return e;
  }
  // Nothing named: our wake-up, or a HW exception whose data this kernel did not copy out (older kernels copy
  // only memory-exception data); then it is taken to be this GPU's.
  if (wake_requested_.exchange(false)) return std::nullopt;
  e.kind = KfdException::Kind::hardware;
  e.gpu_id = node_.gpu_id;
  return e;
}

void KfdGpu::wake_exception_waiter() {
  wake_requested_.store(true);
  kfd_ioctl_set_event_args s{};
  s.event_id = wake_event_;
  kfd_ioctl(AMDKFD_IOC_SET_EVENT, &s, "SET_EVENT (exception waiter wake-up)");
}

std::optional<std::string> KfdGpu::poll_exception() {
  const std::optional<KfdException> e = wait_exception(0);
  if (!e) return std::nullopt;
  return cat(describe(), ": ", e->describe(), e->gpu_id != node_.gpu_id ? cat(" on gpu_id ", hex(e->gpu_id)) : "");
}

// ---------------------------------------------------------------------------------------------------------------
std::unique_ptr<KfdBuffer> KfdGpu::alloc(uint64_t size, KfdBuffer::Kind kind, const KfdAllocOptions& opts) {
  if (size == 0) throw InvalidArgument(cat(describe(), ": allocation of 0 bytes"));
  if (kind == KfdBuffer::Kind::userptr) throw InvalidArgument(cat(describe(), ": use map_user for host memory"));
  const uint64_t bytes = align_up(size, kPage);
  std::unique_ptr<KfdBuffer> b(new KfdBuffer(*this));
  b->kind_ = kind;
  b->size_ = bytes;
  b->va_ = process().va.alloc(bytes, bytes >= (uint64_t{2} << 20) ? (uint64_t{2} << 20) : kPage);
  b->va_from_space_ = true;

  kfd_ioctl_alloc_memory_of_gpu_args a{};
  a.va_addr = b->va_;
  a.size = bytes;
  a.gpu_id = node_.gpu_id;
  a.flags = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE;
  a.flags |= kind == KfdBuffer::Kind::vram ? KFD_IOC_ALLOC_MEM_FLAGS_VRAM : KFD_IOC_ALLOC_MEM_FLAGS_GTT;
  if (kind == KfdBuffer::Kind::vram && opts.host_visible) a.flags |= KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC;
  if (kind == KfdBuffer::Kind::gtt) a.flags |= KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
  if (opts.uncached) a.flags |= KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
  if (opts.executable) a.flags |= KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE;
  kfd_ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a,
            kind == KfdBuffer::Kind::vram ? "ALLOC_MEMORY_OF_GPU (VRAM)" : "ALLOC_MEMORY_OF_GPU (GTT)");
  b->handle_ = a.handle;
  b->allocated_ = true;
  if (opts.host_visible) {
    // The host mapping sits at the GPU VA, over our own PROT_NONE reservation.
    void* p = os_.mmap(reinterpret_cast<void*>(b->va_), bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                       render_.get(), static_cast<off_t>(a.mmap_offset));
    if (p == MAP_FAILED) throw OsError(cat(describe(), ": mmap of buffer at ", hex(b->va_)), errno);
    b->host_mapped_ = true;
  }
  b->map_on(node_.gpu_id);
  return b;
}

std::unique_ptr<KfdBuffer> KfdGpu::map_user(void* addr, uint64_t size) {
  const auto user = reinterpret_cast<uint64_t>(addr);
  if (user % kPage != 0 || size == 0)
    throw InvalidArgument(cat(describe(), ": host memory at ", hex(user), " (", size, " bytes) is not page aligned"));
  std::unique_ptr<KfdBuffer> b(new KfdBuffer(*this));
  b->kind_ = KfdBuffer::Kind::userptr;
  b->va_ = user;
  b->size_ = align_up(size, kPage);
  kfd_ioctl_alloc_memory_of_gpu_args a{};
  a.va_addr = user;
  a.size = b->size_;
  a.mmap_offset = user;  // for USERPTR: the CPU address
  a.gpu_id = node_.gpu_id;
  a.flags = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT;
  kfd_ioctl(AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &a, "ALLOC_MEMORY_OF_GPU (USERPTR)");
  b->handle_ = a.handle;
  b->allocated_ = true;
  b->host_mapped_ = true;
  b->map_on(node_.gpu_id);
  return b;
}

void KfdBuffer::map_on(uint32_t gpu_id) {
  if (std::find(mapped_on_.begin(), mapped_on_.end(), gpu_id) != mapped_on_.end()) return;
  kfd_ioctl_map_memory_to_gpu_args m{};
  m.handle = handle_;
  m.device_ids_array_ptr = reinterpret_cast<uint64_t>(&gpu_id);
  m.n_devices = 1;
  gpu_->kfd_ioctl(AMDKFD_IOC_MAP_MEMORY_TO_GPU, &m, cat("MAP_MEMORY_TO_GPU of ", hex(va_)).c_str());
  mapped_on_.push_back(gpu_id);
}

KfdBuffer::~KfdBuffer() {
  Os& os = gpu_->os_;
  for (uint32_t id : mapped_on_) {
    kfd_ioctl_unmap_memory_from_gpu_args u{};
    u.handle = handle_;
    u.device_ids_array_ptr = reinterpret_cast<uint64_t>(&id);
    u.n_devices = 1;
    os.ioctl(gpu_->kfd_.get(), AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &u);
  }
  if (allocated_) {
    kfd_ioctl_free_memory_of_gpu_args f{};
    f.handle = handle_;
    os.ioctl(gpu_->kfd_.get(), AMDKFD_IOC_FREE_MEMORY_OF_GPU, &f);
  }
  // VaSpace::free re-reserves the range PROT_NONE, which also drops the host mapping.
  if (va_from_space_) process().va.free(va_, size_);
}

// ---------------------------------------------------------------------------------------------------------------
std::unique_ptr<KfdQueue> KfdGpu::create_queue(KfdQueue::Type type, uint32_t ring_bytes) {
  if (ring_bytes < 1024 || (ring_bytes & (ring_bytes - 1)) != 0)
    throw InvalidArgument(cat(describe(), ": queue ring of ", ring_bytes, " bytes is not a power of two >= 1024"));
  std::unique_ptr<KfdQueue> q(new KfdQueue(*this, type));
  q->ring_bytes_ = ring_bytes;
  // Rings and pointers live in uncached GTT: the host writes them, the GPU polls them.
  q->ring_ = alloc(ring_bytes, KfdBuffer::Kind::gtt, KfdAllocOptions{true, true, false});
  q->ptrs_ = alloc(kPage, KfdBuffer::Kind::gtt, KfdAllocOptions{true, true, false});
  std::memset(q->ring_->host(), 0, ring_bytes);
  std::memset(q->ptrs_->host(), 0, kPage);

  kfd_ioctl_create_queue_args c{};
  c.ring_base_address = q->ring_->va();
  c.ring_size = ring_bytes;
  c.gpu_id = node_.gpu_id;
  c.read_pointer_address = q->ptrs_->va() + q->read_offset();
  c.write_pointer_address = q->ptrs_->va() + q->write_offset();
  if (type == KfdQueue::Type::compute_aql) {
    // The pointer page starts with the amd_queue_t: the CP locates it from the read pointer and the offset after it.
    const amd::Field& base = *amd::aql::kAmdQueue.find("read_dispatch_id_field_base_byte_offset");
    auto* words = static_cast<uint32_t*>(q->ptrs_->host());
    words[base.dword] = q->read_offset();
    words[amd::aql::kAmdQueue.find("queue_properties")->dword] = 2;  // IS_PTR64
  }
  c.queue_percentage = 100;
  c.queue_priority = 7;
  switch (type) {
    case KfdQueue::Type::compute_pm4: c.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE; break;
    case KfdQueue::Type::sdma: c.queue_type = KFD_IOC_QUEUE_TYPE_SDMA; break;
    case KfdQueue::Type::compute_aql: c.queue_type = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL; break;
  }
  if (type != KfdQueue::Type::sdma) {
    q->eop_ = alloc(kEopBytes, KfdBuffer::Kind::vram, KfdAllocOptions{});
    c.eop_buffer_address = q->eop_->va();
    c.eop_buffer_size = kEopBytes;
    // Context save/restore (CWSR) area, sized as the thunk sizes it: a control stack of 8 bytes per wave slot plus
    // a header, and per CU the wave state (VGPRs, SGPRs, LDS, HW registers), per XCC.
    const uint32_t cus = std::max<uint32_t>(1, node_.cu_count() / node_.num_xcc);
    const uint32_t waves = node_.max_waves_per_simd * std::max<uint32_t>(1, node_.simd_per_cu);
    const uint32_t ctl_stack = static_cast<uint32_t>(align_up(uint64_t{waves} * cus * 8 + 48, kPage));
    const uint64_t wg_data =
        align_up(uint64_t{cus} * (0x60000 + node_.lds_size_in_kb * 1024ull + 0x200 * waves + 0x400), kPage);
    const uint32_t ctx_bytes = static_cast<uint32_t>(ctl_stack + wg_data);
    q->ctx_save_ = alloc(uint64_t{ctx_bytes} * node_.num_xcc, KfdBuffer::Kind::gtt, KfdAllocOptions{});
    c.ctx_save_restore_address = q->ctx_save_->va();
    c.ctx_save_restore_size = ctx_bytes;
    c.ctl_stack_size = ctl_stack;
  }
  kfd_ioctl(AMDKFD_IOC_CREATE_QUEUE, &c, "CREATE_QUEUE");
  q->queue_id_ = c.queue_id;
  q->created_ = true;

  // The doorbell: the queue's slot in the process's doorbell slice of this GPU, mapped through /dev/kfd.
  const uint64_t base = c.doorbell_offset & ~(kDoorbellSliceBytes - 1);
  void* page =
      os_.mmap(nullptr, kDoorbellSliceBytes, PROT_READ | PROT_WRITE, MAP_SHARED, kfd_.get(), static_cast<off_t>(base));
  if (page == MAP_FAILED) throw OsError(cat(describe(), ": mmap of the doorbell page"), errno);
  q->doorbell_page_ = Mapping(os_, page, kDoorbellSliceBytes);
  q->doorbell_ = reinterpret_cast<volatile uint64_t*>(static_cast<std::byte*>(page) + (c.doorbell_offset - base));
  return q;
}

uint32_t KfdQueue::read_offset() const {
  return type_ == Type::compute_aql ? amd::aql::kAmdQueue.find("read_dispatch_id")->dword * 4u : 0u;
}
uint32_t KfdQueue::write_offset() const {
  return type_ == Type::compute_aql ? amd::aql::kAmdQueue.find("write_dispatch_id")->dword * 4u : 8u;
}
volatile uint64_t* KfdQueue::read_ptr() const {
  return reinterpret_cast<volatile uint64_t*>(static_cast<std::byte*>(ptrs_->host()) + read_offset());
}
volatile uint64_t* KfdQueue::write_ptr() const {
  return reinterpret_cast<volatile uint64_t*>(static_cast<std::byte*>(ptrs_->host()) + write_offset());
}
std::byte* KfdQueue::amd_queue() const {
  return type_ == Type::compute_aql ? static_cast<std::byte*>(ptrs_->host()) : nullptr;
}

void KfdQueue::submit(uint64_t new_wptr) {
  // A release store: the GPU may read the write pointer at any time (it polls it as well as taking the doorbell),
  // and what it reads must come with the ring words written before it.
  __atomic_store_n(const_cast<uint64_t*>(write_ptr()), new_wptr, __ATOMIC_RELEASE);
  gpu_.os_.write_doorbell64(doorbell_, new_wptr);
}

KfdQueue::~KfdQueue() {
  doorbell_page_ = Mapping();
  if (created_) {
    kfd_ioctl_destroy_queue_args d{};
    d.queue_id = queue_id_;
    gpu_.os_.ioctl(gpu_.kfd_.get(), AMDKFD_IOC_DESTROY_QUEUE, &d);
  }
  ctx_save_.reset();
  eop_.reset();
  ptrs_.reset();
  ring_.reset();
}

}  // namespace hcq::amd
