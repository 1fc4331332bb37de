#include "nv/rm/nv_program.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "hcq/backend/align.hpp"
#include "hcq/error.hpp"
#include "nv/facts/arch.hpp"
#include "nv/rm/nv_device.hpp"
#include "nv/rm/nv_queue.hpp"

namespace hcq::nv {

namespace {

// Groups of up to `threads` threads: block dims as CUDA's 1024 x 1024 x 64, none past the thread count; grid dims as
// the QMD holds them: CTA_RASTER_WIDTH has 32 bits (hcq keeps to 2^31 - 1), HEIGHT and DEPTH 16.
hcq::LaunchLimits limits_for_threads(uint32_t threads) {
  hcq::LaunchLimits l;
  l.max_threads_per_group = threads;
  const uint32_t block_max[3] = {1024, 1024, 64};
  for (int i = 0; i < 3; ++i) l.max_local[i] = std::min<uint32_t>(block_max[i], l.max_threads_per_group);
  l.max_global[0] = 0x7fffffff;
  l.max_global[1] = 65535;
  l.max_global[2] = 65535;
  return l;
}

}  // namespace

hcq::LaunchLimits nv_arch_launch_limits(const NvArchInfo& arch) {
  return limits_for_threads(launch_limits(arch).max_threads_per_block);
}

hcq::LaunchLimits nv_launch_limits(const NvArchInfo& arch, const CubinKernel& k) {
  // Registers are handed to warps in units of 256: a block of W warps needs W * roundup(regs * 32, 256) of the SM's
  // register file.
  const nv::LaunchLimits lim = launch_limits(arch);
  const uint64_t regs = std::max(1u, k.registers);
  const uint64_t per_warp = align_up(regs * lim.warp_size, lim.register_alloc_unit);
  uint64_t threads = std::min<uint64_t>(lim.max_threads_per_block, lim.registers_per_block / per_warp * lim.warp_size);
  if (k.max_threads) {
    const uint64_t bound =
        uint64_t{(*k.max_threads)[0]} * std::max(1u, (*k.max_threads)[1]) * std::max(1u, (*k.max_threads)[2]);
    if (bound != 0) threads = std::min(threads, bound);
  }
  return limits_for_threads(static_cast<uint32_t>(threads));
}

std::vector<uint8_t> cbank0_prefix(const NvArchInfo& arch, const CubinKernel& k) {
  const uint32_t windows = arch.cbank0_windows_word * 4u, stack_top = arch.cbank0_stack_top_word * 4u;
  const uint32_t prefix_end = std::max(windows + 16, stack_top + 4);
  uint64_t bytes = std::max<uint64_t>({k.cbank0_size, uint64_t{k.param_offset} + k.param_size, prefix_end});
  bytes = (bytes + 15) / 16 * 16;
  std::vector<uint8_t> cb(bytes, 0);
  // Only when the parameters start past it (every CUDA 13 cubin: 0x160 or more, 0x380 on Blackwell); a bank laid
  // out otherwise is taken as the cubin says.
  if (k.param_offset >= prefix_end) {
    const uint64_t addresses[2] = {kSharedWindow, kLocalWindow};
    std::memcpy(cb.data() + windows, addresses, sizeof(addresses));
    const uint32_t top = kCudaStackTop;
    std::memcpy(cb.data() + stack_top, &top, sizeof(top));
  }
  return cb;
}

namespace {
uint64_t next_serial() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

NvProgram::NvProgram(NvDevice& dev, std::string name, Facts facts, std::unique_ptr<NvMemory> image,
                     std::function<void()> on_unload)
    : Program(dev, std::move(name), facts.num_bufs, facts.num_vals, facts.limits),
      facts_(std::move(facts)),
      serial_(next_serial()),
      image_(std::move(image)),
      on_unload_(std::move(on_unload)) {}

NvProgram::~NvProgram() {
  retire(on_unload_);
  image_.reset();
}

}  // namespace hcq::nv
