// The RM client of a process, over /dev/nvidiactl, through the OS seam only (the same code runs on the real driver
// and on the simulated one). Opening it reads the driver's version, matches a supported branch and allocates the
// root client; every RM call goes through here and turns a failed ioctl or a non-OK NV_STATUS into a typed error that
// names the call, the class or command, the handle and the status.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "hcq/backend/os.hpp"
#include "hcq/error.hpp"
#include "nv/rm/abi/branch.hpp"
#include "nv/rm/abi/ioctl.hpp"

namespace hcq::nv {

// RM refused a call. status() is the NV_STATUS; the message names call, class/command, handle and status name.
// NV_ERR_NO_MEMORY and NV_ERR_INSUFFICIENT_RESOURCES are thrown as hcq::OutOfMemory instead (same message).
class RmError : public Error {
 public:
  RmError(const std::string& what, abi::NvStatus status) : Error(what), status_(status) {}
  abi::NvStatus status() const noexcept { return status_; }

 private:
  abi::NvStatus status_;
};

// Throws RmError / OutOfMemory for a non-OK status: "<what>: <NV_ERR_NAME> (0x..)".
void check_status(abi::NvStatus status, const std::string& what);

// The driver's version as the control device reports it (CHECK_VERSION_STR query), cross-checked with
// /proc/driver/nvidia/version when that is readable. Throws UnsupportedDriver when neither gives a version.
abi::DriverVersion read_driver_version(Os& os, int ctl_fd);

class RmClient {
 public:
  // Opens /dev/nvidiactl, reads the driver version, refuses an unsupported branch (UnsupportedDriver naming it and
  // the supported ones), and allocates the root client.
  explicit RmClient(Os& os);
  ~RmClient();  // frees the root client (RM frees everything under it) and closes the fd
  RmClient(const RmClient&) = delete;
  RmClient& operator=(const RmClient&) = delete;

  Os& os() const { return os_; }
  int ctl_fd() const { return ctl_.get(); }
  // A second /dev/nvidiactl file, for one CPU mapping of memory that lies in no BAR (RM system memory): RM ties such
  // a mapping to the control device, and each file holds one pending mapping until its mmap.
  UniqueFd open_control_file() const;
  abi::Handle root() const { return root_; }
  const abi::DriverVersion& version() const { return version_; }
  const abi::BranchAbi& branch() const { return *branch_; }

  // A fresh handle for an object of this client (we name every object but the root ourselves). Thread-safe.
  abi::Handle new_handle();

  // RM_ALLOC (NVOS21) of `cls` under `parent` with the class's parameter block; returns the new object's handle.
  abi::Handle alloc(abi::Handle parent, uint32_t cls, void* params, uint32_t params_size);
  template <class P>
  abi::Handle alloc(abi::Handle parent, uint32_t cls, P& params) {
    return alloc(parent, cls, &params, sizeof(P));
  }
  abi::Handle alloc(abi::Handle parent, uint32_t cls) { return alloc(parent, cls, nullptr, 0); }
  // RM_FREE. free() throws; release() is for destructors: it reports nothing and returns the status.
  void free(abi::Handle parent, abi::Handle object);
  abi::NvStatus release(abi::Handle parent, abi::Handle object) noexcept;
  // RM_CONTROL of `cmd` on `object`.
  void control(abi::Handle object, uint32_t cmd, void* params, uint32_t params_size);
  template <class P>
  void control(abi::Handle object, uint32_t cmd, P& params) {
    control(object, cmd, &params, sizeof(P));
  }
  // RM_ALLOC_MEMORY (NVOS02) through `fd` (the escape is issued there; -1 in the block: no mapping fd).
  abi::Handle alloc_os_memory(int fd, abi::Handle parent, uint32_t cls, uint32_t flags, void* host, uint64_t size);
  // RM_MAP_MEMORY (NVOS33): prepares `map_fd` (a REGISTER_FD'ed /dev/nvidia<N>) so that mmap of it at offset 0
  // maps [offset, offset + length) of `memory`. The caller mmaps; unmap_memory() after munmap.
  uint64_t map_memory(abi::Handle device, abi::Handle memory, uint64_t offset, uint64_t length, uint32_t flags,
                      int map_fd);
  abi::NvStatus unmap_memory(abi::Handle device, abi::Handle memory, uint64_t cookie) noexcept;
  // RM_MAP_MEMORY_DMA (NVOS46, in this branch's layout): maps `memory` into the VA object `dma` at `va` exactly.
  void map_memory_dma(abi::Handle device, abi::Handle dma, abi::Handle memory, uint64_t length, uint64_t va,
                      uint32_t flags);
  abi::NvStatus unmap_memory_dma(abi::Handle device, abi::Handle dma, abi::Handle memory, uint64_t va) noexcept;

  // The GPUs the driver probed (CARD_INFO), valid entries only, in minor-number order.
  std::vector<abi::CardInfo> cards();

  // An escape on `fd`: throws OsError "<what>: <strerror>" when the ioctl fails.
  void escape(int fd, uint32_t nr, void* params, size_t size, const std::string& what);

 private:
  Os& os_;
  UniqueFd ctl_;
  abi::DriverVersion version_;
  const abi::BranchAbi* branch_ = nullptr;
  abi::Handle root_ = 0;
  std::atomic<uint32_t> next_handle_;
};

// An RM object that frees itself (RM_FREE under its parent) when destroyed. Empty when handle() is 0.
class RmObject {
 public:
  RmObject() = default;
  RmObject(RmClient& rm, abi::Handle parent, abi::Handle handle) : rm_(&rm), parent_(parent), handle_(handle) {}
  RmObject(RmObject&& o) noexcept : rm_(o.rm_), parent_(o.parent_), handle_(o.handle_) { o.handle_ = 0; }
  RmObject& operator=(RmObject&& o) noexcept;
  RmObject(const RmObject&) = delete;
  RmObject& operator=(const RmObject&) = delete;
  ~RmObject() { reset(); }
  abi::Handle handle() const { return handle_; }
  explicit operator bool() const { return handle_ != 0; }
  void reset() noexcept;

 private:
  RmClient* rm_ = nullptr;
  abi::Handle parent_ = 0, handle_ = 0;
};

}  // namespace hcq::nv
