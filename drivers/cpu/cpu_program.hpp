// A kernel loaded on a CPU device: the relocated image, its entry point and the argument counts from its
// descriptor. The worker finds it through a handle registered in the device's mappings, so a command naming an
// unloaded program faults instead of jumping into freed code.
#pragma once

#include <cstdint>
#include <string>

#include "cpu_mappings.hpp"
#include "elf_loader.hpp"
#include "hcq/program.hpp"

namespace hcq::cpu {

class CpuDevice;

class CpuProgram final : public Program {
 public:
  CpuProgram(CpuDevice& dev, std::string name, ElfImage image, KernelEntry entry, uint64_t handle);
  // Waits for the device (errors ignored), then unregisters: a launch still running holds the mappings' shared
  // lock, so the code is not unmapped under it.
  ~CpuProgram() override;

  uint64_t handle() const { return handle_; }

 private:
  CpuDevice& cpu_;
  ElfImage image_;
  uint64_t handle_;
};

}  // namespace hcq::cpu
