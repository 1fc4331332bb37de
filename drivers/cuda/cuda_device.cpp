#include "cuda/cuda_device.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cuda/cuda_errors.hpp"
#include "cuda/cuda_program.hpp"
#include "cuda/cuda_queue.hpp"
#include "cuda/cuda_stream.hpp"
#include "hcq/allocator.hpp"
#include "hcq/backend/align.hpp"
#include "hcq/backend/os.hpp"
#include "hcq/backend/process.hpp"
#include "nv/compiler/nv_compiler.hpp"
#include "nv/cubin/cubin.hpp"

namespace hcq::cuda {
namespace {

constexpr uint64_t kHostPage = 4096;

// The timestamp kernel, as PTX the driver compiles for whatever GPU it runs on: one thread stores %globaltimer (the
// GPU's nanosecond clock, what NV's semaphore release writes) at addr+8. PTX ISA 6.0 / sm_50: every driver hcq
// accepts (CUDA 12+) compiles it for every GPU it supports.
constexpr char kTimestampPtx[] = R"(.version 6.0
.target sm_50
.address_size 64
.visible .entry hcq_timestamp(.param .u64 hcq_timestamp_addr)
{
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [hcq_timestamp_addr];
  mov.u64 %rd2, %globaltimer;
  st.u64 [%rd1+8], %rd2;
  ret;
}
)";

int attribute(const CudaApi& cu, CUdevice d, DeviceAttr a, const std::string& who) {
  int v = 0;
  cu.check(cu.device_get_attribute(&v, static_cast<int>(a), d),
           cat("cuDeviceGetAttribute(", static_cast<int>(a), ")").c_str(), who);
  return v;
}

}  // namespace

CudaDevice::CudaDevice(std::string name, std::shared_ptr<const CudaApi> api, int ordinal)
    : Device(std::move(name)), api_(std::move(api)) {
  const CudaApi& cu = *api_;
  const std::string& who = this->name();
  try {
    CUdevice d = 0;
    cu.check(cu.device_get(&d, ordinal), "cuDeviceGet", who);
    facts_.ordinal = d;
    char product[256] = {};
    cu.check(cu.device_get_name(product, sizeof product - 1, d), "cuDeviceGetName", who);
    facts_.product = product;
    CUuuid uuid{};
    cu.check(cu.device_get_uuid(&uuid, d), "cuDeviceGetUuid", who);
    std::memcpy(facts_.uuid.data(), uuid.bytes, facts_.uuid.size());
    const auto attr = [&](DeviceAttr a) { return attribute(cu, d, a, who); };
    facts_.cc_major = attr(DeviceAttr::compute_capability_major);
    facts_.cc_minor = attr(DeviceAttr::compute_capability_minor);
    facts_.sm_count = attr(DeviceAttr::multiprocessor_count);
    facts_.warp_size = attr(DeviceAttr::warp_size);
    facts_.max_shared_optin = attr(DeviceAttr::max_shared_memory_per_block_optin);
    facts_.max_shared_per_block = attr(DeviceAttr::max_shared_memory_per_block);
    facts_.limits.max_threads_per_group = static_cast<uint32_t>(attr(DeviceAttr::max_threads_per_block));
    facts_.limits.max_local[0] = static_cast<uint32_t>(attr(DeviceAttr::max_block_dim_x));
    facts_.limits.max_local[1] = static_cast<uint32_t>(attr(DeviceAttr::max_block_dim_y));
    facts_.limits.max_local[2] = static_cast<uint32_t>(attr(DeviceAttr::max_block_dim_z));
    facts_.limits.max_global[0] = static_cast<uint32_t>(attr(DeviceAttr::max_grid_dim_x));
    facts_.limits.max_global[1] = static_cast<uint32_t>(attr(DeviceAttr::max_grid_dim_y));
    facts_.limits.max_global[2] = static_cast<uint32_t>(attr(DeviceAttr::max_grid_dim_z));
    facts_.wait_value_nor = attr(DeviceAttr::can_use_stream_wait_value_nor) != 0;
    // What the adapter cannot do without: the same address for a pointer on the host and the GPU, host memory the
    // GPU reaches at the host's address, 64-bit stream waits and writes, and mapping memory at a chosen address.
    struct Need {
      DeviceAttr attr;
      const char* name;
      const char* why;
    };
    for (const Need& n : {
             Need{DeviceAttr::unified_addressing, "CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING", "one address space"},
             Need{DeviceAttr::can_use_host_pointer_for_registered_mem,
                  "CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM", "signals at the host's address"},
             Need{DeviceAttr::can_use_64_bit_stream_mem_ops, "CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS",
                  "64-bit signal waits and writes"},
             Need{DeviceAttr::virtual_memory_management_supported,
                  "CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED", "memory at the unified VA"},
         }) {
      if (attr(n.attr) == 0)
        throw UnsupportedDriver(
            cat(who, ": ", product, " reports ", n.name, " = 0; the CUDA adapter needs it (", n.why, ")"));
    }
    size_t total = 0;
    cu.check(cu.device_total_mem(&total, d), "cuDeviceTotalMem", who);
    facts_.memory_bytes = total;

    // The primary context, as the runtime API uses it (so a process mixing both shares one). Spin while waiting,
    // as hcq's own waits do; an active context keeps its flags (708), which only changes how CUDA waits.
    if (CUresult rc = cu.primary_ctx_set_flags(d, kCtxSchedSpin); rc != kPrimaryContextActive)
      cu.check(rc, "cuDevicePrimaryCtxSetFlags", who);
    cu.check(cu.primary_ctx_retain(&ctx_, d), "cuDevicePrimaryCtxRetain", who);
    ctx_retained_ = true;
    bind_context();

    CUmemAllocationProp prop{};
    prop.type = kMemAllocationTypePinned;
    prop.location = {kMemLocationTypeDevice, d};
    size_t granularity = 0;
    check(cu.mem_get_allocation_granularity(&granularity, &prop, kMemGranularityMinimum),
          "cuMemGetAllocationGranularity");
    facts_.granularity = std::max<uint64_t>(granularity, kHostPage);

    // A driver without its PTX JIT (a container that left out libnvidia-ptxjitcompiler) cannot build the timestamp
    // kernel: timestamps then come from a host function in stream order, on the host's monotonic clock.
    if (CUresult rc = cu.module_load_data(&timestamp_module_, kTimestampPtx);
        rc == kJitCompilerNotFound || rc == kJitCompilationDisabled) {
      timestamp_module_ = nullptr;
      timestamp_source_ = cat("host CLOCK_MONOTONIC (the timestamp kernel's PTX: ",
                              cu_error_message(rc, "cuModuleLoadData", cu.error_text(rc)), ")");
    } else {
      check(rc, "cuModuleLoadData (the timestamp kernel's PTX)");
      check(cu.module_get_function(&timestamp_fn_, timestamp_module_, "hcq_timestamp"), "cuModuleGetFunction");
      timestamp_source_ = "%globaltimer";
    }
    compute_ = std::make_unique<CudaStream>(*this, "compute");
    copy_ = std::make_unique<CudaStream>(*this, "copy");
    process().signals.add_mapper(this);
    mapper_registered_ = true;
    init_runtime(std::make_unique<HCQAllocator>(*this));
  } catch (...) {
    shutdown_runtime();
    stop();
    throw;
  }
}

CudaDevice::~CudaDevice() {
  shutdown_runtime();
  stop();
}

void CudaDevice::stop() noexcept {
  if (ctx_) bind_context();
  if (mapper_registered_) {
    process().signals.remove_mapper(this);
    mapper_registered_ = false;
  }
  compute_.reset();
  copy_.reset();
  {
    // What is left: host memory other devices own that map_memory registered here.
    std::unique_lock lock(ranges_mu_);
    for (auto& [va, m] : ranges_)
      if (m.kind == Mapping::Kind::registered) api_->mem_host_unregister(reinterpret_cast<void*>(va));
    ranges_.clear();
  }
  if (timestamp_module_) api_->module_unload(timestamp_module_);
  timestamp_module_ = nullptr;
  if (ctx_retained_) api_->primary_ctx_release(facts_.ordinal);
  ctx_retained_ = false;
}

void CudaDevice::bind_context() const {
  // cuCtxSetCurrent only sets a thread-local pointer; doing it on every entry keeps threads that never opened the
  // device working, and a thread that used another context (hcq bench's comparison) right.
  api_->ctx_set_current(ctx_);
}

void CudaDevice::check(CUresult rc, const char* call) const {
  if (rc == kSuccess) [[likely]]
    return;
  std::exception_ptr e = cu_error(rc, call, api_->error_text(rc), name());
  if (const CuResultInfo* info = cu_result_info(rc); info && info->sticky) {
    std::lock_guard lock(fault_mu_);
    if (!fault_) fault_ = e;
    e = fault_;
    const_cast<CudaDevice*>(this)->record_error(e);
  }
  std::rethrow_exception(e);
}

std::exception_ptr CudaDevice::poll_fault() const {
  {
    std::lock_guard lock(fault_mu_);
    if (fault_) return fault_;
  }
  for (const CudaStream* s : {compute_.get(), copy_.get()}) {
    if (!s) continue;
    const CUresult rc = s->query();
    if (rc == kSuccess || rc == kNotReady) continue;
    auto e = std::make_exception_ptr(DeviceFault(
        cu_error_message(rc, cat("cuStreamQuery (the ", s->what(), " stream)"), api_->error_text(rc), name())));
    std::lock_guard lock(fault_mu_);
    if (!fault_) fault_ = e;
    return fault_;
  }
  return nullptr;
}

DeviceInfo CudaDevice::info() const {
  DeviceInfo i;
  i.name = name();
  i.interface = "cuda";
  i.arch = facts_.arch();
  i.memory_bytes = facts_.memory_bytes;
  i.compute_queues = 1;
  i.copy_queues = 1;
  i.driver_version = cat("CUDA driver ", version_text(api_->version), " (", api_->path, "); ", facts_.product, ", ",
                         facts_.sm_count, " SMs");
  if (!timestamp_fn_) i.driver_version += cat("; timestamps: ", timestamp_source_);
  i.uuid = facts_.uuid;
  i.launch_limits = facts_.limits;
  i.wave_size = static_cast<uint32_t>(facts_.warp_size);
  // What a kernel's static shared memory may take without an opt-in the cubin does not carry.
  i.shared_memory_bytes = static_cast<uint32_t>(facts_.max_shared_per_block);
  i.compute_units = static_cast<uint32_t>(facts_.sm_count);
  // mma.sync.aligned.m16n8k16 with f16 and bf16 operands needs sm_80 (PTX ISA, "Warp-level matrix instructions").
  i.matrix_unit = facts_.cc_major >= 8 ? MatrixUnit::mma_sm80 : MatrixUnit::none;
  // A CUDA stream takes copies beside kernels.
  i.copies_on_compute = true;
  return i;
}

std::unique_ptr<HWQueue> CudaDevice::new_queue(QueueKind kind) {
  return std::make_unique<CudaQueue>(*this, kind, kind == QueueKind::compute ? *compute_ : *copy_);
}

// ---- memory

bool CudaDevice::knows_range(uint64_t va, uint64_t size) const {
  std::shared_lock lock(ranges_mu_);
  auto it = ranges_.upper_bound(va);
  if (it == ranges_.begin()) return false;
  --it;
  return va >= it->first && size <= it->second.bytes && va - it->first <= it->second.bytes - size;
}

void CudaDevice::register_host(uint64_t va, uint64_t size, const char* what) {
  bind_context();
  void* p = reinterpret_cast<void*>(va);
  check(api_->mem_host_register(p, size, kHostRegisterPortable | kHostRegisterDeviceMap),
        cat("cuMemHostRegister (", what, " at ", hex(va), ", ", size, " bytes)").c_str());
  CUdeviceptr gpu = 0;
  const CUresult rc = api_->mem_host_get_device_pointer(&gpu, p, 0);
  if (rc != kSuccess || gpu != va) {
    api_->mem_host_unregister(p);
    check(rc, "cuMemHostGetDevicePointer");
    throw UnsupportedDriver(cat(name(), ": CUDA maps the ", what, " at host ", hex(va), " to GPU address ", hex(gpu),
                                ": hcq needs the same address on both"));
  }
}

Allocation CudaDevice::alloc_memory(uint64_t size, const BufferSpec& spec) {
  if (size == 0) throw InvalidArgument(cat(name(), ": allocation of 0 bytes"));
  if (spec.external_ptr) {
    // The caller's memory, pinned and mapped for the GPU at its own address; unregistered, never freed, by us.
    const auto va = reinterpret_cast<uint64_t>(spec.external_ptr);
    const uint64_t start = va & ~(kHostPage - 1);
    const uint64_t bytes = align_up(va + size, kHostPage) - start;
    register_host(start, bytes, "caller's memory");
    std::unique_lock lock(ranges_mu_);
    ranges_[start] = Mapping{Mapping::Kind::host, bytes, {}};
    return Allocation{va, size, spec, this, true, 0};
  }
  // The host must reach it: pinned host memory (CUDA cannot map VRAM for the CPU at an address we choose).
  if (spec.host || spec.cpu_access) return alloc_host(size, spec);
  return alloc_vram(size, spec);
}

Allocation CudaDevice::alloc_host(uint64_t size, const BufferSpec& spec) {
  const uint64_t bytes = align_up(size, kHostPage);
  VaSpace& space = process().va;
  const uint64_t va = space.alloc(bytes, kHostPage);
  // Fresh zero pages over our own PROT_NONE reservation (spec.zero holds), then pinned for the GPU.
  void* p = real_os().mmap(reinterpret_cast<void*>(va), bytes, PROT_READ | PROT_WRITE,
                           MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    const int err = errno;
    space.free(va, bytes);
    throw OsError(cat(name(), ": mmap of ", bytes, " bytes of host memory at ", hex(va)), err);
  }
  try {
    register_host(va, bytes, "host memory");
  } catch (...) {
    space.free(va, bytes);
    throw;
  }
  {
    std::unique_lock lock(ranges_mu_);
    ranges_[va] = Mapping{Mapping::Kind::host, bytes, {}};
  }
  note_alloc(static_cast<int64_t>(bytes));
  return Allocation{va, size, spec, this, true, bytes};
}

Allocation CudaDevice::alloc_vram(uint64_t size, const BufferSpec& spec) {
  const CudaApi& cu = *api_;
  const uint64_t g = facts_.granularity;
  const uint64_t bytes = align_up(size, g);
  if (bytes > facts_.memory_bytes)
    throw OutOfMemory(cat(name(), ": ", size, " bytes asked, the GPU has ", facts_.memory_bytes));
  VaSpace& space = process().va;
  const uint64_t va = space.alloc(bytes, g);
  bind_context();
  // Hand the range from our host reservation to CUDA, which keeps host and GPU addresses apart itself (UVA), and ask
  // for exactly it. A driver that places the range elsewhere is refused: a buffer must have one address everywhere.
  real_os().munmap(reinterpret_cast<void*>(va), bytes);
  CUdeviceptr got = 0;
  const CUresult rc = cu.mem_address_reserve(&got, bytes, g, va, 0);
  if (rc != kSuccess || got != va) {
    if (rc == kSuccess) cu.mem_address_free(got, bytes);
    space.free(va, bytes);  // re-reserves it for us
    check(rc, "cuMemAddressReserve");
    throw UnsupportedDriver(cat(name(), ": cuMemAddressReserve placed ", bytes, " bytes at ", hex(got),
                                ", not at the unified VA ", hex(va),
                                ": hcq needs one address on the host and every device, so it refuses"));
  }
  CUmemGenericAllocationHandle h{};
  bool created = false, mapped = false;
  try {
    CUmemAllocationProp prop{};
    prop.type = kMemAllocationTypePinned;
    prop.location = {kMemLocationTypeDevice, facts_.ordinal};
    check(cu.mem_create(&h, bytes, &prop, 0), "cuMemCreate");
    created = true;
    check(cu.mem_map(va, bytes, 0, h, 0), "cuMemMap");
    mapped = true;
    const CUmemAccessDesc access{{kMemLocationTypeDevice, facts_.ordinal}, kMemAccessReadWrite};
    check(cu.mem_set_access(va, bytes, &access, 1), "cuMemSetAccess");
    if (spec.zero) check(cu.memset_d8(va, 0, bytes), "cuMemsetD8");
  } catch (...) {
    if (mapped) cu.mem_unmap(va, bytes);
    if (created) cu.mem_release(h);
    cu.mem_address_free(va, bytes);
    space.free(va, bytes);
    throw;
  }
  {
    std::unique_lock lock(ranges_mu_);
    ranges_[va] = Mapping{Mapping::Kind::vram, bytes, h};
  }
  note_alloc(static_cast<int64_t>(bytes));
  return Allocation{va, size, spec, this, false, bytes};
}

void CudaDevice::free_memory(const Allocation& a) {
  if (a.device != this)
    throw InvalidArgument(cat(name(), ": free of ", hex(a.va), " which belongs to ",
                              a.device ? a.device->name() : std::string("no device")));
  const uint64_t start = a.spec.external_ptr ? a.va & ~(kHostPage - 1) : a.va;
  Mapping m;
  {
    std::unique_lock lock(ranges_mu_);
    auto it = ranges_.find(start);
    if (it == ranges_.end())
      throw InvalidArgument(cat(name(), ": free of ", hex(a.va), ": not an allocation of this device"));
    m = it->second;
    ranges_.erase(it);
  }
  bind_context();
  const CudaApi& cu = *api_;
  if (a.spec.external_ptr) {
    check(cu.mem_host_unregister(reinterpret_cast<void*>(start)), "cuMemHostUnregister");
    return;
  }
  if (m.kind == Mapping::Kind::host) {
    check(cu.mem_host_unregister(reinterpret_cast<void*>(a.va)), "cuMemHostUnregister");
  } else {
    check(cu.mem_unmap(a.va, m.bytes), "cuMemUnmap");
    check(cu.mem_release(m.handle), "cuMemRelease");
    check(cu.mem_address_free(a.va, m.bytes), "cuMemAddressFree");
  }
  process().va.free(a.va, m.bytes);  // back to PROT_NONE in our reservation
  note_alloc(-static_cast<int64_t>(m.bytes));
}

void CudaDevice::map_memory(const Allocation& a) {
  if (a.device == this || knows_range(a.va, a.size)) return;
  if (!a.host_mapped)
    throw InvalidArgument(cat(name(), ": cannot map ", hex(a.va), " of ", a.device ? a.device->name() : "no device",
                              ": CUDA reaches another device's memory only through its own allocations"));
  // Host memory: pinned for this device too. Another CUDA device's host memory is registered portable already
  // (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED): every context reaches it, and its owner unregisters it.
  const uint64_t start = a.va & ~(kHostPage - 1);
  const uint64_t bytes = align_up(a.va + a.size, kHostPage) - start;
  bind_context();
  const CUresult rc =
      api_->mem_host_register(reinterpret_cast<void*>(start), bytes, kHostRegisterPortable | kHostRegisterDeviceMap);
  if (rc != kHostMemoryRegistered) {
    check(rc, "cuMemHostRegister (memory of another device)");
  }
  std::unique_lock lock(ranges_mu_);
  ranges_[start] = Mapping{rc == kSuccess ? Mapping::Kind::registered : Mapping::Kind::host, bytes, {}};
}

void CudaDevice::map_signal_page(void* addr, size_t size) {
  const auto va = reinterpret_cast<uint64_t>(addr);
  register_host(va, size, "signal page");
  std::unique_lock lock(ranges_mu_);
  ranges_[va] = Mapping{Mapping::Kind::host, size, {}};
}

void CudaDevice::unmap_signal_page(void* addr, size_t) {
  {
    std::unique_lock lock(ranges_mu_);
    ranges_.erase(reinterpret_cast<uint64_t>(addr));
  }
  bind_context();
  api_->mem_host_unregister(addr);
}

// ---- programs

void CudaDevice::register_kernel(uint64_t serial, CudaKernelRef ref) {
  std::unique_lock lock(kernels_mu_);
  kernels_[serial] = ref;
}

void CudaDevice::unregister_kernel(uint64_t serial) {
  std::unique_lock lock(kernels_mu_);
  kernels_.erase(serial);
}

std::optional<CudaKernelRef> CudaDevice::kernel(uint64_t serial) const {
  std::shared_lock lock(kernels_mu_);
  auto it = kernels_.find(serial);
  if (it == kernels_.end()) return std::nullopt;
  return it->second;
}

Compiler& CudaDevice::compiler() {
  std::call_once(compiler_once_, [this] { compiler_ = std::make_unique<nv::NvCompiler>(facts_.arch()); });
  return *compiler_;
}

std::unique_ptr<Program> CudaDevice::load_program(const std::string& prog, std::span<const uint8_t> binary) {
  const nv::Cubin cubin = nv::Cubin::parse(binary);  // CompileError("bad cubin: ...")
  const int sm = facts_.cc_major * 10 + facts_.cc_minor;
  // SASS runs on the SM version it was built for and on later minor versions of the same major one.
  if (static_cast<int>(cubin.sm()) / 10 != sm / 10 || static_cast<int>(cubin.sm()) > sm)
    throw InvalidArgument(
        cat(name(), ": kernel '", prog, "': the cubin is for ", cubin.arch(), ", this GPU is ", facts_.arch()));
  const nv::CubinKernel* k = cubin.find(prog);
  if (!k) {
    std::string have;
    for (const nv::CubinKernel& x : cubin.kernels()) have += (have.empty() ? "" : ", ") + x.name;
    throw InvalidArgument(cat(name(), ": kernel '", prog,
                              "' is not in the cubin (it defines: ", have.empty() ? "no kernels" : have, ")"));
  }
  if (!k->num_buffers.has_value() || !k->num_values.has_value())
    throw InvalidArgument(cat(name(), ": kernel '", prog, "' was not built with the hcq kernel ABI (no ", prog,
                              "_hcq_desc): its buffer and value counts are unknown"));
  const uint64_t block = uint64_t{8} * *k->num_buffers + uint64_t{4} * *k->num_values;
  if (k->param_size < block)
    throw InvalidArgument(cat(name(), ": kernel '", prog, "' takes ", k->param_size, " parameter bytes, less than the ",
                              block, " of its hcq argument block"));

  bind_context();
  CUmodule module = nullptr;
  check(api_->module_load_data(&module, binary.data()), cat("cuModuleLoadData (kernel '", prog, "')").c_str());
  try {
    CUfunction fn = nullptr;
    check(api_->module_get_function(&fn, module, prog.c_str()), cat("cuModuleGetFunction(\"", prog, "\")").c_str());
    int max_threads = 0;
    check(api_->func_get_attribute(&max_threads, kFuncAttrMaxThreadsPerBlock, fn),
          "cuFuncGetAttribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)");
    LaunchLimits limits = facts_.limits;
    // The kernel's registers (and __launch_bounds__) may allow fewer threads than the device.
    limits.max_threads_per_group = std::min(limits.max_threads_per_group, static_cast<uint32_t>(max_threads));
    for (uint32_t& l : limits.max_local) l = std::min(l, limits.max_threads_per_group);
    return std::make_unique<CudaProgram>(*this, prog, *k->num_buffers, *k->num_values, limits, module, fn,
                                         k->param_size);
  } catch (...) {
    api_->module_unload(module);
    throw;
  }
}

std::string CudaDevice::describe_state() const {
  return cat(name(), " (", facts_.product, " through CUDA ", version_text(api_->version), "): timeline next ",
             timeline_value(), ", signal ", timeline_signal().value(), "; compute stream ",
             compute_ ? compute_->state() : "none", ", copy stream ", copy_ ? copy_->state() : "none");
}

// ---- opening

std::unique_ptr<Device> open_cuda_device(const std::string& name, unsigned index, std::shared_ptr<const CudaApi> api) {
  const CudaApi& cu = *api;
  cu.check(cu.init(0), "cuInit", name);
  int count = 0;
  cu.check(cu.device_get_count(&count), "cuDeviceGetCount", name);
  if (index >= static_cast<unsigned>(count))
    throw UnsupportedDriver(cat(name, ": CUDA ", version_text(cu.version), " (", cu.path, ") sees ", count,
                                count == 1 ? " device" : " devices"));
  return std::make_unique<CudaDevice>(name, std::move(api), static_cast<int>(index));
}

std::unique_ptr<Device> open_cuda_device(const std::string& name, unsigned index) {
  try {
    return open_cuda_device(name, index, process_cuda_api());
  } catch (const UnsupportedDriver& e) {
    // The loader's message names the library and why; say which device asked.
    const std::string what = e.what();
    if (what.rfind(name, 0) == 0) throw;
    throw UnsupportedDriver(cat(name, ": ", what));
  }
}

}  // namespace hcq::cuda
