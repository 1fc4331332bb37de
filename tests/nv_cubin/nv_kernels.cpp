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

const char* const kConstantBank2Source = R"(
HCQ_KERNEL(stack3, 4, 0) {
  float* __restrict__ out = HCQ_BUF(float, 0);
  const float* __restrict__ a = HCQ_BUF(const float, 1);
  const float* __restrict__ b = HCQ_BUF(const float, 2);
  const float* __restrict__ c = HCQ_BUF(const float, 3);
  HCQ_FOR_EACH_THREAD(lx, ly, lz) {
    for (int64_t gi = (int64_t)HCQ_GROUP_ID(0) * 18 + lx; gi < 18; gi += 18) {
      const int64_t r0 = gi / 9, r1 = gi / 3 % 3, r2 = gi % 3;
      const int64_t src = r0 * 3 + r1;
      const float x = r2 < 1 ? a[src] : 0.0f;
      const float y = (r2 >= 1 && r2 < 2) ? b[src] : 0.0f;
      const float z = r2 >= 2 ? c[src] : 0.0f;
      out[r0 * 9 + r1 * 3 + r2] = x + y + z;
    }
  }
}
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
