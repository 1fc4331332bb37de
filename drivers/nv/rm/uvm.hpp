// The process's UVM context over /dev/nvidia-uvm, through the OS seam: GPUs, their VA spaces and channels are
// registered here, and memory RM allocated is mapped on a GPU at the same VA it has on the host (external ranges).
// One per process and driver (see NvDriver): UVM ties its VA space to the fd and the process's address space.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "hcq/backend/os.hpp"
#include "nv/rm/abi/uvm.hpp"

namespace hcq::nv {

// "GPU-8f2c...": a UUID as nvidia-smi writes it, for messages.
std::string uuid_text(const abi::Uuid& u);

class Uvm {
 public:
  // Opens /dev/nvidia-uvm twice: the context (INITIALIZE) and the fd that holds the address space for it
  // (MM_INITIALIZE). Throws UnsupportedDriver when the UVM module is absent.
  explicit Uvm(Os& os);
  Uvm(const Uvm&) = delete;
  Uvm& operator=(const Uvm&) = delete;

  // Each throws RmError / OutOfMemory naming the call and its arguments for a non-OK status, OsError when the ioctl
  // fails. The unregister calls and free_noexcept are for destructors: they report nothing.
  void register_gpu(const abi::Uuid& gpu);
  void unregister_gpu(const abi::Uuid& gpu) noexcept;
  void register_vaspace(const abi::Uuid& gpu, int rm_fd, abi::Handle client, abi::Handle vaspace);
  void unregister_vaspace(const abi::Uuid& gpu) noexcept;
  void register_channel(const abi::Uuid& gpu, int rm_fd, abi::Handle client, abi::Handle channel, uint64_t base,
                        uint64_t length);
  void unregister_channel(const abi::Uuid& gpu, abi::Handle client, abi::Handle channel) noexcept;
  void create_external_range(uint64_t base, uint64_t length);
  // Maps RM memory `memory` at [base, base + length) (inside an external range) on `gpu`, read/write/atomic.
  void map_external(uint64_t base, uint64_t length, const abi::Uuid& gpu, int rm_fd, abi::Handle client,
                    abi::Handle memory);
  void unmap_external(uint64_t base, uint64_t length, const abi::Uuid& gpu);
  // Unmaps everything in the range and gives the external range back.
  void free(uint64_t base, uint64_t length);
  abi::NvStatus free_noexcept(uint64_t base, uint64_t length) noexcept;

  // What memory uses: [base, base + length) mapped on `gpu`. The GPUs of this context share one external range per
  // VA (a signal page or a host buffer is mapped on each of them): the first mapping creates it, the last unmapping
  // frees it, the others map and unmap only their GPU. Throws InvalidArgument for a range that overlaps another
  // without being the same.
  void map_on_gpu(uint64_t base, uint64_t length, const abi::Uuid& gpu, int rm_fd, abi::Handle client,
                  abi::Handle memory);
  void unmap_from_gpu(uint64_t base, uint64_t length, const abi::Uuid& gpu) noexcept;

 private:
  template <class P>
  void call(unsigned long cmd, P& params, const std::string& what);
  Os& os_;
  UniqueFd fd_, mm_fd_;
  struct Range {
    uint64_t length;
    uint32_t gpus;  // how many GPUs map it
  };
  std::mutex mu_;
  std::map<uint64_t, Range> ranges_;  // base -> range
};

}  // namespace hcq::nv
