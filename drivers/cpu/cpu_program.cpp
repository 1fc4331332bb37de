#include "cpu_program.hpp"

#include "cpu_device.hpp"
#include "cpu_limits.hpp"

namespace hcq::cpu {

CpuProgram::CpuProgram(CpuDevice& dev, std::string name, ElfImage image, KernelEntry entry, uint64_t handle)
    : Program(dev, std::move(name), entry.nbufs, entry.nvals, kCpuLaunchLimits),
      cpu_(dev),
      image_(std::move(image)),
      handle_(handle) {
  cpu_.mappings().add_program(handle_, entry);
}

CpuProgram::~CpuProgram() {
  try {
    cpu_.synchronize();
  } catch (...) {
    // A faulted device: what it did not run will not run; the program can go.
  }
  cpu_.mappings().remove_program(handle_);
}

}  // namespace hcq::cpu
