#include "nv/rm/uvm.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <memory>

#include "hcq/error.hpp"
#include "nv/rm/abi/status.hpp"
#include "nv/rm/rm_client.hpp"

namespace hcq::nv {

using namespace abi;

namespace {
constexpr const char* kUvmPath = "/dev/nvidia-uvm";
}

std::string uuid_text(const Uuid& u) {
  char s[48];
  const uint8_t* b = u.bytes;
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return s;
}

template <class P>
void Uvm::call(unsigned long cmd, P& params, const std::string& what) {
  if (os_.ioctl(fd_.get(), cmd, &params) < 0) {
    const int err = errno;
    throw OsError(cat("UVM ", what), err);
  }
  check_status(params.status, cat("UVM ", what));
}

Uvm::Uvm(Os& os) : os_(os) {
  auto open_uvm = [&](const char* why) {
    const int fd = os_.open(kUvmPath, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      throw UnsupportedDriver(cat(kUvmPath, " (", why, "): ", std::strerror(err),
                                  err == ENOENT ? " (the nvidia-uvm kernel module is not loaded)" : ""));
    }
    return UniqueFd(os_, fd);
  };
  fd_ = open_uvm("context");
  UvmInitializeParams init{};
  call(uvm::initialize, init, "INITIALIZE");
  // The holder fd only makes teardown at process exit orderly (UVM then sees the address space still there).
  // Platforms that need none answer NV_WARN_NOTHING_TO_DO, and CUDA itself carries on when the call fails, so a
  // failure here drops the holder instead of failing bring-up.
  mm_fd_ = open_uvm("address-space holder");
  UvmMmInitializeParams mm{};
  mm.uvm_fd = fd_.get();
  if (os_.ioctl(mm_fd_.get(), uvm::mm_initialize, &mm) < 0 ||
      (mm.status != status::ok && mm.status != status::warn_nothing_to_do))
    mm_fd_ = UniqueFd();
}

void Uvm::register_gpu(const Uuid& gpu) {
  UvmRegisterGpuParams p{};
  p.gpu = gpu;
  p.rm_ctrl_fd = -1;
  call(uvm::register_gpu, p, cat("REGISTER_GPU ", uuid_text(gpu)));
}

void Uvm::unregister_gpu(const Uuid& gpu) noexcept {
  UvmUnregisterGpuParams p{};
  p.gpu = gpu;
  os_.ioctl(fd_.get(), uvm::unregister_gpu, &p);
}

void Uvm::register_vaspace(const Uuid& gpu, int rm_fd, Handle client, Handle vaspace) {
  UvmRegisterGpuVaspaceParams p{};
  p.gpu = gpu;
  p.rm_ctrl_fd = rm_fd;
  p.client = client;
  p.vaspace = vaspace;
  call(uvm::register_gpu_vaspace, p, cat("REGISTER_GPU_VASPACE ", hex(vaspace), " of ", uuid_text(gpu)));
}

void Uvm::unregister_vaspace(const Uuid& gpu) noexcept {
  UvmUnregisterGpuVaspaceParams p{};
  p.gpu = gpu;
  os_.ioctl(fd_.get(), uvm::unregister_gpu_vaspace, &p);
}

void Uvm::register_channel(const Uuid& gpu, int rm_fd, Handle client, Handle channel, uint64_t base, uint64_t length) {
  UvmRegisterChannelParams p{};
  p.gpu = gpu;
  p.rm_ctrl_fd = rm_fd;
  p.client = client;
  p.channel = channel;
  p.base = base;
  p.length = length;
  call(uvm::register_channel, p, cat("REGISTER_CHANNEL ", hex(channel), " at ", hex(base), "+", hex(length)));
}

void Uvm::unregister_channel(const Uuid& gpu, Handle client, Handle channel) noexcept {
  UvmUnregisterChannelParams p{};
  p.gpu = gpu;
  p.client = client;
  p.channel = channel;
  os_.ioctl(fd_.get(), uvm::unregister_channel, &p);
}

void Uvm::create_external_range(uint64_t base, uint64_t length) {
  UvmCreateExternalRangeParams p{};
  p.base = base;
  p.length = length;
  call(uvm::create_external_range, p, cat("CREATE_EXTERNAL_RANGE ", hex(base), "+", hex(length)));
}

void Uvm::map_external(uint64_t base, uint64_t length, const Uuid& gpu, int rm_fd, Handle client, Handle memory) {
  // 9 KiB: too large for the stack of a deep caller, so on the heap.
  auto p = std::make_unique<UvmMapExternalAllocationParams>();
  p->base = base;
  p->length = length;
  p->per_gpu[0].gpu = gpu;
  p->per_gpu[0].mapping_type = kUvmMappingReadWriteAtomic;
  p->gpu_count = 1;
  p->rm_ctrl_fd = rm_fd;
  p->client = client;
  p->memory = memory;
  call(uvm::map_external_allocation, *p,
       cat("MAP_EXTERNAL_ALLOCATION of ", hex(memory), " at ", hex(base), "+", hex(length), " on ", uuid_text(gpu)));
}

void Uvm::unmap_external(uint64_t base, uint64_t length, const Uuid& gpu) {
  UvmUnmapExternalParams p{};
  p.base = base;
  p.length = length;
  p.gpu = gpu;
  call(uvm::unmap_external, p, cat("UNMAP_EXTERNAL ", hex(base), "+", hex(length), " from ", uuid_text(gpu)));
}

void Uvm::map_on_gpu(uint64_t base, uint64_t length, const Uuid& gpu, int rm_fd, Handle client, Handle memory) {
  std::lock_guard lock(mu_);
  auto it = ranges_.upper_bound(base);
  if (it != ranges_.begin()) {
    auto before = std::prev(it);
    if (before->first + before->second.length > base && !(before->first == base && before->second.length == length))
      throw InvalidArgument(cat("UVM: ", hex(base), "+", hex(length), " overlaps the external range ",
                                hex(before->first), "+", hex(before->second.length)));
  }
  if (it != ranges_.end() && it->first < base + length)
    throw InvalidArgument(cat("UVM: ", hex(base), "+", hex(length), " overlaps the external range ", hex(it->first),
                              "+", hex(it->second.length)));
  auto existing = ranges_.find(base);
  const bool created = existing == ranges_.end();
  if (created) create_external_range(base, length);
  try {
    map_external(base, length, gpu, rm_fd, client, memory);
  } catch (...) {
    if (created) free_noexcept(base, length);
    throw;
  }
  if (created) ranges_[base] = Range{length, 1};
  else ++existing->second.gpus;
}

void Uvm::unmap_from_gpu(uint64_t base, uint64_t length, const Uuid& gpu) noexcept {
  std::lock_guard lock(mu_);
  auto it = ranges_.find(base);
  if (it == ranges_.end()) return;
  if (--it->second.gpus > 0) {
    try {
      unmap_external(base, length, gpu);
    } catch (const Error&) {
      // Teardown: the mapping goes with the range at the latest.
    }
    return;
  }
  ranges_.erase(it);
  free_noexcept(base, length);
}

void Uvm::free(uint64_t base, uint64_t length) {
  UvmFreeParams p{};
  p.base = base;
  p.length = length;
  call(uvm::free, p, cat("FREE ", hex(base), "+", hex(length)));
}

NvStatus Uvm::free_noexcept(uint64_t base, uint64_t length) noexcept {
  UvmFreeParams p{};
  p.base = base;
  p.length = length;
  if (os_.ioctl(fd_.get(), uvm::free, &p) < 0) return status::err_operating_system;
  return p.status;
}

}  // namespace hcq::nv
