// build_schedule: realize map -> one lowered kernel (or copy) per realized node -> order -> memory plan of the
// temporaries -> rendered and compiled kernels.
#include "framework/schedule/schedule.hpp"

#include <algorithm>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "framework/codegen/render.hpp"
#include "framework/codegen/target.hpp"
#include "framework/engine/beam.hpp"
#include "framework/engine/compile.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/schedule/kernel_cache.hpp"
#include "framework/schedule/lower.hpp"
#include "framework/schedule/memory_plan.hpp"
#include "framework/schedule/order.hpp"
#include "framework/schedule/realize_map.hpp"
#include "framework/schedule/split_reduce.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

// The PARAM a parameter view or an assign chain (ASSIGN(ASSIGN(view, v1), v2)) refers to.
const NodeData* param_of(const NodeData* n) {
  while (n->op == Op::ASSIGN) n = n->src[0].get();
  return n->op == Op::RESHAPE ? n->src[0].get() : n;
}

struct Pending {
  Step step;
  std::vector<const NodeData*> reads;
  const NodeData* writes = nullptr;  // the realized node
  Node ast;
};

// What the renderer needs to know of a device, looked up once per device name (a miss must not reopen the device
// or read /sys for the core count); HCQ_NOOPT is read each time.
TargetFacts facts_for(const std::string& device) {
  struct Known {
    DeviceInfo info;
    unsigned workers;
  };
  static std::mutex mu;
  static auto* known = new std::unordered_map<std::string, Known>();
  Known k;
  {
    std::lock_guard lock(mu);
    auto it = known->find(device);
    if (it == known->end()) it = known->emplace(device, Known{open_device(device).info(), knobs::cpu_threads()}).first;
    k = it->second;
  }
  return target_facts(k.info, k.workers, !knobs::noopt());
}

// Whether every LOAD of kernel buffer `local` reads at exactly the store's index.
bool reads_only_at_store_index(const Node& ast, int64_t local) {
  const Node& store = ast->src[0];
  for (const NodeData* n : toposort({ast}))
    if (n->op == Op::LOAD && n->src[0]->i[0] == local && n->src[1] != store->src[1]) return false;
  return true;
}

// The slot a kernel copies verbatim when it is out[i] = in[i] over the whole of both buffers (same dtype, same
// element count, no pad gate): nullopt for any other kernel.
std::optional<uint32_t> identity_copy_source(const LoweredKernel& k) {
  const Node& store = k.ast->src[0];
  const Node& value = store->src[2];
  if (value->op != Op::LOAD || value->src.size() != 2 || value->src[1] != store->src[1]) return std::nullopt;
  const Node& in = value->src[0];
  const Node& out = store->src[0];
  if (in->i[0] == 0 || in->dtype != out->dtype || in->i[1] != out->i[1]) return std::nullopt;
  return k.slots[static_cast<size_t>(in->i[0])];
}

// The largest kernel-local array of a partial realisation, in elements (it lives on the worker's stack).
constexpr int64_t kMaxLocalElements = 4096;

std::string slot_desc(const Slot& s) { return cat(dtype_name(s.dtype), " buffer of ", s.numel, " elements"); }

// The tensor op a kernel computes, for a person reading a fault: the realized node's op (with a reduce's op and
// axes), its dtype and shape, e.g. "REDUCE_AXIS(MAX, axes 1) -> float32 (4, 1)". Built by appending, not with cat():
// an ostringstream per kernel was a tenth of a miss whose kernels all came from the kernel cache.
std::string op_desc(const NodeData* n) {
  std::string op(op_name(n->op));
  const NodeData* r = n;
  while ((r->op == Op::RESHAPE || r->op == Op::CONTIGUOUS) && !r->src.empty()) r = r->src[0].get();
  if (r != n) (op += " of ") += op_name(r->op);
  if (r->op == Op::REDUCE_AXIS) {
    ((op += "(") += op_name(static_cast<Op>(r->i[0]))) += ", axes";
    for (size_t k = 1; k < r->i.size(); ++k) (op += k == 1 ? " " : ",") += std::to_string(r->i[k]);
    op += ")";
  }
  (((op += " -> ") += dtype_name(n->dtype)) += " ") += shape_str(n->shape);
  return op;
}

}  // namespace

std::shared_ptr<const Schedule> build_schedule(const Node& sink) {
  // GPUs split large reductions into two kernels (split_reduce.hpp) at sizes their facts give (target.cpp); the CPU
  // device's workgroups are over outputs and its kernel counts stay those of the core issue.
  const std::vector<Node> roots = split_large_reduces(
      sink->src, [](const std::string& device) -> std::optional<SplitLimits> { return facts_for(device).split; });
  std::unordered_set<const NodeData*> extra;
  LocalAxes local;
  for (;;) {
    const std::unordered_set<const NodeData*> realized = realize_map(roots, extra);
    auto sched = std::make_shared<Schedule>();
    Schedule& s = *sched;
    const std::vector<Node> topo = toposort_nodes(roots);

    // Parameters first, by number.
    for (const Node& n : topo)
      if (n->op == Op::PARAM) {
        const size_t k = static_cast<size_t>(n->i[0]);
        if (s.slots.size() <= k) s.slots.resize(k + 1);
        s.slots[k] = Slot{Slot::Role::param, n->s, n->dtype, n->i[1]};
      }
    s.num_params = s.slots.size();
    for (const Node& n : topo)
      if (n->op == Op::VAR_PARAM) {
        const size_t k = static_cast<size_t>(n->i[0]);
        if (s.vars.size() <= k) s.vars.resize(k + 1);
        s.vars[k] = n->src[0];
      }

    // A slot for each realized node: an assign writes its target's parameter; roots get outputs; others temps.
    std::unordered_map<const NodeData*, uint32_t> slot_of;
    std::unordered_set<const NodeData*> root_set;
    for (const Node& r : roots) root_set.insert(r.get());
    for (const Node& n : topo) {
      if (!realized.count(n.get())) continue;
      if (n->op == Op::ASSIGN) {
        slot_of[n.get()] = static_cast<uint32_t>(param_of(n->src[0].get())->i[0]);
        continue;
      }
      const Slot::Role role = root_set.count(n.get()) ? Slot::Role::output : Slot::Role::temp;
      slot_of[n.get()] = static_cast<uint32_t>(s.slots.size());
      s.slots.push_back(Slot{role, n->device(), n->dtype, numel(n->shape)});
    }

    // One step per realized node, in topological order.
    std::vector<Pending> pending;
    bool restart = false;
    for (const Node& n : topo) {
      if (!realized.count(n.get())) continue;
      Pending p;
      p.writes = n.get();
      p.step.device = n->device();
      if (n->op == Op::COPY) {
        const NodeData* src = n->src[0].get();
        const bool direct = is_param_view(src);
        p.step.kind = Step::Kind::copy;
        p.step.slots = {slot_of.at(n.get()), direct ? static_cast<uint32_t>(param_of(src)->i[0]) : slot_of.at(src)};
        p.reads.push_back(direct ? param_of(src) : src);
        pending.push_back(std::move(p));
        continue;
      }
      if (numel(n->shape) == 0) continue;  // nothing to compute
      LoweredKernel k = lower_kernel_cached(n, slot_of.at(n.get()), slot_of, local);
      for (const LoweredKernel::Disagreement& d : k.disagreeing) {
        // Some axes agree and the rest fit a local array: partial realisation inside this kernel. Otherwise the
        // reduce becomes a buffer of its own.
        // (An axis of extent 1 agrees trivially: it does not count.)
        bool some_agree = false;
        for (size_t a = 0; a < d.disagreeing_axes.size(); ++a)
          some_agree = some_agree || (!d.disagreeing_axes[a] && d.reduce->shape[a] > 1);
        if (some_agree && d.local_elements <= kMaxLocalElements) local[d.reduce] = d.disagreeing_axes;
        else extra.insert(d.reduce);
        restart = true;
      }
      if (n->op == Op::ASSIGN) {
        // An assign whose value reads its own target at other positions would read elements it has already
        // overwritten: compute the value into a temporary first.
        const uint32_t target = slot_of.at(n.get());
        for (size_t local = 0; local < k.slots.size(); ++local)
          if (k.slots[local] == target && !reads_only_at_store_index(k.ast, static_cast<int64_t>(local))) {
            extra.insert(n->src[1].get());
            restart = true;
          }
      }
      if (const std::optional<uint32_t> from = identity_copy_source(k)) {
        // A kernel that only moves bytes is a device copy (framework.md, contract 7).
        p.step.kind = Step::Kind::copy;
        p.step.slots = {k.slots[0], *from};
        p.reads = std::move(k.reads);
        pending.push_back(std::move(p));
        continue;
      }
      p.step.kind = Step::Kind::kernel;
      p.step.what = op_desc(n.get());
      p.step.slots = std::move(k.slots);
      p.step.vals = std::move(k.vals);
      p.reads = std::move(k.reads);
      p.ast = std::move(k.ast);
      pending.push_back(std::move(p));
    }
    if (restart) continue;

    // Order by the steps' buffer dependencies (order.hpp).
    const size_t n_steps = pending.size();
    std::vector<StepAccess> access;
    for (const Pending& p : pending)
      access.push_back(StepAccess{p.writes, p.step.slots[0], p.reads, p.step.kind == Step::Kind::copy});
    const std::vector<size_t> order = order_steps(access, [&](size_t k) {
      return cat("the ", pending[k].writes->op == Op::ASSIGN ? "assign to " : "",
                 slot_desc(s.slots[pending[k].step.slots[0]]), " (", shape_str(pending[k].writes->shape), ")");
    });

    // Memory plan of the temporaries, per device.
    std::vector<size_t> position(n_steps);
    for (size_t k = 0; k < n_steps; ++k) position[order[k]] = k;
    std::unordered_map<uint32_t, Lifetime> life;
    for (size_t k = 0; k < n_steps; ++k) {
      const Pending& p = pending[k];
      for (size_t j = 0; j < p.step.slots.size(); ++j) {
        const uint32_t slot = p.step.slots[j];
        if (s.slots[slot].role != Slot::Role::temp) continue;
        const uint64_t bytes = static_cast<uint64_t>(s.slots[slot].numel) * dtype_size(s.slots[slot].dtype);
        auto [it, fresh] = life.try_emplace(slot, Lifetime{bytes, position[k], position[k]});
        it->second.first = std::min(it->second.first, position[k]);
        it->second.last = std::max(it->second.last, position[k]);
      }
    }
    std::unordered_map<std::string, std::vector<uint32_t>> temps_by_device;
    for (uint32_t slot = 0; slot < s.slots.size(); ++slot)
      if (s.slots[slot].role == Slot::Role::temp && life.count(slot))
        temps_by_device[s.slots[slot].device].push_back(slot);
    for (auto& [device, slots] : temps_by_device) {
      std::vector<Lifetime> lt;
      for (uint32_t slot : slots) lt.push_back(life.at(slot));
      const Placement pl = plan_memory(lt);
      const int arena = static_cast<int>(s.arenas.size());
      s.arenas.push_back(Arena{device, pl.arena_bytes});
      for (size_t j = 0; j < slots.size(); ++j) {
        s.slots[slots[j]].arena = arena;
        s.slots[slots[j]].offset = pl.offsets[j];
      }
    }

    // Render and compile the kernels (or find them in the kernel cache).
    std::vector<KernelWant> wants;
    std::vector<size_t> kernel_steps;
    for (size_t k : order) {
      Pending& p = pending[k];
      if (p.step.kind != Step::Kind::kernel) continue;
      wants.push_back(KernelWant{p.ast, p.step.device, facts_for(p.step.device)});
      kernel_steps.push_back(k);
      s.kernel_asts.push_back(p.ast);
    }
    std::vector<std::shared_ptr<const CompiledKernel>> compiled = build_kernels(wants);
    for (size_t j = 0; j < kernel_steps.size(); ++j) {
      Step& st = pending[kernel_steps[j]].step;
      const RenderedKernel& rk = compiled[j]->rendered;
      st.global = rk.global;
      st.local = rk.local;
      st.what = rk.name + " (" + st.what + ")";
      st.kernel = std::move(compiled[j]);
    }
    for (size_t k : order) s.steps.push_back(std::move(pending[k].step));

    for (const Node& r : roots) {
      if (is_param_view(r.get())) s.root_slots.push_back(static_cast<uint32_t>(param_of(r.get())->i[0]));
      else s.root_slots.push_back(slot_of.at(r.get()));
    }
    return sched;
  }
}

}  // namespace hcq::fw
