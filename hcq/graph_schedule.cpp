// GraphSchedule: which cross-queue waits a graph needs. Every queue keeps a vector clock: for each queue, the
// highest progress value it is known to have passed. A dependency is encoded as a wait only when the clock of
// the waiting queue does not already cover it, and of several candidate waits for one call those implied by
// another are dropped. Queues are in order, so dependencies within a queue need nothing.
#include <algorithm>
#include <unordered_map>

#include "hcq/error.hpp"
#include "hcq/graph.hpp"

namespace hcq {
namespace {

struct PastAccess {
  uint64_t lo, hi;
  bool write;
  uint32_t call;
};

}  // namespace

size_t GraphSchedule::num_waits() const {
  size_t n = 0;
  for (const Step& s : steps) n += s.waits.size();
  for (const auto& e : exit_waits) n += e.size();
  return n;
}

GraphSchedule GraphSchedule::build(const Input& in) {
  const uint32_t D = in.num_devices;
  const size_t Q = in.queue_device.size();
  if (D == 0 || Q < D) throw InvalidArgument(cat("graph schedule: ", D, " devices and ", Q, " queues"));
  for (size_t q = 0; q < Q; ++q) {
    if (in.queue_device[q] >= D)
      throw InvalidArgument(cat("graph schedule: queue ", q, " is on device ", in.queue_device[q], " of ", D));
    if (q < D && in.queue_device[q] != q)
      throw InvalidArgument(cat("graph schedule: queue ", q, " must be the compute queue of device ", q));
  }

  GraphSchedule s;
  s.steps.resize(in.calls.size());
  s.exit_waits.resize(D);
  s.entry_signals.assign(D, 0);
  s.last_value.assign(Q, 0);
  for (uint32_t d = 0; d < D; ++d) s.last_value[d] = kEntryValue;

  // clock[q][p]: progress of queue p that queue q has seen (at its current end). A compute queue starts past its
  // own entry; entry_clock[d] is what its entry knows.
  std::vector<std::vector<uint64_t>> clock(Q, std::vector<uint64_t>(Q, 0));
  for (uint32_t d = 0; d < D; ++d) clock[d][d] = kEntryValue;
  std::vector<std::vector<uint64_t>> entry_clock(clock.begin(), clock.begin() + D);
  std::vector<std::vector<uint64_t>> step_clock(in.calls.size());  // clock of each call's queue just after it
  auto clock_at = [&](const Wait& w) -> const std::vector<uint64_t>& {
    return w.value == kEntryValue ? entry_clock[w.queue] : step_clock[w.value - 2];
  };
  auto mark_signal = [&](const Wait& w) {
    if (w.value == kEntryValue) s.entry_signals[w.queue] = 1;
    else s.steps[w.value - 2].signals = true;
  };

  // Waits for `need` (per queue, 0: none) on queue q, pruned; updates q's clock.
  std::vector<uint64_t> need(Q);
  std::vector<Wait> candidates;
  auto place_waits = [&](uint32_t q, std::vector<Wait>& out) {
    candidates.clear();
    for (uint32_t p = 0; p < Q; ++p)
      if (p != q && need[p] > clock[q][p]) candidates.push_back({p, need[p]});
    for (const Wait& w : candidates) {
      const bool implied = std::any_of(candidates.begin(), candidates.end(), [&](const Wait& o) {
        return o.queue != w.queue && clock_at(o)[w.queue] >= w.value;
      });
      if (!implied) out.push_back(w);
    }
    for (const Wait& w : out) {
      const auto& known = clock_at(w);
      for (size_t p = 0; p < Q; ++p) clock[q][p] = std::max(clock[q][p], known[p]);
      mark_signal(w);
    }
  };

  // Earlier accesses, by address variable (-1: constant addresses). Scanned linearly: built once.
  std::unordered_map<int32_t, std::vector<PastAccess>> accesses;
  for (size_t j = 0; j < in.calls.size(); ++j) {
    const Input::Call& call = in.calls[j];
    const uint32_t q = call.queue;
    if (q >= Q) throw InvalidArgument(cat("graph schedule: call ", j, " on queue ", q, " of ", Q));
    std::fill(need.begin(), need.end(), 0);
    for (const Range& r : call.ranges) {
      auto it = accesses.find(r.var);
      if (it == accesses.end()) continue;
      for (const PastAccess& a : it->second) {
        if (a.lo < r.hi && r.lo < a.hi && (a.write || r.write)) {
          const uint32_t p = in.calls[a.call].queue;
          need[p] = std::max(need[p], value_of(a.call));
        }
      }
    }
    // Every call comes after every device's entry: external work on any graph device is done first (which
    // device owns which memory is not known here). Pruned once a queue has seen the entry.
    for (uint32_t d = 0; d < D; ++d) need[d] = std::max(need[d], kEntryValue);
    place_waits(q, s.steps[j].waits);
    s.steps[j].queue = q;
    clock[q][q] = value_of(j);
    step_clock[j] = clock[q];
    s.last_value[q] = value_of(j);
    for (const Range& r : call.ranges) accesses[r.var].push_back({r.lo, r.hi, r.write, static_cast<uint32_t>(j)});
  }

  // Each device's exit comes after the last call of every queue, so its timeline value means "the graph is done".
  for (uint32_t d = 0; d < D; ++d) {
    for (size_t p = 0; p < Q; ++p) need[p] = s.last_value[p];
    place_waits(d, s.exit_waits[d]);
  }
  return s;
}

}  // namespace hcq
