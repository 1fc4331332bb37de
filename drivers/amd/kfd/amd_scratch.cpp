#include "amd/kfd/amd_scratch.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "amd/aql_facts.hpp"
#include "hcq/error.hpp"

namespace hcq::amd {
namespace {

constexpr uint32_t kLanes = 64;              // slots are sized for wave64
constexpr uint32_t kScratchSlotsPerCu = 32;  // KFD's max_slots_scratch_cu on every part we support

const Field& tmpring_field(const Target& t, std::string_view name) {
  const Register* r = t.regs->find("COMPUTE_TMPRING_SIZE");
  if (r)
    for (const Field& f : r->fields)
      if (f.name == name) return f;
  throw std::logic_error(cat("register table ", t.regs->name, " lacks COMPUTE_TMPRING_SIZE.", name));
}

}  // namespace

uint32_t max_scratch_lane_bytes(const Target& t) {
  const uint64_t max_wave = uint64_t{tmpring_field(t, "wavesize").mask()} << t.regs->scratch_wave_shift;
  return static_cast<uint32_t>(std::min<uint64_t>(max_wave / kLanes, 0xffffffffu));
}

ScratchLayout scratch_layout(const Target& t, uint32_t lane_bytes, uint32_t cu_count, uint32_t array_count,
                             uint32_t num_xcc) {
  if (lane_bytes > max_scratch_lane_bytes(t))
    throw InvalidArgument(cat("kernel needs ", lane_bytes, " bytes of scratch per work-item; ", t.name,
                              " allows at most ", max_scratch_lane_bytes(t),
                              " (COMPUTE_TMPRING_SIZE.WAVESIZE over 64 lanes)"));
  const Field& waves_f = tmpring_field(t, "waves");
  const Field& size_f = tmpring_field(t, "wavesize");
  const uint64_t unit = uint64_t{1} << t.regs->scratch_wave_shift;
  ScratchLayout l;
  const uint64_t units = std::max<uint64_t>(1, (uint64_t{lane_bytes} * kLanes + unit - 1) / unit);
  l.wave_bytes = static_cast<uint32_t>(units * unit);
  l.lane_bytes = l.wave_bytes / kLanes;
  const uint32_t xccs = std::max<uint32_t>(1, num_xcc);
  const uint32_t slots_per_xcc = kScratchSlotsPerCu * std::max<uint32_t>(1, cu_count / xccs);
  const uint32_t groups = t.regs->tmpring_waves_per_se ? std::max<uint32_t>(1, array_count / xccs) : 1;
  l.waves = std::clamp<uint32_t>(slots_per_xcc / groups, 1, waves_f.mask());
  l.bytes = uint64_t{l.waves} * groups * xccs * l.wave_bytes;
  l.tmpring = waves_f.place(l.waves) | size_f.place(units);
  return l;
}

AmdScratch::AmdScratch(KfdGpu& gpu, const Target& t, std::byte* amd_queue, std::string what)
    : gpu_(gpu), t_(t), amd_queue_(amd_queue), what_(std::move(what)) {}

ScratchLayout AmdScratch::layout() const {
  std::lock_guard lock(mu_);
  return cur_;
}

AmdScratch::Use AmdScratch::ensure(uint32_t lane_bytes) {
  std::lock_guard lock(mu_);
  if (!buffers_.empty() && cur_.lane_bytes >= lane_bytes) return {buffers_.back()->va(), cur_.tmpring};
  const KfdNode& n = gpu_.node();
  // At least double what we have (bounded by the field), so a kernel slightly larger than the last does not
  // allocate again.
  const uint32_t want = std::max(lane_bytes, std::min(cur_.lane_bytes * 2, max_scratch_lane_bytes(t_)));
  ScratchLayout l;
  try {
    l = scratch_layout(t_, want, n.cu_count(), n.array_count, n.num_xcc);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(cat(what_, ": ", e.what()));
  }
  std::unique_ptr<KfdBuffer> b = gpu_.alloc(l.bytes, KfdBuffer::Kind::vram, KfdAllocOptions{});
  const uint64_t va = b->va();
  buffers_.push_back(std::move(b));
  cur_ = l;
  if (amd_queue_) publish_aql(l, va);
  return {va, l.tmpring};
}

void AmdScratch::publish_aql(const ScratchLayout& l, uint64_t va) {
  // The CP reads these at each dispatch, possibly while we write. The new buffer is larger than every size the
  // queue held before, so the location goes first: any mix a dispatch may read is then covered by memory.
  const Layout& q = aql::kAmdQueue;
  auto* words = reinterpret_cast<uint32_t*>(amd_queue_);
  auto put64 = [&](const char* name, uint64_t v) {
    const Field& f = *q.find(name);
    __atomic_store_n(reinterpret_cast<uint64_t*>(words + f.dword), v, __ATOMIC_RELEASE);
  };
  auto put32 = [&](const char* name, uint32_t v) {
    __atomic_store_n(words + q.find(name)->dword, v, __ATOMIC_RELEASE);
  };
  put64("scratch_backing_memory_location", va);
  put64("scratch_backing_memory_byte_size", l.bytes);
  put32("scratch_wave64_lane_byte_size", l.lane_bytes);
  put32("compute_tmpring_size", l.tmpring);
}

}  // namespace hcq::amd
