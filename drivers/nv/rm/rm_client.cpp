#include "nv/rm/rm_client.hpp"

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "nv/rm/abi/classes.hpp"
#include "nv/rm/abi/nvos.hpp"
#include "nv/rm/abi/status.hpp"

namespace hcq::nv {

using namespace abi;

namespace {
constexpr const char* kCtlPath = "/dev/nvidiactl";
constexpr const char* kVersionPath = "/proc/driver/nvidia/version";
// Our object handles. Any non-zero value unique within the client is accepted; RM's own start at 0xcaf00000.
constexpr uint32_t kFirstHandle = 0x1000;

uint64_t ptr(const void* p) { return reinterpret_cast<uint64_t>(p); }
}  // namespace

void check_status(NvStatus status, const std::string& what) {
  if (status == status::ok) return;
  const std::string msg = cat(what, ": ", status_name(status), " (", hex(status), ")");
  if (status == status::err_no_memory || status == status::err_insufficient_resources) throw OutOfMemory(msg);
  throw RmError(msg, status);
}

DriverVersion read_driver_version(Os& os, int ctl_fd) {
  VersionCheck q{};
  q.cmd = version_cmd::query;
  std::optional<DriverVersion> from_ioctl;
  if (os.ioctl(ctl_fd, escape_request(esc::check_version_str, sizeof q), &q) == 0 &&
      q.reply == kVersionReplyRecognized) {
    q.version[sizeof q.version - 1] = 0;
    from_ioctl = parse_driver_version(q.version);
    if (!from_ioctl)
      throw UnsupportedDriver(cat(kCtlPath, ": the driver reports version '", q.version, "', which is not a version"));
  }
  std::optional<DriverVersion> from_proc;
  if (auto text = os.read_file(kVersionPath)) from_proc = parse_proc_version(*text);
  if (from_ioctl) {
    // The module answering the ioctl is the one we talk to; /proc adds only whether it is the open one.
    if (from_proc && from_proc->text == from_ioctl->text) from_ioctl->open_module = from_proc->open_module;
    return *from_ioctl;
  }
  if (from_proc) return *from_proc;
  throw UnsupportedDriver(cat(kCtlPath, ": cannot tell the NVIDIA driver's version (CHECK_VERSION_STR failed and ",
                              kVersionPath, " is unreadable)"));
}

RmClient::RmClient(Os& os) : os_(os), next_handle_(kFirstHandle) {
  const int fd = os_.open(kCtlPath, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw UnsupportedDriver(
        cat(kCtlPath, ": ", std::strerror(err), err == ENOENT ? " (the nvidia kernel module is not loaded)" : ""));
  }
  ctl_ = UniqueFd(os_, fd);
  version_ = read_driver_version(os_, ctl_.get());
  branch_ = &select_branch(version_);
  // The root client: RM picks its handle.
  RmAllocParams p{};
  p.class_id = cls::root_client;
  escape(ctl_.get(), esc::rm_alloc, &p, sizeof p, "RM_ALLOC of the root client (class 0x41)");
  check_status(p.status, "RM_ALLOC of the root client (class 0x41)");
  root_ = p.object;
  if (root_ == 0) throw RmError("RM_ALLOC of the root client returned handle 0", status::err_generic);
}

UniqueFd RmClient::open_control_file() const {
  const int fd = os_.open(kCtlPath, O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw OsError(cat(kCtlPath, ": open for a system-memory mapping"), err);
  }
  return UniqueFd(os_, fd);
}

RmClient::~RmClient() {
  if (root_) release(0, root_);
}

Handle RmClient::new_handle() { return next_handle_.fetch_add(1, std::memory_order_relaxed); }

void RmClient::escape(int fd, uint32_t nr, void* params, size_t size, const std::string& what) {
  if (size > kMaxIoctlSize) throw InvalidArgument(cat(what, ": parameter block of ", size, " bytes is too large"));
  if (os_.ioctl(fd, escape_request(nr, size), params) < 0) {
    const int err = errno;
    throw OsError(what, err);
  }
}

Handle RmClient::alloc(Handle parent, uint32_t cls, void* params, uint32_t params_size) {
  RmAllocParams p{};
  p.client = root_;
  p.parent = parent;
  p.object = new_handle();
  p.class_id = cls;
  p.params = ptr(params);
  p.params_size = params_size;
  const std::string what = cat("RM_ALLOC of class ", hex(cls), " under ", hex(parent), " as ", hex(p.object));
  escape(ctl_.get(), esc::rm_alloc, &p, sizeof p, what);
  check_status(p.status, what);
  return p.object;
}

NvStatus RmClient::release(Handle parent, Handle object) noexcept {
  RmFreeParams p{};
  p.client = root_;
  p.parent = parent;
  p.object = object;
  if (os_.ioctl(ctl_.get(), escape_request(esc::rm_free, sizeof p), &p) < 0) return status::err_operating_system;
  return p.status;
}

void RmClient::free(Handle parent, Handle object) {
  RmFreeParams p{};
  p.client = root_;
  p.parent = parent;
  p.object = object;
  const std::string what = cat("RM_FREE of ", hex(object), " under ", hex(parent));
  escape(ctl_.get(), esc::rm_free, &p, sizeof p, what);
  check_status(p.status, what);
}

void RmClient::control(Handle object, uint32_t cmd, void* params, uint32_t params_size) {
  RmControlParams p{};
  p.client = root_;
  p.object = object;
  p.cmd = cmd;
  p.params = ptr(params);
  p.params_size = params_size;
  const std::string what = cat("RM_CONTROL ", hex(cmd), " on ", hex(object));
  escape(ctl_.get(), esc::rm_control, &p, sizeof p, what);
  check_status(p.status, what);
}

Handle RmClient::alloc_os_memory(int fd, Handle parent, uint32_t cls, uint32_t flags, void* host, uint64_t size) {
  RmAllocMemoryWithFd p{};
  p.params.client = root_;
  p.params.parent = parent;
  p.params.object = new_handle();
  p.params.class_id = cls;
  p.params.flags = flags;
  p.params.memory = ptr(host);
  p.params.limit = size - 1;
  p.fd = -1;
  const std::string what = cat("RM_ALLOC_MEMORY of class ", hex(cls), " for ", hex(ptr(host)), "+", hex(size));
  escape(fd, esc::rm_alloc_memory, &p, sizeof p, what);
  check_status(p.params.status, what);
  return p.params.object;
}

uint64_t RmClient::map_memory(Handle device, Handle memory, uint64_t offset, uint64_t length, uint32_t flags,
                              int map_fd) {
  RmMapMemoryWithFd p{};
  p.params.client = root_;
  p.params.device = device;
  p.params.memory = memory;
  p.params.offset = offset;
  p.params.length = length;
  p.params.flags = flags;
  p.fd = map_fd;
  const std::string what = cat("RM_MAP_MEMORY of ", hex(memory), " (", hex(length), " bytes)");
  escape(ctl_.get(), esc::rm_map_memory, &p, sizeof p, what);
  check_status(p.params.status, what);
  return p.params.linear_address;
}

NvStatus RmClient::unmap_memory(Handle device, Handle memory, uint64_t cookie) noexcept {
  RmUnmapMemoryParams p{};
  p.client = root_;
  p.device = device;
  p.memory = memory;
  p.linear_address = cookie;
  if (os_.ioctl(ctl_.get(), escape_request(esc::rm_unmap_memory, sizeof p), &p) < 0)
    return status::err_operating_system;
  return p.status;
}

void RmClient::map_memory_dma(Handle device, Handle dma, Handle memory, uint64_t length, uint64_t va, uint32_t flags) {
  const MapMemoryDmaLayout& layout = branch_->map_memory_dma;
  MapMemoryDma m;
  m.client = root_;
  m.device = device;
  m.dma = dma;
  m.memory = memory;
  m.length = length;
  m.flags = flags;
  m.dma_offset = va;
  std::vector<std::byte> block(layout.size);
  encode_map_memory_dma(layout, m, block);
  const std::string what = cat("RM_MAP_MEMORY_DMA of ", hex(memory), " at ", hex(va), " (", branch_->name, ")");
  escape(ctl_.get(), esc::rm_map_memory_dma, block.data(), block.size(), what);
  const MapMemoryDma out = decode_map_memory_dma(layout, block);
  check_status(out.status, what);
  if (out.dma_offset != va)
    throw RmError(cat(what, ": mapped at ", hex(out.dma_offset), " instead"), status::err_invalid_offset);
}

NvStatus RmClient::unmap_memory_dma(Handle device, Handle dma, Handle memory, uint64_t va) noexcept {
  RmUnmapMemoryDmaParams p{};
  p.client = root_;
  p.device = device;
  p.dma = dma;
  p.memory = memory;
  p.dma_offset = va;
  if (os_.ioctl(ctl_.get(), escape_request(esc::rm_unmap_memory_dma, sizeof p), &p) < 0)
    return status::err_operating_system;
  return p.status;
}

std::vector<CardInfo> RmClient::cards() {
  std::vector<CardInfo> all(kCardInfoEntries);
  escape(ctl_.get(), esc::card_info, all.data(), all.size() * sizeof(CardInfo), "CARD_INFO");
  std::vector<CardInfo> valid;
  for (const CardInfo& c : all)
    if (c.valid) valid.push_back(c);
  return valid;
}

RmObject& RmObject::operator=(RmObject&& o) noexcept {
  if (this != &o) {
    reset();
    rm_ = o.rm_;
    parent_ = o.parent_;
    handle_ = o.handle_;
    o.handle_ = 0;
  }
  return *this;
}

void RmObject::reset() noexcept {
  if (handle_ && rm_) rm_->release(parent_, handle_);
  handle_ = 0;
}

}  // namespace hcq::nv
