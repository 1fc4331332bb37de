// Graph: build the queues of a call list once (per set), replay them by patching variables and one kick-off write.
//
// Per set and device, the compute queue reads:
//   wait(kick >= K) wait(timeline >= T-1) barrier [signal(progress, 1)]   -- the entry
//   ... its calls, each [waits] call [signal(progress, j+2)] ...
//   [waits for the last call of every queue] signal(timeline, T) signal(progress, exit)   -- the exit
// and a copy queue: wait(kick >= K), then its calls. K (the kick value), T and the timeline signal's address are
// variables patched on each replay, beside the caller's. Progress signals are reset to 0 before each replay of
// their set, once the set's previous replay is known finished; the kick value only grows (up to kick_limit).
#include "hcq/graph.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/error.hpp"
#include "hcq/program.hpp"

namespace hcq {
namespace {

constexpr size_t kMaxVars = size_t{1} << 16;  // Var ids are 16-bit

void note_var(const Sym& s, size_t& count) {
  if (!s.is_const()) count = std::max(count, static_cast<size_t>(s.var) + 1);
}

std::string call_name(size_t j, const GraphCall& c) {
  if (const auto* k = std::get_if<KernelCall>(&c))
    return cat("graph call ", j, " (kernel ", k->program ? k->program->name() : std::string("?"), ")");
  return cat("graph call ", j, " (copy)");
}

GraphSchedule::Range range_of(const Sym& addr, uint64_t size, bool write) {
  return {addr.var, addr.add, addr.add + size, write};
}

}  // namespace

struct Graph::Set {
  std::vector<OwnedSignal> progress;             // per queue
  std::vector<std::unique_ptr<HWQueue>> queues;  // per queue
  bool ran = false;                              // submitted at least once (its progress signals mean something)
};

BufferUse use(const Buffer& buffer, Access access) { return BufferUse{Sym(buffer.va()), buffer.size(), access}; }

Graph::Graph(std::vector<GraphCall> calls, GraphOptions opts) : calls_(std::move(calls)), opts_(opts) {
  check_calls();
  GraphSchedule::Input in;
  plan_queues(in);
  schedule_ = GraphSchedule::build(in);

  const size_t total = user_vars_ + 1 + 2 * devices_.size();
  if (total > kMaxVars)
    throw InvalidArgument(cat("graph: ", user_vars_, " caller variables plus ", total - user_vars_,
                              " of the graph's own exceed the ", kMaxVars, " variable ids"));
  kick_var_ = static_cast<uint16_t>(user_vars_);
  vars_.assign(total, 0);
  kick_signal_ = OwnedSignal(0, "graph kick-off");
  lock_order_.resize(devices_.size());
  for (uint32_t d = 0; d < lock_order_.size(); ++d) lock_order_[d] = d;
  std::sort(lock_order_.begin(), lock_order_.end(),
            [this](uint32_t a, uint32_t b) { return std::less<const Device*>()(devices_[a], devices_[b]); });
  slots_.resize(devices_.size());
  completions_.resize(devices_.size());
  for (uint32_t i = 0; i < opts_.sets; ++i) {
    sets_.push_back(std::make_unique<Set>());
    build_set(*sets_.back());
  }
}

Graph::~Graph() {
  try {
    wait();
  } catch (...) {
    // A faulted device is reported by its own synchronize; a destructor cannot throw it.
  }
}

void Graph::check_calls() {
  if (calls_.empty()) throw InvalidArgument("graph: no calls");
  if (opts_.sets == 0) throw InvalidArgument("graph: sets must be >= 1");
  if (opts_.kick_limit < 2) throw InvalidArgument(cat("graph: kick_limit ", opts_.kick_limit, " must be >= 2"));
  auto add_device = [&](Device* d) {
    if (std::find(devices_.begin(), devices_.end(), d) == devices_.end()) devices_.push_back(d);
  };
  auto check_range = [&](size_t j, const Sym& addr, uint64_t size, const char* what) {
    if (size == 0) throw InvalidArgument(cat(call_name(j, calls_[j]), ": ", what, " of size 0"));
    if (addr.add + size < addr.add)
      throw InvalidArgument(cat(call_name(j, calls_[j]), ": ", what, " at ", hex(addr.add), " + ", size,
                                " bytes wraps around the address space"));
    note_var(addr, user_vars_);
  };
  for (size_t j = 0; j < calls_.size(); ++j) {
    if (auto* k = std::get_if<KernelCall>(&calls_[j])) {
      if (k->program == nullptr) throw InvalidArgument(cat(call_name(j, calls_[j]), ": no program"));
      for (const BufferUse& b : k->bufs) {
        if (static_cast<uint8_t>(b.access) < 1 || static_cast<uint8_t>(b.access) > 3)
          throw InvalidArgument(cat(call_name(j, calls_[j]), ": unknown access ", static_cast<unsigned>(b.access)));
        check_range(j, b.addr, b.size, "buffer");
      }
      for (const Sym& v : k->vals) note_var(v, user_vars_);
      bool symbolic_dims = false;
      for (int i = 0; i < 3; ++i) {
        note_var(k->global[i], user_vars_);
        note_var(k->local[i], user_vars_);
        symbolic_dims = symbolic_dims || !k->global[i].is_const() || !k->local[i].is_const();
      }
      if (symbolic_dims) dim_checks_.push_back(j);
      add_device(&k->program->device());
    } else {
      auto& c = std::get<CopyCall>(calls_[j]);
      if (c.device == nullptr) throw InvalidArgument(cat(call_name(j, calls_[j]), ": no device"));
      check_range(j, c.dst, c.size, "destination");
      check_range(j, c.src, c.size, "source");
      add_device(c.device);
    }
  }
}

void Graph::plan_queues(GraphSchedule::Input& in) {
  const auto D = static_cast<uint32_t>(devices_.size());
  in.num_devices = D;
  for (uint32_t d = 0; d < D; ++d) {
    queue_device_.push_back(d);
    queue_kinds_.push_back(QueueKind::compute);
  }
  std::vector<int64_t> copy_queue(D, -1);
  auto device_index = [&](Device* dev) {
    return static_cast<uint32_t>(std::find(devices_.begin(), devices_.end(), dev) - devices_.begin());
  };
  for (const GraphCall& c : calls_) {
    GraphSchedule::Input::Call call;
    if (const auto* k = std::get_if<KernelCall>(&c)) {
      call.queue = device_index(&k->program->device());
      for (const BufferUse& b : k->bufs)
        call.ranges.push_back(range_of(b.addr, b.size, (static_cast<uint8_t>(b.access) & 2) != 0));
    } else {
      const auto& cp = std::get<CopyCall>(c);
      const uint32_t d = device_index(cp.device);
      if (copy_queue[d] < 0 && cp.device->info().copy_queues > 0) {
        copy_queue[d] = static_cast<int64_t>(queue_device_.size());
        queue_device_.push_back(d);
        queue_kinds_.push_back(QueueKind::copy);
      }
      call.queue = copy_queue[d] >= 0 ? static_cast<uint32_t>(copy_queue[d]) : d;
      call.ranges.push_back(range_of(cp.dst, cp.size, true));
      call.ranges.push_back(range_of(cp.src, cp.size, false));
    }
    call_queue_.push_back(call.queue);
    in.calls.push_back(std::move(call));
  }
  in.queue_device = queue_device_;
}

void Graph::build_set(Set& s) {
  const size_t Q = queue_kinds_.size();
  const uint64_t exit_value = GraphSchedule::value_of(calls_.size());
  for (size_t q = 0; q < Q; ++q) {
    Device& dev = *devices_[queue_device_[q]];
    s.progress.emplace_back(0, cat(dev.name(), " graph ", to_string(queue_kinds_[q]), " progress"));
    s.queues.push_back(dev.new_queue(queue_kinds_[q]));
    s.queues.back()->wait(kick_signal_, Var{kick_var_});
  }
  for (uint16_t d = 0; d < devices_.size(); ++d) {
    const Var timeline_addr{static_cast<uint16_t>(kick_var_ + 1 + 2 * d)};
    const Var timeline_value{static_cast<uint16_t>(kick_var_ + 2 + 2 * d)};
    HWQueue& q = *s.queues[d];
    q.wait(Sym(timeline_addr), Sym(timeline_value)).memory_barrier();
    if (schedule_.entry_signals[d]) q.signal(s.progress[d], GraphSchedule::kEntryValue);
  }
  for (size_t j = 0; j < calls_.size(); ++j) {
    const GraphSchedule::Step& step = schedule_.steps[j];
    HWQueue& q = *s.queues[step.queue];
    for (const GraphSchedule::Wait& w : step.waits) q.wait(s.progress[w.queue], w.value);
    if (const auto* k = std::get_if<KernelCall>(&calls_[j])) {
      LaunchArgs args;
      for (const BufferUse& b : k->bufs) args.bufs.push_back(b.addr);
      args.vals = k->vals;
      q.exec(*k->program, args, k->global, k->local);
    } else {
      const auto& c = std::get<CopyCall>(calls_[j]);
      q.copy(c.dst, c.src, c.size);
    }
    if (step.signals) q.signal(s.progress[step.queue], GraphSchedule::value_of(j));
  }
  for (uint16_t d = 0; d < devices_.size(); ++d) {
    const Var timeline_addr{static_cast<uint16_t>(kick_var_ + 1 + 2 * d)};
    const Var timeline_value{static_cast<uint16_t>(kick_var_ + 2 + 2 * d)};
    HWQueue& q = *s.queues[d];
    for (const GraphSchedule::Wait& w : schedule_.exit_waits[d]) q.wait(s.progress[w.queue], w.value);
    q.signal(Sym(timeline_addr), timeline_value + 1).signal(s.progress[d], exit_value);
  }
  if (opts_.bind)
    for (auto& q : s.queues) q->bind();
}

void Graph::check_dims(std::span<const uint64_t> vars) const {
  for (size_t j : dim_checks_) {
    const auto& k = std::get<KernelCall>(calls_[j]);
    uint32_t g[3], l[3];
    for (int i = 0; i < 3; ++i) {
      const uint64_t gv = k.global[i].eval(vars), lv = k.local[i].eval(vars);
      if (gv > std::numeric_limits<uint32_t>::max() || lv > std::numeric_limits<uint32_t>::max())
        throw InvalidArgument(cat(call_name(j, calls_[j]), ": dim ", i, " = ", std::max(gv, lv),
                                  " does not fit 32 bits (from the replay's variables)"));
      g[i] = static_cast<uint32_t>(gv);
      l[i] = static_cast<uint32_t>(lv);
    }
    k.program->check_launch(k.bufs.size(), k.vals.size(), g, l);
  }
}

void Graph::wait_set(Set& s) {
  if (!s.ran) return;
  const uint64_t exit_value = GraphSchedule::value_of(calls_.size());
  for (size_t d = 0; d < devices_.size(); ++d) devices_[d]->wait_signal(s.progress[d], exit_value);
}

void Graph::wait() {
  for (auto& s : sets_) wait_set(*s);
}

std::span<const Completion> Graph::replay(std::span<const uint64_t> vars) {
  if (broken_) [[unlikely]]
    throw Error("graph: an earlier replay failed after submitting part of its queues; build a new graph");
  if (vars.size() < user_vars_) [[unlikely]]
    throw InvalidArgument(cat("graph replay: ", vars.size(), " variables given, the calls use ", user_vars_));
  if (!dim_checks_.empty()) check_dims(vars);  // before anything is submitted

  if (kick_ + 1 >= opts_.kick_limit) [[unlikely]] {
    wait();  // nothing may still wait on the old values
    kick_signal_->set_value(0);
    kick_ = 0;
  }
  Set& s = *sets_[runs_ % sets_.size()];
  wait_set(s);  // its words, kernargs and progress signals are about to be rewritten

  std::copy(vars.begin(), vars.begin() + static_cast<ptrdiff_t>(user_vars_), vars_.begin());
  const uint64_t kick = kick_ + 1;
  vars_[kick_var_] = kick;
  // A slot on every device's timeline, taken in one fixed order so that two threads replaying graphs over the same
  // devices cannot each hold one device's lock while waiting for the other's.
  for (uint32_t d : lock_order_) slots_[d].emplace(devices_[d]->reserve_timeline());
  for (size_t d = 0; d < devices_.size(); ++d) {
    vars_[kick_var_ + 1 + 2 * d] = slots_[d]->signal().addr();
    vars_[kick_var_ + 2 + 2 * d] = slots_[d]->wait_value();
  }
  for (OwnedSignal& p : s.progress) p->set_value(0);  // no queue of this set runs before the kick

  size_t submitted = 0;
  try {
    for (auto& q : s.queues) {
      q->submit(vars_);
      ++submitted;
    }
  } catch (...) {
    // Nothing submitted: the graph is as it was. Otherwise some queues wait for a kick that must not come (the
    // rest of the graph is missing), and their devices' timelines are stuck behind them.
    if (submitted != 0) broken_ = true;
    for (auto& slot : slots_) slot.reset();
    throw;
  }
  for (size_t d = 0; d < devices_.size(); ++d) {
    completions_[d] = slots_[d]->commit();
    slots_[d].reset();
  }
  s.ran = true;
  kick_ = kick;
  ++runs_;
  kick_signal_->set_value(kick);  // releases every queue of the replay at once
  return completions_;
}

}  // namespace hcq
