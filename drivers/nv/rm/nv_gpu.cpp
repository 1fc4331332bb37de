#include "nv/rm/nv_gpu.hpp"

#include <fcntl.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "hcq/backend/align.hpp"
#include "hcq/backend/process.hpp"
#include "hcq/error.hpp"
#include "hcq/memory.hpp"
#include "nv/facts/gpfifo.hpp"
#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"

namespace hcq::nv {

using namespace abi;

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kHugePage = uint64_t{2} << 20;
constexpr uint64_t kHugeFrom = uint64_t{8} << 20;  // VRAM allocations this large use 2 MiB pages
// The GPU VA space we ask for: [4 KiB, 2^49 - 80 MiB), all of a process's addresses.
constexpr uint64_t kVaspaceBase = 0x1000;
constexpr uint64_t kVaspaceSize = 0x1fffffb000000;
constexpr uint64_t kVirtmemLimit = 0x1ffffffffffff;
constexpr uint32_t kPitchFormat = 6;  // the surface format RM takes for plain buffers (tinygrad's value)

uint64_t ptr(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
NvDriver::NvDriver(std::shared_ptr<Os> os) : os_(std::move(os)), rm_(*os_), uvm_(*os_) {}

std::shared_ptr<NvDriver> NvDriver::get(std::shared_ptr<Os> os) {
  // One context per Os (per process for the real driver): UVM allows one VA space per context and every GPU maps
  // the same process VA. Held weakly, so the last GPU closed closes it.
  // The map is never destroyed (allocated once, reachable at exit: not a leak to LeakSanitizer). It is made at the
  // first NV open, after the device registry, so a static map would be gone before the registry's exit-time teardown
  // closes the devices, and an open or close on that path (or on a thread still running at exit) would find it
  // freed. The mutex is trivially destructible.
  static std::mutex mu;
  static auto* const open = new std::map<Os*, std::weak_ptr<NvDriver>>;
  std::lock_guard lock(mu);
  auto& slot = (*open)[os.get()];
  if (auto d = slot.lock()) return d;
  auto d = std::make_shared<NvDriver>(std::move(os));
  slot = d;
  return d;
}

std::vector<CardInfo> nv_cards(NvDriver& driver) {
  std::vector<CardInfo> cards = driver.rm().cards();
  std::sort(cards.begin(), cards.end(),
            [](const CardInfo& a, const CardInfo& b) { return a.minor_number < b.minor_number; });
  return cards;
}

// ---------------------------------------------------------------------------------------------------------------
NvGpu::NvGpu(std::shared_ptr<NvDriver> driver, const CardInfo& card) : driver_(std::move(driver)) {
  facts_.card = card;
  RmClient& rm = driver_->rm();
  try {
    dev_fd_ = open_device_fd();
    query_facts();
    // The usermode page, mapped: its NOTIFY_CHANNEL_PENDING register is the doorbell.
    usermode_ = alloc_usermode();
    {
      UniqueFd map_fd = open_device_fd();
      usermode_cookie_ = rm.map_memory(device(), usermode_.handle(), 0, gpfifo::kUsermodeSize, 0, map_fd.get());
      usermode_rm_mapped_ = true;
      void* p = os().mmap(nullptr, gpfifo::kUsermodeSize, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd.get(), 0);
      if (p == MAP_FAILED) throw OsError(cat(describe(), ": mmap of the usermode page"), errno);
      usermode_page_ = Mapping(os(), p, gpfifo::kUsermodeSize);
    }
    try {
      MemoryVirtualAllocParams vm{};
      vm.limit = kVirtmemLimit;
      virtmem_ = RmObject(rm, device(), rm.alloc(device(), cls::memory_virtual, vm));
    } catch (const RmError& e) {
      // gVisor's proxy passes NV01_MEMORY_VIRTUAL (and RM_MAP_MEMORY_DMA into it) only with the graphics or video
      // capability. Without it, GPU mappings are made as CUDA's compute jobs make them there: by UVM alone.
      if (e.status() != abi::status::err_invalid_class) throw;
      facts_.refused.push_back("NV01_MEMORY_VIRTUAL");
    }
    VaspaceAllocParams va{};
    va.va_base = kVaspaceBase;
    va.va_size = kVaspaceSize;
    va.flags = vaspace_flags::enable_page_faulting | vaspace_flags::is_externally_owned;
    vaspace_ = RmObject(rm, device(), rm.alloc(device(), facts_.arch->classes.va_space, va));
    // The process VA must fit the GPU's.
    const VaSpace& space = process().va;
    if (space.base() < kVaspaceBase || space.base() + space.size() > kVaspaceBase + kVaspaceSize)
      throw UnsupportedDriver(cat(describe(), ": the process VA space ", hex(space.base()), "+", hex(space.size()),
                                  " lies outside the GPU's ", hex(kVaspaceBase), "+", hex(kVaspaceSize)));
    uvm().register_gpu(facts_.uuid);
    uvm_gpu_ = true;
    uvm().register_vaspace(facts_.uuid, rm.ctl_fd(), rm.root(), vaspace());
    uvm_vaspace_ = true;
  } catch (...) {
    if (uvm_vaspace_) uvm().unregister_vaspace(facts_.uuid);
    if (uvm_gpu_) uvm().unregister_gpu(facts_.uuid);
    usermode_page_ = Mapping();
    if (usermode_rm_mapped_) rm.unmap_memory(device(), usermode_.handle(), usermode_cookie_);
    throw;
  }
}

NvGpu::~NvGpu() {
  if (uvm_vaspace_) uvm().unregister_vaspace(facts_.uuid);
  if (uvm_gpu_) uvm().unregister_gpu(facts_.uuid);
  usermode_page_ = Mapping();
  if (usermode_rm_mapped_) rm().unmap_memory(device(), usermode_.handle(), usermode_cookie_);
  // The RM objects go in reverse order of their members: VA space, virtual memory, usermode, subdevice, device.
  vaspace_.reset();
  virtmem_.reset();
  usermode_.reset();
  subdevice_.reset();
  device_.reset();
}

UniqueFd NvGpu::open_device_fd() {
  const std::string path = cat("/dev/nvidia", facts_.card.minor_number);
  const int fd = os().open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw OsError(cat(path, ": open"), err);
  }
  UniqueFd owned(os(), fd);
  RegisterFd r{rm().ctl_fd()};
  rm().escape(fd, esc::register_fd, &r, sizeof r, cat(path, ": REGISTER_FD"));
  return owned;
}

void NvGpu::query_facts() {
  RmClient& rm = driver_->rm();
  GpuIdInfoParams id{};
  id.gpu_id = facts_.card.gpu_id;
  rm.control(rm.root(), ctrl::gpu_get_id_info_v2, id);
  facts_.device_instance = id.device_instance;

  DeviceAllocParams dp{};
  dp.device_id = id.device_instance;
  dp.client_share = rm.root();
  dp.va_mode = 0;  // optional multiple VA spaces: we allocate our own
  device_ = RmObject(rm, rm.root(), rm.alloc(rm.root(), cls::device, dp));
  SubdeviceAllocParams sp{};
  subdevice_ = RmObject(rm, device(), rm.alloc(device(), cls::subdevice, sp));

  // The classes: ask for the count, then the list.
  ClassListParams cl{};
  rm.control(device(), ctrl::gpu_get_classlist, cl);
  facts_.classes.assign(cl.num_classes, 0);
  cl.class_list = ptr(facts_.classes.data());
  if (cl.num_classes) rm.control(device(), ctrl::gpu_get_classlist, cl);
  facts_.classes.resize(std::min<size_t>(cl.num_classes, facts_.classes.size()));

  InfoPair gr[] = {{gr_info::sm_version, 0},
                   {gr_info::max_warps_per_sm, 0},
                   {gr_info::shader_pipe_sub_count, 0},  // enabled TPCs
                   {gr_info::litter_num_sm_per_tpc, 0},
                   {gr_info::litter_num_gpcs, 0},
                   {gr_info::litter_num_tpc_per_gpc, 0}};
  GrInfoParams gp{};
  gp.list_size = std::size(gr);
  gp.list = ptr(gr);
  rm.control(subdevice(), ctrl::gr_get_info, gp);
  facts_.sm_version = gr[0].data;
  facts_.sm = ((gr[0].data >> 8) & 0xff) * 10 + (gr[0].data & 0xff);
  facts_.max_warps_per_sm = gr[1].data;
  facts_.sm_count = gr[2].data * gr[3].data;
  facts_.sms_per_tpc = gr[3].data;
  facts_.max_tpcs = gr[4].data * gr[5].data;

  GpuNameParams name{};
  rm.control(subdevice(), ctrl::gpu_get_name_string, name);
  name.name[63] = 0;
  facts_.name = reinterpret_cast<const char*>(name.name);

  FbInfoV2Params fb{};
  fb.list_size = 1;
  fb.list[0].index = fb_info::total_ram_size;
  rm.control(subdevice(), ctrl::fb_get_info_v2, &fb, rm.branch().controls.fb_info_v2);
  facts_.vram_bytes = uint64_t{fb.list[0].data} * 1024;

  GidInfoParams gid{};
  gid.flags = kGidFormatBinary;
  gid.length = kUuidBytes;
  rm.control(subdevice(), ctrl::gpu_get_gid_info, gid);
  if (gid.length != kUuidBytes)
    throw UnsupportedDriver(cat(describe(), ": GPU_GET_GID_INFO returned ", gid.length, " bytes, not a 16-byte UUID"));
  std::memcpy(facts_.uuid.bytes, gid.data, kUuidBytes);

  facts_.arch = find_arch_by_sm(facts_.sm);
  if (!facts_.arch)
    throw UnsupportedDriver(cat(describe(), ": SM version ", hex(facts_.sm_version), " is not a supported GPU"));
  auto has = [&](uint32_t c) {
    return std::find(facts_.classes.begin(), facts_.classes.end(), c) != facts_.classes.end();
  };
  const NvClasses& want = facts_.arch->classes;
  for (uint32_t c : {want.gpfifo, want.compute, want.copy, want.channel_group, want.context_share, want.va_space})
    if (!has(c)) throw UnsupportedDriver(cat(describe(), ": the GPU does not offer class ", hex(c)));
  for (uint32_t c : want.usermode)
    if (has(c)) facts_.usermode_candidates.push_back(c);
  if (facts_.usermode_candidates.empty())
    throw UnsupportedDriver(cat(describe(), ": the GPU offers no usermode class we know"));
}

RmObject NvGpu::alloc_usermode() {
  // In order of preference, the newest first. A driver proxy may refuse a class the GPU offers (gVisor's has no
  // entry for AMPERE_USERMODE_A and answers NV_ERR_INVALID_CLASS) while passing an older one: every usermode class
  // puts the doorbell at the same offset (nv/facts/gpfifo.hpp), so the older one serves as well.
  RmClient& rm = driver_->rm();
  std::string refused;
  for (uint32_t c : facts_.usermode_candidates) {
    try {
      RmObject o(rm, subdevice(), rm.alloc(subdevice(), c));
      facts_.usermode_class = c;
      return o;
    } catch (const RmError& e) {
      if (e.status() != abi::status::err_invalid_class) throw;
      facts_.refused.push_back(cat("usermode class ", hex(c)));
      refused += cat(refused.empty() ? "" : ", ", hex(c));
    }
  }
  throw UnsupportedDriver(cat(describe(), ": every usermode class the GPU offers was refused (", refused,
                              ": NV_ERR_INVALID_CLASS); no doorbell page"));
}

volatile uint32_t* NvGpu::doorbell() const {
  auto* page = static_cast<std::byte*>(usermode_page_.get());
  return reinterpret_cast<volatile uint32_t*>(page + gpfifo::kDoorbellOffset);
}

std::string NvGpu::describe() const {
  return cat(facts_.sm ? facts_.arch_name() + " " : "", facts_.name.empty() ? "NVIDIA GPU" : facts_.name,
             " (/dev/nvidia", facts_.card.minor_number, ", driver ", driver_->rm().version().text, ")");
}

// ---------------------------------------------------------------------------------------------------------------
void NvGpu::map_on_gpu(NvMemory& m) {
  RmClient& rm = driver_->rm();
  // RM's own view of the mapping (the virtual-memory object at the same VA), as CUDA and tinygrad make it: RM checks
  // channel rings and USERD against it.
  // Without the virtual-memory object (refused behind gVisor's proxy) UVM's mapping is the only one, as for CUDA's
  // compute jobs there.
  if (virtmem_.handle() != 0) {
    const uint32_t flags = (nvos46_flags::page_size_4kb << nvos46_flags::page_size_shift) |
                           (nvos46_flags::cache_snoop_enable << nvos46_flags::cache_snoop_shift) |
                           (1u << nvos46_flags::dma_offset_fixed_shift);
    try {
      rm.map_memory_dma(device(), virtmem_.handle(), m.handle_, m.size_, m.va_, flags);
    } catch (const OsError& e) {
      // The proxy refuses the escape itself with EINVAL (RM would answer a bad block with a status instead).
      if (e.err() != EINVAL) throw;
      throw UnsupportedDriver(cat(describe(),
                                  ": NV_ESC_RM_MAP_MEMORY_DMA refused (EINVAL): gVisor's nvproxy allows it only with "
                                  "the graphics driver capability; run with "
                                  "NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics"));
    }
    m.dma_mapped_ = true;
  }
  // The GPU's page tables: UVM maps the memory at the same VA in our VA space.
  uvm().map_on_gpu(m.va_, m.size_, facts_.uuid, rm.ctl_fd(), rm.root(), m.handle_);
  m.gpu_mapped_ = true;
}

std::unique_ptr<NvMemory> NvGpu::alloc(uint64_t size, const NvAllocOptions& opts) {
  using Where = NvAllocOptions::Where;
  if (size == 0) throw InvalidArgument(cat(describe(), ": allocation of 0 bytes"));
  RmClient& rm = driver_->rm();
  const uint64_t page = opts.where == Where::vram && size >= kHugeFrom ? kHugePage : kPage;
  std::unique_ptr<NvMemory> m(new NvMemory(*this));
  m->size_ = align_up(size, page);
  m->va_ = process().va.alloc(m->size_, page);
  m->va_from_space_ = true;

  if (opts.where == Where::host) {
    m->kind_ = NvMemory::Kind::host;
    void* p = os().mmap(reinterpret_cast<void*>(m->va_), m->size_, PROT_READ | PROT_WRITE,
                        MAP_FIXED | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw OsError(cat(describe(), ": mmap of host memory at ", hex(m->va_)), errno);
    m->anon_mapped_ = m->host_mapped_ = true;
    const uint32_t flags = (nvos02_flags::physicality_noncontiguous << nvos02_flags::physicality_shift) |
                           (nvos02_flags::coherency_cached << nvos02_flags::coherency_shift) |
                           (nvos02_flags::mapping_no_map << nvos02_flags::mapping_shift);
    m->handle_ = rm.alloc_os_memory(dev_fd_.get(), device(), cls::memory_system_os_descriptor, flags,
                                    reinterpret_cast<void*>(m->va_), m->size_);
  } else {
    const bool vram = opts.where == Where::vram;
    m->kind_ = vram ? NvMemory::Kind::vram : NvMemory::Kind::rm_sysmem;
    MemoryAllocParams a{};
    a.owner = rm.root();
    a.type = vram ? nvos32::type_image : nvos32::type_notifier;
    a.flags = nvos32::alloc_map_not_required | nvos32::alloc_memory_handle_provided | nvos32::alloc_alignment_force |
              nvos32::alloc_ignore_bank_placement | (vram ? nvos32::alloc_persistent_vidmem : 0);
    const uint32_t physicality =
        opts.contiguous ? nvos32::physicality_contiguous : nvos32::physicality_allow_noncontiguous;
    a.attr = (physicality << nvos32::attr_physicality_shift) |
             ((vram ? nvos32::location_vidmem : nvos32::location_pci) << nvos32::attr_location_shift) |
             (page == kHugePage ? nvos32::page_size_huge << nvos32::attr_page_size_shift : 0);
    a.attr2 = nvos32::attr2_zbc_prefer_no_zbc |
              ((vram ? nvos32::gpu_cacheable_yes : nvos32::gpu_cacheable_no) << nvos32::attr2_gpu_cacheable_shift) |
              (page == kHugePage ? nvos32::page_size_huge_2mb << nvos32::attr2_page_size_huge_shift : 0);
    a.format = kPitchFormat;
    a.size = m->size_;
    a.alignment = page;
    a.limit = m->size_ - 1;
    m->handle_ = rm.alloc(device(), vram ? cls::memory_local_user : cls::memory_system, a);
    if (opts.cpu_access) {
      // VRAM is mapped through its BAR, so through the GPU's own file; RM system memory through the control device
      // (RM refuses the GPU's file for it).
      UniqueFd map_fd = vram ? open_device_fd() : rm.open_control_file();
      m->cpu_cookie_ = rm.map_memory(device(), m->handle_, 0, m->size_, 0, map_fd.get());
      m->cpu_mapped_by_rm_ = true;
      void* p = os().mmap(reinterpret_cast<void*>(m->va_), m->size_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                          map_fd.get(), 0);
      if (p == MAP_FAILED)
        throw OsError(cat(describe(), ": mmap of ", vram ? "VRAM" : "RM system memory", " at ", hex(m->va_)), errno);
      m->host_mapped_ = true;
    }
  }
  map_on_gpu(*m);
  return m;
}

std::unique_ptr<NvMemory> NvGpu::map_host(void* addr, uint64_t size) {
  const uint64_t lo = align_down(ptr(addr), kPage);
  const uint64_t hi = align_up(ptr(addr) + size, kPage);
  if (size == 0 || hi <= lo)
    throw InvalidArgument(cat(describe(), ": host mapping of ", size, " bytes at ", hex(ptr(addr))));
  std::unique_ptr<NvMemory> m(new NvMemory(*this));
  m->kind_ = NvMemory::Kind::external_host;
  m->va_ = lo;
  m->size_ = hi - lo;
  m->host_mapped_ = true;
  const uint32_t flags = (nvos02_flags::physicality_noncontiguous << nvos02_flags::physicality_shift) |
                         (nvos02_flags::coherency_cached << nvos02_flags::coherency_shift) |
                         (nvos02_flags::mapping_no_map << nvos02_flags::mapping_shift);
  m->handle_ = rm().alloc_os_memory(dev_fd_.get(), device(), cls::memory_system_os_descriptor, flags,
                                    reinterpret_cast<void*>(lo), m->size_);
  map_on_gpu(*m);
  return m;
}

void NvGpu::map_on_peer(NvMemory& m, const NvGpu& peer) {
  if (&peer == this) return;
  if (&peer.driver() != &driver())
    throw InvalidArgument(cat(describe(), ": peer mapping of ", hex(m.va_), " on ", peer.describe(),
                              ", which is open through another driver context"));
  for (const Uuid& u : m.peers_)
    if (std::memcmp(u.bytes, peer.facts().uuid.bytes, kUuidBytes) == 0) return;
  RmClient& rm = driver_->rm();
  uvm().map_on_gpu(m.va_, m.size_, peer.facts().uuid, rm.ctl_fd(), rm.root(), m.handle_);
  m.peers_.push_back(peer.facts().uuid);
}

NvMemory::~NvMemory() {
  RmClient& rm = gpu_.rm();
  for (const Uuid& peer : peers_) gpu_.uvm().unmap_from_gpu(va_, size_, peer);
  if (gpu_mapped_) gpu_.uvm().unmap_from_gpu(va_, size_, gpu_.facts().uuid);
  if (dma_mapped_) rm.unmap_memory_dma(gpu_.device(), gpu_.virtmem_.handle(), handle_, va_);
  // Inside the VA reservation a host mapping is replaced by PROT_NONE, never unmapped: another mmap of the process
  // could take the hole before VaSpace::free re-reserves the range with MAP_FIXED, which would then destroy it.
  auto drop_host_mapping = [this] {
    void* at = reinterpret_cast<void*>(va_);
    if (va_from_space_)
      gpu_.os().mmap(at, size_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    else gpu_.os().munmap(at, size_);
  };
  if (cpu_mapped_by_rm_) {
    if (host_mapped_) drop_host_mapping();
    rm.unmap_memory(gpu_.device(), handle_, cpu_cookie_);
  }
  if (handle_) rm.release(gpu_.device(), handle_);
  if (anon_mapped_) drop_host_mapping();
  // VaSpace::free puts the range back (re-reserving it PROT_NONE once more).
  if (va_from_space_) {
    try {
      process().va.free(va_, size_);
    } catch (const Error&) {
      // Only a range it did not hand out: cannot happen for one we took from it.
    }
  }
}

}  // namespace hcq::nv
