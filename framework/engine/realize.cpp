// Realize: callify the roots (their buffers become numbered parameters: callify.hpp), find or build the schedule
// for that structure, then run it: bind the parameters, allocate the outputs and the arenas, and launch each step
// on its device in order (kernels on the compute path of the timeline, copies through the device's copy path).
#include "framework/engine/realize.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "framework/engine/arg_array.hpp"
#include "framework/engine/callify.hpp"
#include "framework/engine/compile.hpp"
#include "framework/engine/fault_context.hpp"
#include "framework/engine/submit.hpp"
#include "framework/engine/validate.hpp"
#include "framework/ir/shape_of.hpp"
#include "framework/schedule/realize_map.hpp"
#include "framework/schedule/schedule.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

std::atomic<uint64_t> g_next_buffer_id{1};
std::atomic<uint64_t> g_kernels{0}, g_copies{0}, g_misses{0}, g_hits{0};

// Keyed by the callified graph's key and the code generator's options (HCQ_NOOPT changes the kernels). Entries
// with the same hash sit in one bucket; a lookup compares the keys' words, so a hash collision is a miss, never
// another graph's schedule.
struct CacheEntry {
  CallKey key;
  bool noopt;
  std::shared_ptr<const Schedule> schedule;
};
std::mutex g_cache_mu;
// Made at the first realize, after the registry, so destroyed before it at exit (its kernels' programs unload
// while their devices live).
std::unordered_multimap<uint64_t, CacheEntry>& schedule_cache() {
  static std::unordered_multimap<uint64_t, CacheEntry> c;
  return c;
}
constexpr size_t kMaxCachedSchedules = 4096;

const Node& without_narrows(const Node& n) { return n->op == Op::NARROW ? without_narrows(n->src[0]) : n; }
// The realized view of a root with symbolic dimensions keeps them (symbolic_dims.hpp): later graphs over it mask
// as the root's own users did, and a read takes the present elements only.
Node narrowed_like(Node view, const Node& root) {
  for (size_t k = 0; k < root->dim_vars.size(); ++k)
    if (root->dim_vars[k])
      view = make_node(Op::NARROW, view->dtype, {view, root->dim_vars[k]}, {static_cast<int64_t>(k)});
  return view;
}

void print_debug_graph(const char* title, const Node& n) {
  std::fprintf(stderr, "%s\n%s", title, to_string(n).c_str());
}

// The schedule of a callified graph: from the cache, or built (from the parameterised graph its key describes) and
// cached.
std::shared_ptr<const Schedule> find_or_build(const Callified& call, int debug, bool* hit) {
  std::shared_ptr<const Schedule> sched;
  const bool noopt = knobs::noopt();
  const uint64_t bucket = call.key.hash * 2 + (noopt ? 1 : 0);
  {
    std::lock_guard lock(g_cache_mu);
    auto [lo, hi] = schedule_cache().equal_range(bucket);
    for (auto it = lo; it != hi && !sched; ++it)
      if (it->second.noopt == noopt && it->second.key == call.key) sched = it->second.schedule;
  }
  *hit = sched != nullptr;
  if (sched) {
    g_hits.fetch_add(1);
    return sched;
  }
  const Node sink = parameterised_graph(call.key);
  if (debug >= 5) print_debug_graph("HCQ_DEBUG: graph to schedule (parameterised)", sink);
  sched = build_schedule(sink);
  g_misses.fetch_add(1);
  if (debug >= 5)
    for (const Node& ast : sched->kernel_asts) print_debug_graph("HCQ_DEBUG: kernel", ast);
  std::lock_guard lock(g_cache_mu);
  if (schedule_cache().size() >= kMaxCachedSchedules) schedule_cache().clear();
  schedule_cache().emplace(bucket, CacheEntry{call.key, noopt, sched});
  return sched;
}

// A copy step: Buffer::copy_from picks the device that drives it (the allocator lets a GPU's copy engine drive a copy
// from the CPU device into memory the host does not map).
void copy_between(Buffer& dst, const Buffer& src) {
  // A device that faulted never advances its timeline: a copy would leave the other device waiting for it forever
  // (every later submission there too). Its fault is the answer, with the device's context.
  for (Device* d : {&src.device(), &dst.device()})
    if (d->has_error()) explaining_faults(*d, [&] { d->synchronize(); });
  dst.copy_from(src);
}

}  // namespace

const Node& buffer_of(const Node& value) {
  const Node& view = without_narrows(value);
  return view->op == Op::RESHAPE ? view->src[0] : view;
}

size_t schedule_only(const std::vector<Node>& roots, bool* hit) {
  Callified call = callify(roots);
  std::shared_ptr<const Schedule> sched = find_or_build(call, 0, hit);
  return static_cast<size_t>(std::count_if(sched->steps.begin(), sched->steps.end(),
                                           [](const Step& st) { return st.kind == Step::Kind::kernel; }));
}

Node new_buffer_node(const std::string& device, DType dtype, int64_t n) {
  if (n <= 0)
    return make_node(Op::BUFFER, dtype, {}, {static_cast<int64_t>(g_next_buffer_id.fetch_add(1)), n}, 0, device);
  return new_buffer_node(open_device(device), device, dtype, n);
}

Node new_buffer_node(Device& device, const std::string& name, DType dtype, int64_t n) {
  std::shared_ptr<Buffer> mem;
  if (n > 0) mem = std::make_shared<Buffer>(device, static_cast<uint64_t>(n) * dtype_size(dtype));
  return make_node(Op::BUFFER, dtype, {}, {static_cast<int64_t>(g_next_buffer_id.fetch_add(1)), n}, 0, name,
                   std::move(mem));
}

Node alias_buffer_node(const Node& buffer) {
  return make_node(Op::BUFFER, buffer->dtype, {}, {static_cast<int64_t>(g_next_buffer_id.fetch_add(1)), buffer->i[1]},
                   0, buffer->s, buffer->payload);
}

const Node* assign_base(const Node& n) {
  const Node* t = &n;
  while ((*t)->op == Op::ASSIGN) t = &(*t)->src[0];
  return is_buffer_view(*t) ? t : nullptr;
}

bool is_buffer_view(const Node& n) {
  const NodeData* b = n->op == Op::RESHAPE ? n->src[0].get() : n.get();
  return b->op == Op::BUFFER;
}

namespace {
thread_local CaptureSink* t_capture_sink = nullptr;
thread_local KernelTimer* t_kernel_timer = nullptr;
}  // namespace

std::vector<Node> realize_nodes(const std::vector<Node>& roots) {
  const int debug = knobs::debug();
  KernelTimer* const timer = t_kernel_timer;
  // Roots that are buffers already need nothing.
  std::vector<Node> to_compute;
  std::vector<Node> result(roots.size());
  for (size_t k = 0; k < roots.size(); ++k) {
    Node r = roots[k];
    bool computed_before = false;  // by an earlier realize, for another tensor
    for (;;) {
      if (Node done = r->realized()) {
        r = done;
        computed_before = true;
      } else if (r->op == Op::DETACH || r->op == Op::CUSTOM_GRAD) {
        r = r->src[0];
      } else {
        break;
      }
    }
    if (is_buffer_view(without_narrows(r))) {
      result[k] = r;
      if (computed_before) buffer_of(r)->mark_shared_by_tensors();
    } else {
      to_compute.push_back(r);
    }
  }
  if (to_compute.empty()) return result;

  const auto t0 = std::chrono::steady_clock::now();
  Callified call = callify(to_compute);
  bool hit = false;
  std::shared_ptr<const Schedule> sched = find_or_build(call, debug, &hit);
  const auto t1 = std::chrono::steady_clock::now();

  // Bind the slots.
  const Schedule& s = *sched;
  std::vector<std::shared_ptr<Buffer>> bufs(s.slots.size());
  std::vector<Node> slot_nodes(s.slots.size());
  for (size_t k = 0; k < s.num_params; ++k) {
    slot_nodes[k] = call.buffers[k];
    bufs[k] = call.buffers[k]->payload;
  }
  std::vector<Buffer> arenas;
  for (const Arena& a : s.arenas) arenas.emplace_back(open_device(a.device), std::max<uint64_t>(a.bytes, 1));
  for (size_t k = s.num_params; k < s.slots.size(); ++k) {
    const Slot& slot = s.slots[k];
    if (slot.role == Slot::Role::output) {
      slot_nodes[k] = new_buffer_node(slot.device, slot.dtype, slot.numel);
      bufs[k] = slot_nodes[k]->payload;
    } else if (slot.arena >= 0 && slot.numel > 0) {
      bufs[k] = std::make_shared<Buffer>(arenas[static_cast<size_t>(slot.arena)].view(
          slot.offset, static_cast<uint64_t>(slot.numel) * dtype_size(slot.dtype)));
    }
  }

  // TinyJit capture: the sink keeps the bound steps; nothing runs.
  CaptureSink* const capture = capture_sink();
  if (capture) capture->record(sched, bufs, call.bound, call.buffers);
  const std::span<const Step> run_steps = capture ? std::span<const Step>() : std::span<const Step>(s.steps);

  // Run: consecutive kernels of a device go into one submission; a copy submits what is pending first.
  std::unique_ptr<KernelBatch> batch;
  auto flush = [&] {
    if (batch) batch->submit();
    batch.reset();
  };
  size_t kernel_index = 0;  // into s.kernel_asts
  const bool validate = knobs::validate();
  for (const Step& st : run_steps) {
    if (st.kind == Step::Kind::copy) {
      flush();
      copy_between(*bufs[st.slots[0]], *bufs[st.slots[1]]);
      g_copies.fetch_add(1);
      continue;
    }
    const Node& ast = s.kernel_asts[kernel_index++];
    // The kernel's variables' values (a few, usually: each random tensor fused into it is one).
    ArgArray<uint32_t, 8> vals(st.vals.size());
    for (size_t j = 0; j < st.vals.size(); ++j) vals[j] = call.values[st.vals[j]];
    const std::span<const uint32_t> val_args = vals.span();
    if (validate && validates(st)) {  // HCQ_VALIDATE: alone, waited for, and again on the CPU device
      flush();
      std::vector<Buffer*> args(st.slots.size());
      for (size_t j = 0; j < st.slots.size(); ++j) args[j] = bufs[st.slots[j]].get();
      run_validated(st, ast, s.slots[st.slots[0]].dtype, args, val_args);
      g_kernels.fetch_add(1);
      continue;
    }
    ArgArray<uint64_t, 16> addrs(st.slots.size());
    for (size_t j = 0; j < st.slots.size(); ++j) addrs[j] = bufs[st.slots[j]] ? bufs[st.slots[j]]->va() : 0;
    const Program& prog = *st.kernel->program;
    const std::span<const uint64_t> args = addrs.span();
    if (debug >= 2 || timer) {
      flush();
      std::optional<double> secs;
      try {
        secs = prog(args, val_args, st.global, st.local, true);
      } catch (const DeviceFault& e) {
        throw DeviceFault(cat(e.what(), "\n  in kernel ", st.what));
      }
      const double us = secs.value_or(0) * 1e6;
      const RenderedKernel& rk = st.kernel->rendered;
      if (timer)
        timer->kernel(KernelTime{rk.name, rk.opts, st.what, rk.flops, rk.bytes, secs.value_or(0),
                                 st.global[0] * st.global[1] * st.global[2]});
      if (debug < 2) {
        g_kernels.fetch_add(1);
        continue;
      }
      std::fprintf(stderr,
                   "HCQ_DEBUG: %-24s %-8s global (%u,%u,%u) local (%u,%u,%u) %9.2f us %8.2f GB/s %8.2f GFLOP/s%s%s\n",
                   rk.name.c_str(), st.device.c_str(), st.global[0], st.global[1], st.global[2], st.local[0],
                   st.local[1], st.local[2], us, us > 0 ? rk.bytes / us / 1e3 : 0.0, us > 0 ? rk.flops / us / 1e3 : 0.0,
                   rk.opts.empty() ? "" : "  opts ", rk.opts.c_str());
      if (debug >= 4) std::fprintf(stderr, "%s\n", rk.source.c_str());
    } else {
      if (batch && batch->device().name() != st.device) flush();
      if (!batch) batch = std::make_unique<KernelBatch>(prog.device());
      batch->add(prog, args, val_args, st.global, st.local, st.what);
    }
    g_kernels.fetch_add(1);
  }
  flush();
  if (debug >= 1) {
    const auto t2 = std::chrono::steady_clock::now();
    std::fprintf(stderr, "HCQ_DEBUG: realize: %zu kernels, %zu steps, schedule (%s) %.1f us, run %.1f us\n",
                 static_cast<size_t>(std::count_if(s.steps.begin(), s.steps.end(),
                                                   [](const Step& st) { return st.kind == Step::Kind::kernel; })),
                 s.steps.size(), hit ? "hit" : "miss", std::chrono::duration<double, std::micro>(t1 - t0).count(),
                 std::chrono::duration<double, std::micro>(t2 - t1).count());
  }

  // Each root now reads its slot's buffer; a slot that two roots share (equal expressions) is marked shared.
  std::vector<uint8_t> slot_taken(s.slots.size(), 0);
  for (size_t k = 0, t = 0; k < roots.size(); ++k) {
    if (result[k]) continue;
    const Node& root = to_compute[t];
    const uint32_t slot = s.root_slots[t++];
    if (slot_taken[slot]++) slot_nodes[slot]->mark_shared_by_tensors();
    Node view = narrowed_like(t_reshape(slot_nodes[slot], root->shape), root);
    // The root's node now stands for this value, until an assign overwrites the buffer it was stored in or any
    // buffer it was computed from (each of the call's inputs, to be safe): a node made after such an assign must
    // compute anew, not read what was computed from the old contents.
    auto link = [&](const Node& lazy) {
      lazy->set_realized(view);
      slot_nodes[slot]->add_realized_from(lazy);
      for (const Node& input : call.buffers) input->add_realized_from(lazy);
    };
    link(root);
    if (roots[k] != root) link(roots[k]);
    result[k] = view;
  }
  return result;
}

void read_buffer_view(const Node& view, std::span<std::byte> out) {
  const Node& buf = buffer_of(view);
  if (CaptureSink* capture = capture_sink()) capture->host_read();
  if (out.empty()) return;
  if (!buf->payload) throw InvalidArgument("read: the tensor has no memory");
  Device& dev = buf->payload->device();
  // A fault (the device's sticky one, or one while the read waits for the device) names the kernel it came from.
  explaining_faults(dev, [&] {
    if (dev.has_error()) dev.synchronize();  // rethrows the device's sticky fault with its context
    buf->payload->copyout(out);
  });
}

CaptureSink* capture_sink() { return t_capture_sink; }
KernelTimer* set_kernel_timer(KernelTimer* timer) { return std::exchange(t_kernel_timer, timer); }
CaptureSink* set_capture_sink(CaptureSink* sink) { return std::exchange(t_capture_sink, sink); }
void copy_buffers(Buffer& dst, const Buffer& src) { copy_between(dst, src); }

FrameworkCounters counters() {
  return FrameworkCounters{g_kernels.load(), g_copies.load(), g_misses.load(), g_hits.load(), kernels_compiled()};
}

void clear_schedule_cache() {
  std::lock_guard lock(g_cache_mu);
  schedule_cache().clear();
}

}  // namespace hcq::fw
