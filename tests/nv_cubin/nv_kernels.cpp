#include "nv_kernels.hpp"

#include <map>
#include <mutex>

#include "hcq/error.hpp"
#include "nv/compiler/nv_compiler.hpp"
#include "nv/compiler/nvrtc.hpp"

namespace hcq::nv::test {

const char* const kSharedGlobalSource = R"(
__device__ float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ float* table_ptr = table;
HCQ_KERNEL(reverse_tile, 1, 0) {
  __shared__ float tile[256];
  HCQ_FOR_EACH_THREAD(x, y, z) {
    float* out = HCQ_BUF(float, 0);
    tile[x] = out[HCQ_GLOBAL_ID(0, x)] + table_ptr[x & 3];
    __syncthreads();
    out[HCQ_GLOBAL_ID(0, x)] = tile[255 - x];
  }
}
extern "C" __global__ void __launch_bounds__(128) bounded(float* out) { out[threadIdx.x] = 1.0f; }
)";

bool nvrtc_available() {
  static const bool ok = [] {
    try {
      (void)Nvrtc::open(Nvrtc::default_candidates());
      return true;
    } catch (const CompileError&) {
      return false;
    }
  }();
  return ok;
}

const std::vector<uint8_t>& cubin_for(const std::string& arch, const char* source) {
  static std::mutex mu;
  static std::map<std::pair<std::string, const char*>, std::vector<uint8_t>> cache;
  std::lock_guard lock(mu);
  auto it = cache.find({arch, source});
  if (it == cache.end()) it = cache.emplace(std::make_pair(arch, source), NvCompiler(arch).compile(source)).first;
  return it->second;
}

}  // namespace hcq::nv::test
