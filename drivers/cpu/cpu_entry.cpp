// The CPU backend's entry for the registry (drivers/backend_entry.hpp).
#include "backend_entry.hpp"
#include "cpu/cpu_device.hpp"

namespace {

std::unique_ptr<hcq::Device> open_cpu(const std::string& canonical) {
  return std::make_unique<hcq::cpu::CpuDevice>(canonical);
}

}  // namespace

extern "C" const hcq::backend_entry::Cpu hcq_backend_cpu = {&open_cpu};
