#include "framework/jit/memory.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "framework/schedule/memory_plan.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"

namespace hcq::fw {
namespace {

// One allocation to place: a schedule's arena (record, arena index) or a buffer realized inside.
struct Alloc {
  Device* device = nullptr;
  uint64_t bytes = 0;
  size_t first = SIZE_MAX, last = 0;                                         // global step positions
  std::vector<std::pair<const std::shared_ptr<Buffer>*, uint64_t>> members;  // a buffer and its offset inside
};

}  // namespace

CapturedPlan plan_captured_memory(const Capture& capture, const std::unordered_set<const Buffer*>& keep) {
  CapturedPlan plan;
  // References the records hold, per buffer.
  std::unordered_map<const Buffer*, long> held;
  for (const Capture::Record& r : capture.records())
    for (const std::shared_ptr<Buffer>& b : r.bufs)
      if (b) ++held[b.get()];

  std::vector<Alloc> allocs;
  std::map<std::pair<size_t, int>, size_t> arena_alloc;    // (record, arena) -> allocs index
  std::unordered_map<const Buffer*, size_t> buffer_alloc;  // buffer realized inside -> allocs index
  size_t position = 0;
  for (size_t ri = 0; ri < capture.records().size(); ++ri) {
    const Capture::Record& r = capture.records()[ri];
    const Schedule& s = *r.schedule;
    auto alloc_of = [&](uint32_t slot) -> Alloc* {
      const std::shared_ptr<Buffer>& b = r.bufs[slot];
      if (!b || keep.count(b.get())) return nullptr;
      const Slot& sl = s.slots[slot];
      if (sl.role == Slot::Role::temp && sl.arena >= 0) {
        auto [it, fresh] = arena_alloc.try_emplace({ri, sl.arena}, allocs.size());
        if (fresh)
          allocs.push_back(Alloc{&b->device(), std::max<uint64_t>(s.arenas[sl.arena].bytes, 1), SIZE_MAX, 0, {}});
        Alloc& a = allocs[it->second];
        if (std::ranges::find(a.members, &b, [](const auto& m) { return m.first; }) == a.members.end())
          a.members.emplace_back(&b, sl.offset);
        return &a;
      }
      if (auto it = buffer_alloc.find(b.get()); it != buffer_alloc.end()) return &allocs[it->second];
      // Realized inside (an output slot of its realize) and held by nobody but the records.
      if (sl.role != Slot::Role::output || b.use_count() != held[b.get()]) return nullptr;
      buffer_alloc.emplace(b.get(), allocs.size());
      allocs.push_back(Alloc{&b->device(), b->size(), SIZE_MAX, 0, {{&b, 0}}});
      return &allocs.back();
    };
    for (const Step& st : s.steps) {
      for (uint32_t slot : st.slots)
        if (Alloc* a = alloc_of(slot)) {
          a->first = std::min(a->first, position);
          a->last = std::max(a->last, position);
        }
      ++position;
    }
  }

  // One arena per device.
  std::map<Device*, std::vector<size_t>> by_device;
  for (size_t k = 0; k < allocs.size(); ++k)
    if (allocs[k].first != SIZE_MAX) by_device[allocs[k].device].push_back(k);
  for (auto& [device, list] : by_device) {
    std::vector<Lifetime> lt;
    for (size_t k : list) lt.push_back(Lifetime{allocs[k].bytes, allocs[k].first, allocs[k].last});
    const Placement pl = plan_memory(lt);
    Buffer arena(*device, std::max<uint64_t>(pl.arena_bytes, 1));
    plan.arena_bytes += pl.arena_bytes;
    for (size_t j = 0; j < list.size(); ++j) {
      const Alloc& a = allocs[list[j]];
      plan.planned_bytes += a.bytes;
      for (const auto& [buf, offset] : a.members)
        plan.relocated.emplace(buf->get(),
                               std::make_shared<Buffer>(arena.view(pl.offsets[j] + offset, (*buf)->size())));
    }
  }
  return plan;
}

}  // namespace hcq::fw
