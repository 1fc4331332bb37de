// NvDevice: an NVIDIA GPU over RM and UVM behind the HCQ Device interface, for NV[:n] (real_os()) and
// SIM-NV:<arch> (a SimOs with the simulated driver). Bring-up, info() and memory (VRAM and host, mapped on the host
// and on the GPU at the same VA); one channel group with a compute and a copy channel, made on the first
// new_queue and shared by every queue of that kind (nv_queue.hpp); programs are cubins (nv_program.hpp) compiled by
// NvCompiler for the GPU's SM version.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "hcq/backend/signal_pool.hpp"
#include "hcq/device.hpp"
#include "nv/rm/nv_channel.hpp"
#include "nv/rm/nv_gpu.hpp"

namespace hcq::nv {

class Cubin;
class NvCompiler;
class NvRing;

// What else must know about code loaded on the GPU (the simulator builds and maps host twins). Both may be empty.
struct NvProgramHooks {
  // After the image of `cubin` was uploaded at GPU VA `base`, before load_program returns. May throw: the load then
  // fails with that error and the image is freed.
  std::function<void(uint64_t base, const Cubin& cubin)> loaded;
  // When the program of the image at `base` is destroyed, after the device drained, before the image is freed.
  std::function<void(uint64_t base)> unloaded;
};

class NvDevice final : public Device, private SignalPool::PageMapper {
 public:
  // `os` is kept alive as long as the device. `interface`: "rm" or "sim-rm".
  NvDevice(std::string name, std::shared_ptr<Os> os, const abi::CardInfo& card, std::string interface);
  ~NvDevice() override;

  DeviceInfo info() const override;
  std::unique_ptr<HWQueue> new_queue(QueueKind kind) override;
  Allocation alloc_memory(uint64_t size, const BufferSpec& spec) override;
  void free_memory(const Allocation& a) override;
  void map_memory(const Allocation& a) override;
  Compiler& compiler() override;
  std::unique_ptr<Program> load_program(const std::string& name, std::span<const uint8_t> binary) override;
  // Signal timestamps are the GPU timer: nanoseconds.
  double ticks_to_us(uint64_t ticks) const override { return static_cast<double>(ticks) / 1000.0; }
  // The GPU, the timeline signal and each channel's GPGet/GPPut, the entry there and its last completion signal.
  std::string describe_state() const override;
  std::vector<capture::RingDump> pending_rings() const override;
  // A channel whose error notifier RM wrote: the DeviceFault naming the channel, the RM error (MMU fault, PBDMA
  // error, GR exception, CE error), the GPFIFO position and entry, the signal values and the channel details.
  // For an MMU fault or a GR exception it also asks RM, through the SM debugger object, what it recorded for the
  // compute context (nv/rm/abi/debugger.hpp): faulting VA, fault type, access type, GPC and client, or the SMs'
  // error registers; if that query fails the message says why and keeps everything else.
  // The first one found stays (the same exception every time).
  std::exception_ptr poll_fault() const override;

  NvGpu& gpu() { return *gpu_; }
  Os& os() { return *os_; }
  // The OS seam this device's driver context lives behind: another GPU of the same machine opens over it (peers).
  std::shared_ptr<Os> shared_os() const { return os_; }
  // The program hooks installed (empty ones if none): a peer GPU of the same machine installs the same.
  NvProgramHooks program_hooks() const;
  // Installs the program hooks (before any program is loaded; programs loaded earlier keep the old ones).
  void set_program_hooks(NvProgramHooks hooks);
  // For bring-up and tests: hands raw pushbuffer words to the device's channel of `engine` as one GPFIFO entry,
  // in order with the queues' submissions. Nothing checks them: a bad method faults the channel, as on hardware.
  void submit_raw(NvEngine engine, std::span<const uint32_t> words);

  // What else can be said about a channel in fault and hang reports (the simulator: the faulting address and the
  // reason its GPU gave; real RM puts those in the kernel log only). Install before the first queue. May be empty.
  using ChannelDetails = std::function<std::string(const NvChannelView& channel)>;
  void set_channel_details(ChannelDetails details);

  // The GT200_DEBUGGER object fault reports read RM's fault records through (made with the channels; 0 before
  // the first queue, or when RM refused it: fault reports then say why). For tools and tests.
  abi::Handle fault_debugger() const;

  // The shader local memory the compute channel was last pointed at (all 0 before the first program): bytes per
  // thread, per TPC (SET_SHADER_LOCAL_MEMORY_NON_THROTTLED) and in all. For tools and tests.
  struct LocalMemory {
    uint32_t per_thread = 0;
    uint64_t per_tpc = 0, total = 0;
  };
  LocalMemory local_memory() const;

  // GPFIFO entries per channel ring and bytes of pushbuffer memory per channel.
  static constexpr uint32_t kRingEntries = 1024;
  static constexpr uint64_t kPushbufferBytes = uint64_t{1} << 20;

 private:
  // Makes the channel group and both rings on first use, each started with its channel_init_words().
  void ensure_rings();
  // Shader local memory (stack, spills) for kernels that use `bytes_per_thread`: grows the backing and points the
  // compute channel at it (SET_SHADER_LOCAL_MEMORY_*), in order with later submissions.
  void ensure_local_memory(uint32_t bytes_per_thread);

  // The fault of `ring`'s channel if its notifier was written (made once, then kept), else null. `sibling`: the
  // other ring of the channel group, or null. RM stops the whole group and writes every member's notifier alike,
  // naming the engine that faulted: the report leads with that engine's ring and names the other as stopped with it.
  std::exception_ptr fault_of(const NvRing& ring, const NvRing* sibling) const;
  std::string channel_details(const NvRing& ring) const;
  // What RM recorded about the fault in notification `n`, for the message (starts with "; "), or "" when RM keeps
  // nothing for that kind of error. Never throws.
  std::string rm_fault_info(const abi::ErrorNotification& n) const;
  // Makes debugger_ for the compute channel's compute object (rings_mu_ held, channels_ made).
  void make_fault_debugger();

  void map_signal_page(void* addr, size_t size) override;
  void unmap_signal_page(void* addr, size_t size) override;

  std::shared_ptr<Os> os_;
  std::string interface_;
  std::unique_ptr<NvGpu> gpu_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<NvMemory>> buffers_;       // va -> our allocations
  std::map<uint64_t, std::unique_ptr<NvMemory>> foreign_;       // va -> host memory of others mapped here
  std::map<uint64_t, std::unique_ptr<NvMemory>> signal_pages_;  // va -> signal pool pages mapped here
  bool mapper_registered_ = false;
  // Channels and their rings (declared after gpu_, so they go first).
  mutable std::mutex rings_mu_;
  std::unique_ptr<NvChannelGroup> channels_;
  std::unique_ptr<NvRing> compute_ring_, copy_ring_;
  // Set (release) once both rings exist: new_queue, on every eager launch, reads it without taking rings_mu_.
  std::atomic<bool> rings_ready_{false};
  ChannelDetails channel_details_;  // set before the rings exist
  // The SM debugger on the compute object (freed before the channels); why there is none if RM refused it.
  RmObject debugger_;
  std::string debugger_error_;
  // The first channel fault found (poll_fault).
  mutable std::mutex fault_mu_;
  mutable std::exception_ptr fault_;
  // Programs: one compiler for the GPU's SM version, made on first use; hooks for loads and unloads.
  std::once_flag compiler_once_;
  std::unique_ptr<NvCompiler> compiler_;
  std::shared_ptr<const NvProgramHooks> program_hooks_;  // guarded by mu_
  // Shader local memory: every backing ever set stays until the device goes (a kernel in flight may use the old one).
  mutable std::mutex slm_mu_;
  uint32_t slm_per_thread_ = 0;
  LocalMemory slm_now_;
  std::vector<std::unique_ptr<NvMemory>> slm_;
};

// NV:<index>: the index-th GPU (by minor number) of the real driver. Throws UnsupportedDriver saying why not.
std::unique_ptr<Device> open_nv_device(const std::string& name, unsigned index);
// A device over an Os that routes to some NVIDIA driver (the simulator passes its SimOs): its index-th GPU.
std::unique_ptr<Device> open_nv_device_on(const std::string& name, std::shared_ptr<Os> os, unsigned index,
                                          const std::string& interface);

}  // namespace hcq::nv
