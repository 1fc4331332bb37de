// AmdDevice: an AMD GPU over KFD behind the HCQ Device interface, for AMD[:n] (real_os()) and SIM-AMD:<target> (a
// SimOs). Memory and info() work; queues, the compiler and programs come with the AMD queue and code-object layers.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "amd/kfd/kfd.hpp"
#include "hcq/device.hpp"
#include "hcq/signal_pool.hpp"

namespace hcq::amd {

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

  KfdGpu& gpu() { return *gpu_; }
  Os& os() { return *os_; }

 private:
  void map_signal_page(void* addr, size_t size) override;
  void unmap_signal_page(void* addr, size_t size) override;

  std::shared_ptr<Os> os_;
  std::string interface_;
  std::unique_ptr<KfdGpu> gpu_;
  mutable std::mutex mu_;
  std::map<uint64_t, std::unique_ptr<KfdBuffer>> buffers_;   // va -> our allocations
  std::map<uint64_t, std::unique_ptr<KfdBuffer>> foreign_;   // va -> host memory of others mapped here
  std::map<uint64_t, std::unique_ptr<KfdBuffer>> signal_pages_;
  bool mapper_registered_ = false;
};

// AMD:<index>: the index-th GPU node of the real KFD topology. Throws UnsupportedDriver saying why not.
std::unique_ptr<Device> open_kfd_device(const std::string& name, unsigned index);
// A device over an Os that routes to some KFD (used by the simulator): the first GPU node there.
std::unique_ptr<Device> open_kfd_device_on(const std::string& name, std::shared_ptr<Os> os, unsigned index,
                                           const std::string& interface);

}  // namespace hcq::amd
