// The simulated NVIDIA driver's files: device nodes, the ioctl entry (nvidia_ioctl in kernel-open/nvidia/nv.c and
// RmIoctl in arch/nvalloc/unix/src/escape.c: size checks, control-node-only and device-node-only escapes), the
// Linux-specific escapes (CARD_INFO, CHECK_VERSION_STR, REGISTER_FD, ...), mmap of prepared mappings and
// /proc/driver/nvidia/version.
#include "sim/nv/sim_nv.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"
#include "hcq/knobs.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"
#include "sim/nv/nvproxy_refusals.hpp"
#include "sim/nv/sim_nv_state.hpp"

namespace hcq::sim {

namespace abi = nv::abi;
namespace st = nv::abi::status;

namespace {
constexpr std::string_view kCtlPath = "/dev/nvidiactl";
constexpr std::string_view kUvmPath = "/dev/nvidia-uvm";
constexpr std::string_view kGpuPathPrefix = "/dev/nvidia";
constexpr std::string_view kProcDir = "/proc/driver/nvidia";
constexpr std::string_view kVersionPath = "/proc/driver/nvidia/version";

// "/dev/nvidia3" -> 3; nullopt for other names.
std::optional<size_t> gpu_minor(std::string_view path) {
  if (!path.starts_with(kGpuPathPrefix)) return std::nullopt;
  const std::string_view digits = path.substr(kGpuPathPrefix.size());
  if (digits.empty() || digits.size() > 3) return std::nullopt;
  size_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return n;
}
}  // namespace

// ---------------------------------------------------------------------------------------------------------------
SimNv::SimNv(const std::vector<std::string>& gpus, ChannelRunnerFactory runner_factory, std::string driver_version)
    : state_(std::make_unique<State>()), version_(std::move(driver_version)) {
  if (gpus.empty()) throw InvalidArgument("simulated NVIDIA driver: no GPUs given");
  s().self = this;
  s().factory = std::move(runner_factory);
  s().version = version_;
  if (auto v = abi::parse_driver_version(version_)) s().branch = abi::find_branch(v->major);
  for (size_t i = 0; i < gpus.size(); ++i) {
    auto g = std::make_unique<NvGpu>();
    g->spec = &SimNvGpuSpec::of(gpus[i]);
    g->index = i;
    // RM's gpu_id is the PCI bus number shifted by 8 on most systems; the bus is 0x01 + index here.
    g->gpu_id = static_cast<uint32_t>(0x100 * (i + 1));
    const std::vector<uint8_t> u = g->spec->uuid(static_cast<uint32_t>(i));
    std::memcpy(g->uuid.bytes, u.data(), sizeof g->uuid.bytes);
    auto um = NvBacking::make("hcq-sim-nv-usermode", nv::gpfifo::kUsermodeSize);
    if (!um) throw OutOfMemory(cat("simulated NVIDIA driver: no memory for ", gpus[i], "'s usermode page"));
    g->usermode = *um;
    g->view = GpuView::of_unified_va();
    // A kernel's writes reach memory through the writebacks its channel's methods ask for (HCQ_SIM_L2=0: at once).
    if (knobs::sim_l2()) g->view->enable_cache();
    s().gpus.push_back(std::move(g));
  }
}

SimNv::~SimNv() {
  std::vector<std::shared_ptr<NvChannel>> dying;
  {
    std::lock_guard lock(s().mu);
    for (auto& [id, f] : s().files) {
      std::vector<RmObject> freed;
      if (f.kind == NvFile::Kind::ctl) s().tree.free_owned_by(id, freed);
      s().forget_freed_locked(freed, dying);
    }
    for (auto& [key, ch] : s().channels) dying.push_back(ch);
    s().channels.clear();
    {
      std::unique_lock dl(s().doorbell_mu);
      s().doorbell_channels.clear();
    }
    s().files.clear();
  }
  dying.clear();  // runners stop here, outside the lock
  std::unique_lock vm(s().vm_mu);
  for (auto& g : s().gpus) {
    g->uvm_vm.clear();
    g->dma_vm.clear();
    s().sync_view(*g);
    g->usermode.release();
  }
  s().cpu_maps.clear();
}

void SimNv::attach(SimOs& os) { s().os = &os; }

bool SimNv::handles_path(std::string_view path) const {
  return path == kCtlPath || path == kUvmPath || gpu_minor(path).has_value() || path == kProcDir ||
         path.starts_with(std::string(kProcDir) + "/");
}

int SimNv::open(const std::string& path, int /*flags*/) {
  NvFile f;
  if (path == kCtlPath) {
    f.kind = NvFile::Kind::ctl;
  } else if (path == kUvmPath) {
    f.kind = NvFile::Kind::uvm;
  } else if (auto minor = gpu_minor(path); minor && *minor < s().gpus.size()) {
    f.kind = NvFile::Kind::gpu;
    f.gpu = *minor;
  } else {
    return -ENOENT;
  }
  std::lock_guard lock(s().mu);
  const int id = s().next_file++;
  s().files.emplace(id, std::move(f));
  return id;
}

void SimNv::close(int file) {
  std::vector<std::shared_ptr<NvChannel>> dying;
  {
    std::lock_guard lock(s().mu);
    auto it = s().files.find(file);
    if (it == s().files.end()) return;
    std::vector<RmObject> freed;
    // Closing the control node frees the RM clients allocated through it (RmFreeUnusedClients on close).
    if (it->second.kind == NvFile::Kind::ctl) s().tree.free_owned_by(file, freed);
    if (it->second.kind == NvFile::Kind::uvm) s().uvm_file_closed(file);
    s().forget_freed_locked(freed, dying);
    for (auto& [id, f] : s().files)
      if (f.ctl == file) f.ctl = -1;
    s().files.erase(it);
  }
  dying.clear();
}

NvFile* SimNv::State::file(int id) {
  auto it = files.find(id);
  return it == files.end() ? nullptr : &it->second;
}

std::optional<int> SimNv::State::own_file(int fd) const {
  if (os == nullptr) return std::nullopt;
  auto of = os->lookup(fd);
  if (!of) return std::nullopt;
  if (of->driver != self) return std::nullopt;  // another simulated driver's file
  return of->file;
}

// ---------------------------------------------------------------------------------------------------------------
// ioctl entry

int SimNv::ioctl(int file, unsigned long request, void* arg) {
  NvFile::Kind kind;
  {
    std::lock_guard lock(s().mu);
    NvFile* f = s().file(file);
    if (f == nullptr) return -EBADF;
    kind = f->kind;
  }
  if (kind == NvFile::Kind::uvm) return s().uvm_ioctl(file, request, arg);

  if (abi::request_type(request) != abi::kIoctlType) return -EINVAL;
  uint32_t nr = abi::request_escape(request);
  size_t size = abi::request_size(request);
  void* user = arg;
  if (nr == abi::esc::ioctl_xfer_cmd) {
    if (size != sizeof(abi::Xfer)) return -EINVAL;
    if (arg == nullptr) return -EFAULT;
    abi::Xfer x;
    std::memcpy(&x, arg, sizeof x);
    nr = x.cmd;
    size = x.size;
    user = reinterpret_cast<void*>(static_cast<uintptr_t>(x.ptr));
    if (size > abi::kMaxIoctlSize) return -EINVAL;
  }
  if (user == nullptr && size != 0) return -EFAULT;
  if (s().nvproxy_refusals && nvproxy::refuses_escape(nr)) return -EINVAL;  // the proxy stops it before RM
  // The kernel's copy of the block (8-byte aligned, as kmalloc'ed); copied back whatever happens, as nvidia_ioctl
  // does unless the copy-in itself faulted.
  std::vector<uint64_t> copy((size + 7) / 8 + 1);
  void* k = copy.data();
  if (size != 0) std::memcpy(k, user, size);

  const bool ctl = kind == NvFile::Kind::ctl;
  int rc = 0;
  std::vector<RmObject> freed;
  std::vector<std::shared_ptr<NvChannel>> dying;
  auto need = [&](size_t want, bool on_ctl) {
    // RmIoctl: a size mismatch or the wrong kind of node is NV_ERR_INVALID_ARGUMENT, which nvidia_ioctl turns
    // into EINVAL without touching the block's status.
    return size == want && on_ctl == ctl;
  };
  switch (nr) {
    case abi::esc::card_info: {
      auto* cards = static_cast<abi::CardInfo*>(k);
      const size_t n = size / sizeof(abi::CardInfo);
      std::memset(k, 0, size);
      for (size_t i = 0; i < n && i < s().gpus.size(); ++i) {
        const NvGpu& g = *s().gpus[i];
        abi::CardInfo& c = cards[i];
        c.valid = 1;
        c.pci.domain = 0;
        c.pci.bus = static_cast<uint8_t>(i + 1);
        c.pci.vendor_id = 0x10de;
        c.pci.device_id = g.spec->pci_device_id;
        c.gpu_id = g.gpu_id;
        c.fb_size = g.spec->vram_bytes;
        c.minor_number = static_cast<uint32_t>(i);
        std::snprintf(c.dev_name, sizeof c.dev_name, "nvidia%zu", i);
      }
      break;
    }
    case abi::esc::check_version_str: {
      if (size != sizeof(abi::VersionCheck)) {
        rc = -EINVAL;
        break;
      }
      auto* v = static_cast<abi::VersionCheck*>(k);
      v->reply = abi::kVersionReplyRecognized;
      std::string theirs(v->version, strnlen(v->version, sizeof v->version));
      const std::string& ours = s().version;
      bool match = true;
      if (v->cmd == abi::version_cmd::strict) {
        match = theirs == ours;
      } else if (v->cmd == abi::version_cmd::relaxed) {
        match = theirs.substr(0, theirs.find('.')) == ours.substr(0, ours.find('.'));
      } else if (v->cmd != abi::version_cmd::query) {
        match = false;
      }
      std::memset(v->version, 0, sizeof v->version);
      std::memcpy(v->version, ours.data(), std::min(ours.size(), sizeof v->version - 1));
      if (!match) rc = -EINVAL;
      break;
    }
    case abi::esc::register_fd: {
      if (size != sizeof(abi::RegisterFd)) {
        rc = -EINVAL;
        break;
      }
      const auto* r = static_cast<const abi::RegisterFd*>(k);
      const std::optional<int> ctl_file = s().own_file(r->ctl_fd);
      std::lock_guard lock(s().mu);
      NvFile* self = s().file(file);
      NvFile* target = ctl_file ? s().file(*ctl_file) : nullptr;
      // Already registered: NV_ERR_INVALID_STATE; not a control fd, or ourselves: NV_ERR_INVALID_ARGUMENT.
      if (self == nullptr || self->ctl >= 0 || target == nullptr || target->kind != NvFile::Kind::ctl ||
          *ctl_file == file)
        rc = -EINVAL;
      else self->ctl = *ctl_file;
      break;
    }
    case abi::esc::status_code: {
      if (size != sizeof(abi::StatusCode)) {
        rc = -EINVAL;
        break;
      }
      static_cast<abi::StatusCode*>(k)->status = st::ok;
      break;
    }
    case abi::esc::attach_gpus_to_fd: {
      if (size == 0 || size % sizeof(uint32_t) != 0) {
        rc = -EINVAL;
        break;
      }
      const auto* ids = static_cast<const uint32_t*>(k);
      for (size_t i = 0; i < size / sizeof(uint32_t) && rc == 0; ++i) {
        bool known = false;
        for (const auto& g : s().gpus) known = known || g->gpu_id == ids[i];
        if (!known) rc = -EINVAL;
      }
      break;
    }
    case abi::esc::rm_alloc:
      if (!need(sizeof(abi::RmAllocParams), true) && !need(sizeof(abi::RmAllocWithRightsParams), true)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_alloc(file, k, size);
      break;
    case abi::esc::rm_free:
      if (!need(sizeof(abi::RmFreeParams), true)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_free(k, freed);
      break;
    case abi::esc::rm_control:
      if (!need(sizeof(abi::RmControlParams), true)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_control(k);
      break;
    case abi::esc::rm_alloc_memory:
      if (!need(sizeof(abi::RmAllocMemoryWithFd), false)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_alloc_memory(k);
      break;
    case abi::esc::rm_map_memory:
      if (!need(sizeof(abi::RmMapMemoryWithFd), true)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_map_memory(k);
      break;
    case abi::esc::rm_unmap_memory:
      if (!need(sizeof(abi::RmUnmapMemoryParams), true)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_unmap_memory(k);
      break;
    case abi::esc::rm_map_memory_dma:
      if (s().branch == nullptr || !need(s().branch->map_memory_dma.size, true)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_map_memory_dma(k, size);
      break;
    case abi::esc::rm_unmap_memory_dma:
      if (!need(sizeof(abi::RmUnmapMemoryDmaParams), true)) {
        rc = -EINVAL;
        break;
      }
      rc = s().rm_unmap_memory_dma(k);
      break;
    default:
      // Escapes this simulator does not implement (VID_HEAP_CONTROL, DUP_OBJECT, OS events, ...): RmIoctl's
      // default, NV_ERR_INVALID_ARGUMENT, i.e. EINVAL.
      rc = -EINVAL;
      break;
  }
  std::vector<std::shared_ptr<NvChannel>> starting;
  {
    std::lock_guard lock(s().mu);
    if (!freed.empty()) s().forget_freed_locked(freed, dying);
    starting.swap(s().to_start);
  }
  freed.clear();
  for (const auto& ch : starting) s().start_runner(ch);
  dying.clear();  // runners of freed channels stop here, with no lock held
  if (size != 0) std::memcpy(user, k, size);
  return rc;
}

// ---------------------------------------------------------------------------------------------------------------
// mmap of what RM_MAP_MEMORY prepared on this file

void* SimNv::mmap(int file, void* addr, size_t length, int prot, int flags, off_t offset, int* err) {
  NvFile::MmapContext ctx;
  {
    std::lock_guard lock(s().mu);
    NvFile* f = s().file(file);
    if (f == nullptr) {
      *err = EBADF;
      return MAP_FAILED;
    }
    // nvidia_mmap: only with a context RM_MAP_MEMORY created on this file, for exactly its (page-rounded) size.
    if (f->kind == NvFile::Kind::uvm || !f->mmap_context || offset != 0 ||
        length != align_up(f->mmap_context->length, kPage)) {
      *err = EINVAL;
      return MAP_FAILED;
    }
    ctx = *f->mmap_context;
    f->mmap_context.reset();
  }
  const int map_flags = (flags & ~(MAP_ANONYMOUS | MAP_PRIVATE)) | MAP_SHARED;
  if (!ctx.memory) {
    NvGpu& g = *s().gpus[ctx.usermode_gpu];
    void* p = ::mmap(addr, length, prot, map_flags, g.usermode.fd, 0);
    if (p == MAP_FAILED) {
      *err = errno;
      return MAP_FAILED;
    }
    std::unique_lock dl(s().doorbell_mu);
    s().usermode_maps[reinterpret_cast<uintptr_t>(p)] = {ctx.usermode_gpu, length};
    return p;
  }
  void* p = ::mmap(addr, length, prot, map_flags, ctx.memory->backing.fd, static_cast<off_t>(ctx.offset));
  if (p == MAP_FAILED) {
    *err = errno;
    return MAP_FAILED;
  }
  s().add_cpu_view(ctx.memory, static_cast<std::byte*>(p), ctx.offset, ctx.length);
  return p;
}

void SimNv::on_munmap(void* addr, size_t length) {
  const auto lo = reinterpret_cast<uintptr_t>(addr);
  s().drop_cpu_views(lo, length);
  std::unique_lock dl(s().doorbell_mu);
  for (auto it = s().usermode_maps.lower_bound(lo); it != s().usermode_maps.end() && it->first < lo + length;)
    it = s().usermode_maps.erase(it);
}

bool SimNv::write_doorbell(volatile void* where, uint64_t value, unsigned bytes) {
  return s().doorbell(where, value, bytes);
}

// ---------------------------------------------------------------------------------------------------------------
// procfs

std::optional<std::string> SimNv::read_file(const std::string& path) {
  if (path == kVersionPath)
    return cat("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  ", version_,
               "  Release Build  (hcq-sim@localhost)  simulated\nGCC version:  (simulated)\n");
  return std::nullopt;
}

std::vector<std::string> SimNv::list_dir(const std::string& path) {
  if (path == kProcDir) return {"version"};
  return {};
}

// ---------------------------------------------------------------------------------------------------------------
// for tests and the engine

void SimNv::refuse_as_nvproxy() { s().nvproxy_refusals = true; }

size_t SimNv::gpu_count() const { return s().gpus.size(); }
const SimNvGpuSpec& SimNv::gpu_spec(size_t gpu) const { return *s().gpus.at(gpu)->spec; }
std::byte* SimNv::translate(size_t gpu, uint64_t va, uint64_t size) { return s().translate(gpu, va, size); }
uint64_t SimNv::gpu_time_ns() const { return s().time_ns(); }
uint64_t SimNv::nonstall_interrupts(size_t gpu) const { return s().gpus.at(gpu)->nonstall.load(); }
void SimNv::inject_fault(size_t gpu, uint32_t channel_id, const ChannelFault& f) {
  s().fault_channel(gpu, channel_id, f);
}

std::vector<SimNv::ChannelState> SimNv::channels() const {
  std::lock_guard lock(s().mu);
  std::vector<ChannelState> out;
  for (const auto& [key, ch] : s().channels)
    out.push_back(
        ChannelState{ch->desc, ch->scheduled, ch->doorbells.load(), ch->faulted, ch->fault, ch->engine_classes});
  return out;
}

std::optional<SimNv::ChannelState> SimNv::channel_state(size_t gpu, uint32_t channel_id) const {
  for (ChannelState& c : channels())
    if (c.desc.gpu_index == gpu && c.desc.channel_id == channel_id) return std::move(c);
  return std::nullopt;
}

std::string SimNv::describe_channel(size_t gpu, uint32_t channel_id) const {
  std::shared_ptr<NvChannel> ch;
  {
    std::lock_guard lock(s().mu);
    auto it = s().channels.find({gpu, channel_id});
    if (it == s().channels.end()) return {};
    ch = it->second;
    if (ch->stopped_by_group) return cat("simulated GPU: ", ch->fault.reason);
    if (ch->faulted) {
      const ChannelFault& f = ch->fault;
      return cat("simulated GPU: ", to_string(f.kind), f.address ? cat(" at ", hex(f.address)) : std::string(),
                 ", GPFIFO entry ", f.gpfifo_position, ": ", f.reason);
    }
  }
  std::lock_guard rl(ch->runner_mu);
  return ch->runner ? cat("simulated GPU: ", ch->runner->describe()) : std::string();
}

}  // namespace hcq::sim
