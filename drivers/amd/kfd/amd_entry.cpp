// The AMD backend's entry for the registry (drivers/backend_entry.hpp).
#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/drm_query.hpp"
#include "amd/kfd/kfd.hpp"
#include "backend_entry.hpp"
#include "common/gpu_diagnosis.hpp"

namespace {

// The KFD ABI version and the GPUs KFD's topology lists (by render node), and the ABI range KfdGpu accepts.
void describe_amd_support(hcq::Os& os, hcq::GpuFacts& facts, hcq::BackendSupport& support) {
  if (facts.kfd.state == hcq::NodeAccess::State::ok) facts.kfd_version = hcq::amd::query_kfd_version(os);
  for (const hcq::amd::KfdNode& n : hcq::amd::kfd_topology(os)) facts.kfd_render_minors.push_back(n.render_minor);
  support.kfd_major = 1;      // KfdGpu refuses any other major
  support.kfd_min_minor = 1;  // 1.0 is the first, APU-only KFD, before the dGPU memory ioctls
}

}  // namespace

extern "C" const hcq::backend_entry::Gpu hcq_backend_amd = {&hcq::amd::open_kfd_device, &describe_amd_support};
