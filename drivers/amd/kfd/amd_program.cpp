#include "amd/kfd/amd_program.hpp"

#include <algorithm>
#include <cstring>

#include "amd/kfd/amd_device.hpp"
#include "amd/kfd/kfd.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {

LaunchLimits amd_launch_limits() {
  // Every AMD target: at most 1024 work-items per workgroup (any one dimension up to that), and 32-bit grids.
  return LaunchLimits{
      .max_threads_per_group = 1024,
      .max_local = {1024, 1024, 1024},
      .max_global = {0x7fffffff, 0x7fffffff, 0x7fffffff},
  };
}

AmdProgram::AmdProgram(AmdDevice& dev, std::string name, Facts facts, std::unique_ptr<KfdBuffer> image,
                       std::function<void()> on_unload)
    : Program(dev, std::move(name), facts.num_bufs, facts.num_vals, amd_launch_limits()),
      facts_(std::move(facts)),
      image_(std::move(image)),
      on_unload_(std::move(on_unload)) {}

AmdProgram::~AmdProgram() {
  retire(on_unload_);
  image_.reset();
}

bool AmdProgram::needs_scratch(const Target& t) const {
  if (facts_.info.private_segment_size != 0) return true;
  // The field is looked up by name once per register table (per thread: a one-entry cache needs no lock); this
  // runs on every exec.
  struct Cached {
    const RegisterTable* regs = nullptr;
    const Field* scratch_en = nullptr;
  };
  thread_local Cached c;
  if (c.regs != t.regs) {
    const Field* found = nullptr;
    for (const Field& f : t.regs->find("COMPUTE_PGM_RSRC2")->fields)
      if (f.name == "scratch_en") {
        found = &f;
        break;
      }
    c = {t.regs, found};
  }
  return c.scratch_en != nullptr && c.scratch_en->get(facts_.info.rsrc2) != 0;
}

uint32_t AmdProgram::kernarg_bytes() const {
  const uint32_t n = std::max(facts_.kernarg_segment_size, launch_block_offset() + kLaunchBlockBytes);
  return (n + 15) & ~15u;
}

void AmdProgram::write_kernargs(void* dst, const uint64_t* bufs, size_t nbufs, const uint32_t* vals, size_t nvals,
                                const std::array<uint32_t, 3>& groups, const std::array<uint32_t, 3>& local) const {
  if (nbufs != num_bufs() || nvals != num_vals())
    throw InvalidArgument(cat(device().name(), ": program ", name(), " takes ", num_bufs(), " buffers and ", num_vals(),
                              " values, got ", nbufs, " and ", nvals));
  auto* p = static_cast<std::byte*>(dst);
  std::memset(p, 0, kernarg_bytes());
  if (nbufs) std::memcpy(p, bufs, nbufs * 8);
  if (nvals) std::memcpy(p + nbufs * 8, vals, nvals * 4);
  std::memcpy(p + launch_block_offset(), groups.data(), 12);
  std::memcpy(p + launch_block_offset() + 12, local.data(), 12);
}

}  // namespace hcq::amd
