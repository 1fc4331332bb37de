// The simulated NVIDIA kernel drivers: nvidia.ko's /dev/nvidiactl and /dev/nvidia<N> (the RM API: object tree,
// controls, memory, CPU mappings, the usermode doorbell page) and nvidia-uvm.ko's /dev/nvidia-uvm (GPU and VA space
// registration, external ranges, mapping RM memory at the same VA), plus /proc/driver/nvidia/version.
//
// Validation follows the open kernel modules: an ioctl whose size does not match its escape, or an RM escape on the
// wrong kind of node, fails with EINVAL; everything past that returns 0 with an NV_STATUS in the block's status
// field, as RM does (rmapi/alloc_free.c, rmapi/control.c, kernel-open/nvidia-uvm/uvm_map_external.c).
//
// Memory: "VRAM" and "sysmem" are memfds of the simulator, mapped into the process by mmap of /dev/nvidia<N> after
// RM_MAP_MEMORY. A GPU VA resolves through the GPU's mappings (UVM external allocations, RM_MAP_MEMORY_DMA) to the
// simulator's own view of the same pages, so the process, the GPU and the simulator see one set of bytes.
//
// Channels: one ChannelRunner per GPFIFO channel object, made by the factory given here. A store of a channel's
// work-submit token to a mapped usermode page (through Os::write_doorbell32) notifies its runner once the channel
// group was scheduled. refuse_as_nvproxy() makes it answer as the driver does behind gVisor's proxy. One SimNv is one machine with one process on it. Thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sim/nv/channel_runner.hpp"
#include "sim/nv/rm_object_tree.hpp"
#include "sim/nv/sim_nv_gpus.hpp"
#include "sim/sim_os.hpp"

namespace hcq::sim {

class SimNv final : public SimDriver {
 public:
  static constexpr std::string_view kDefaultDriverVersion = "580.95.05";
  static constexpr uint64_t kPage = 4096;
  // Where ChannelDesc::userd_va points: a driver-private aperture above every process VA (USERD is found by RM
  // through its memory handle, not by a mapping the process made). translate() resolves it.
  static constexpr uint64_t kUserdAperture = uint64_t{1} << 56;
  static constexpr uint64_t kUserdStride = 0x1000;

  // `gpus`: simulated GPU names (SimNvGpuSpec::of), /dev/nvidia0.. in that order. `runner_factory` executes
  // channels; without one, channels only count their doorbells. `driver_version` is what the version file and
  // CHECK_VERSION_STR report ("580.95.05"; any other text, for the backend's version checks).
  explicit SimNv(const std::vector<std::string>& gpus, ChannelRunnerFactory runner_factory = {},
                 std::string driver_version = std::string(kDefaultDriverVersion));
  ~SimNv() override;
  SimNv(const SimNv&) = delete;
  SimNv& operator=(const SimNv&) = delete;

  // ---- SimDriver
  void attach(SimOs& os) override;
  bool handles_path(std::string_view path) const override;
  int open(const std::string& path, int flags) override;
  void close(int file) override;
  int ioctl(int file, unsigned long request, void* arg) override;
  void* mmap(int file, void* addr, size_t length, int prot, int flags, off_t offset, int* err) override;
  void on_munmap(void* addr, size_t length) override;
  std::optional<std::string> read_file(const std::string& path) override;
  std::vector<std::string> list_dir(const std::string& path) override;
  bool write_doorbell(volatile void* where, uint64_t value, unsigned bytes) override;

  // ---- for the engine, the device factory and tests
  // From now on, refuse what gVisor's NVIDIA proxy refuses under its default driver capabilities (compute,
  // utility), with the proxy's answers (sim/nv/nvproxy_refusals.hpp): the machine a sandboxed process sees.
  void refuse_as_nvproxy();
  size_t gpu_count() const;
  const SimNvGpuSpec& gpu_spec(size_t gpu) const;
  const std::string& driver_version() const { return version_; }
  // Host pointer for [va, va+size) if it lies in one mapping on GPU `gpu` (or in a channel's USERD); else nullptr.
  // The process's own address for those bytes when it has them mapped (the unified VA), else the simulator's.
  std::byte* translate(size_t gpu, uint64_t va, uint64_t size);
  uint64_t gpu_time_ns() const;

  struct ChannelState {
    ChannelDesc desc;
    bool scheduled = false;  // its channel group was enabled with GPFIFO_SCHEDULE
    uint64_t doorbells = 0;  // token stores seen
    bool faulted = false;
    ChannelFault fault;
    std::vector<uint32_t> engine_classes;
  };
  std::vector<ChannelState> channels() const;
  std::optional<ChannelState> channel_state(size_t gpu, uint32_t channel_id) const;
  // One line about a channel for fault and hang reports: its fault (kind, address, the reason the simulated GPU
  // gave) or, if it has none, what its runner is doing. Empty for a channel that does not exist.
  std::string describe_channel(size_t gpu, uint32_t channel_id) const;
  // Faults a channel as its runner would (ChannelHost::fault): error notifier, faulted state.
  void inject_fault(size_t gpu, uint32_t channel_id, const ChannelFault& f);
  // Non-stall interrupts raised on a GPU so far.
  uint64_t nonstall_interrupts(size_t gpu) const;

  // Internal state, shared by the files that implement the escapes (sim_nv_*.cpp); defined in sim_nv_state.hpp.
  struct State;

 private:
  State& s() const { return *state_; }
  std::unique_ptr<State> state_;
  std::string version_;
};

}  // namespace hcq::sim
