// The NVIDIA backend's entry for the registry (drivers/backend_entry.hpp).
#include "backend_entry.hpp"
#include "common/gpu_diagnosis.hpp"
#include "nv/rm/abi/branch.hpp"
#include "nv/rm/nv_device.hpp"

namespace {

// What /proc/driver/nvidia/version says, and the driver branches the backend has RM layouts for.
void describe_nv_support(hcq::Os&, hcq::GpuFacts& facts, hcq::BackendSupport& support) {
  if (facts.nvidia_version_text)
    if (const auto v = hcq::nv::abi::parse_proc_version(*facts.nvidia_version_text))
      facts.nvidia_module = hcq::NvidiaModule{v->text, v->major, v->open_module};
  support.nv_backend_built = true;
  for (const hcq::nv::abi::BranchAbi& b : hcq::nv::abi::supported_branches()) support.nv_branches.push_back(b.major);
  support.nv_needs_open_module = false;  // RmClient accepts either module
}

}  // namespace

extern "C" const hcq::backend_entry::Gpu hcq_backend_nv = {&hcq::nv::open_nv_device, &describe_nv_support};
