// What the registry asks of each backend, and how it learns which backends a program holds.
//
// Each backend library defines one entry below, in one file beside its code (drivers/cpu/cpu_entry.cpp, ...). The
// registry refers to the entries weakly: a backend whose library is not on the link line leaves its entry's address
// null, and the registry says so when a device of that kind is asked for. A static library member is only linked
// when something refers to it strongly, so whoever links a backend also names its entry as undefined
// (-Wl,--undefined=hcq_backend_amd): hcq_dep does, and so do the Libs of hcq.pc and hcq-cpu.pc.
//
// The entries are C symbols so that those link flags are plain names.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace hcq {

class Device;
class Os;
struct BackendSupport;
struct GpuFacts;

namespace backend_entry {

struct Cpu {
  std::unique_ptr<Device> (*open)(const std::string& canonical);
};

// A backend over a kernel driver (AMD over KFD, NV over RM + UVM).
struct Gpu {
  std::unique_ptr<Device> (*open)(const std::string& canonical, unsigned index);
  // Adds the backend's own view to the PCI GPU report: what it asks of the kernel driver and what the driver says.
  void (*describe_support)(Os& os, GpuFacts& facts, BackendSupport& support);
};

// An adapter over a vendor's user-space driver library (CUDA over libcuda): `<prefix>:<n>` is the library's device n.
struct Adapter {
  std::unique_ptr<Device> (*open)(const std::string& canonical, unsigned index);
};

// A simulated GPU: `<prefix>:<target>` opens a machine of `gpus` GPUs and returns GPU 0; `<prefix>:<target>:<n>`
// is GPU n of that machine, opened beside `first`.
struct Simulator {
  std::unique_ptr<Device> (*open)(const std::string& canonical, const std::string& target, unsigned gpus);
  std::unique_ptr<Device> (*open_peer)(const std::string& canonical, Device& first, unsigned index);
  std::vector<std::string> (*targets)();  // in table order
};

}  // namespace backend_entry
}  // namespace hcq

extern "C" {
extern const hcq::backend_entry::Cpu hcq_backend_cpu;            // drivers/cpu/cpu_entry.cpp
extern const hcq::backend_entry::Gpu hcq_backend_amd;            // drivers/amd/kfd/amd_entry.cpp
extern const hcq::backend_entry::Gpu hcq_backend_nv;             // drivers/nv/rm/nv_entry.cpp
extern const hcq::backend_entry::Adapter hcq_backend_cuda;       // drivers/cuda/cuda_entry.cpp
extern const hcq::backend_entry::Simulator hcq_backend_sim_amd;  // drivers/sim/kfd/sim_amd_entry.cpp
extern const hcq::backend_entry::Simulator hcq_backend_sim_nv;   // drivers/sim/nv/sim_nv_entry.cpp
}
