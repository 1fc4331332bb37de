// AmdDevice: an AMD GPU over KFD behind the HCQ Device interface, for AMD[:n] (real_os()) and SIM-AMD:<target> (a
// SimOs). Memory and info() work; queues, the compiler and programs come with the AMD queue and code-object layers.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "amd/kfd/kfd.hpp"
#include "hcq/backend/signal_pool.hpp"
#include "hcq/device.hpp"

namespace hcq::amd {

class AmdCompiler;
class CodeObject;

// What else must know about code loaded on the GPU (the simulator builds and maps host twins). Both may be empty.
struct ProgramHooks {
  // After the image of `co` was uploaded at GPU VA `base`, before load_program returns. May throw: the load then
  // fails with that error and the image is freed.
  std::function<void(uint64_t base, const CodeObject& co)> loaded;
  // When the program of the image at `base` is destroyed, after the device drained, before the image is freed.
  std::function<void(uint64_t base)> unloaded;
};

class AmdRing;  // amd_queue.hpp

class AmdDevice final : public Device, private SignalPool::PageMapper {
 public:
  // `os` is kept alive as long as the device (a SimOs owns its simulated driver). `interface`: "kfd" or "sim-kfd".
  AmdDevice(std::string name, std::shared_ptr<Os> os, const KfdNode& node, std::string interface);
  ~AmdDevice() override;

  DeviceInfo info() const override;
  std::unique_ptr<HWQueue> new_queue(QueueKind kind) override;
  Allocation alloc_memory(uint64_t size, const BufferSpec& spec) override;
  void free_memory(const Allocation& a) override;
  void map_memory(const Allocation& a) override;
  Compiler& compiler() override;
  std::unique_ptr<Program> load_program(const std::string& name, std::span<const uint8_t> binary) override;
  double ticks_to_us(uint64_t ticks) const override { return static_cast<double>(ticks) / 100.0; }  // 100 MHz
  std::string describe_state() const override;
  std::vector<capture::RingDump> pending_rings() const override;

  // The GPU's signal event, which a queue raises after writing the timeline signal (KfdGpu::signal_event_id):
  // the event page slot (mailbox) to write its id into, then the interrupt whose context id is that id.
  struct SignalEvent {
    uint64_t mailbox = 0;
    uint32_t id = 0;
  };
  // The event to raise after a signal write at `signal_addr`, or nullopt for none: a constant address raises it
  // when it is the timeline signal or its shadow; a symbolic one (graph replay's timeline, given per replay) always
  // does, since it may be either. None when the GPU has no mailbox (KfdGpu::event_slot_va).
  std::optional<SignalEvent> signal_event_for(const Sym& signal_addr) const {
    if (event_.mailbox == 0) return std::nullopt;
    if (!signal_addr.is_const() || is_timeline(signal_addr.add)) return event_;
    return std::nullopt;
  }

  KfdGpu& gpu() { return *gpu_; }
  Os& os() { return *os_; }
  // The OS seam this device's KFD process lives behind: another GPU of the same process opens over it (peers).
  std::shared_ptr<Os> shared_os() const { return os_; }
  // Installs the program hooks (before any program is loaded; programs loaded earlier keep the old ones).
  void set_program_hooks(ProgramHooks hooks);
  // The hooks installed (empty ones if none): a peer GPU of the same machine installs the same.
  ProgramHooks program_hooks() const;

 private:
  // Host waits on the timeline signal sleep in WAIT_EVENTS on the signal event, which the queues raise after every
  // timeline write; other signals get no interrupt (false: the wait backs off).
  bool sleep_on_signal(const Signal& s, uint64_t target, std::chrono::microseconds limit) const override;
  bool is_timeline(uint64_t addr) const {
    return addr == timeline_addr_[0].load(std::memory_order_relaxed) ||
           addr == timeline_addr_[1].load(std::memory_order_relaxed);
  }
  void map_signal_page(void* addr, size_t size) override;
  void unmap_signal_page(void* addr, size_t size) override;
  // The fault watcher: blocks in WAIT_EVENTS on the GPU's exception events and turns an exception of this GPU
  // into the device's sticky DeviceFault (fault_message says what it carries).
  void watch_faults();
  std::string fault_message(const KfdException& e) const;
  // Rethrows the sticky fault, if there is one (the rings' wait check).
  void check_fault() const;
  // The timeline signal's address and value.
  std::string timeline_state() const;

  std::shared_ptr<Os> os_;
  std::string interface_;
  std::unique_ptr<KfdGpu> gpu_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<KfdBuffer>> buffers_;  // va -> our allocations
  std::map<uint64_t, std::unique_ptr<KfdBuffer>> foreign_;  // va -> host memory of others mapped here
  std::map<uint64_t, std::unique_ptr<KfdBuffer>> signal_pages_;
  bool mapper_registered_ = false;
  // Hardware queues (amd_queue.hpp): one compute ring (AQL on multi-XCC parts, else PM4) and one SDMA ring, made
  // on first use, shared by every HWQueue of that kind. Declared after gpu_ so they go first.
  bool aql_compute() const;
  mutable std::mutex rings_mu_;
  std::unique_ptr<AmdRing> compute_ring_, sdma_ring_;
  // Programs: one compiler for the device's target, made on first use; hooks for loads and unloads.
  std::once_flag compiler_once_;
  std::unique_ptr<AmdCompiler> compiler_;
  std::shared_ptr<const ProgramHooks> program_hooks_;  // guarded by mu_
  // The sticky fault as recorded (Device keeps it too; this copy is for the rings' wait check).
  mutable std::mutex fault_mu_;
  std::exception_ptr fault_;
  std::atomic<bool> stopping_{false};
  SignalEvent event_;  // set once in the constructor
  // The timeline signal's address and, once the device swapped to it, the shadow's (Device keeps them private;
  // on_timeline_reset tells us of a swap). Read by encoders and waiters on any thread.
  std::atomic<uint64_t> timeline_addr_[2] = {0, 0};
  std::thread fault_watcher_;  // started last in the constructor, joined first in the destructor
};

// AMD:<index>: the index-th GPU node of the real KFD topology. Throws UnsupportedDriver saying why not.
std::unique_ptr<Device> open_kfd_device(const std::string& name, unsigned index);
// A device over an Os that routes to some KFD (used by the simulator): the first GPU node there.
std::unique_ptr<Device> open_kfd_device_on(const std::string& name, std::shared_ptr<Os> os, unsigned index,
                                           const std::string& interface);

}  // namespace hcq::amd
