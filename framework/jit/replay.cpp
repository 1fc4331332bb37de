#include "framework/jit/replay.hpp"

#include <algorithm>
#include <map>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "framework/engine/compile.hpp"
#include "framework/engine/fault_context.hpp"
#include "framework/engine/realize.hpp"
#include "framework/engine/validate.hpp"
#include "framework/jit/memory.hpp"
#include "framework/jit/prune.hpp"
#include "framework/tensor/build.hpp"
#include "framework/tensor/rng.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/knobs.hpp"
#include "hcq/program.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

// The BUFFER node a realised tensor reads.
Node base_buffer(const Tensor& t) {
  Node n = t.node();
  while (Node done = n->realized()) n = done;
  return buffer_of(n);
}

}  // namespace

Replay::Replay(const Capture& capture, const std::vector<Node>& inputs, const std::vector<Tensor>& outputs,
               const TinyJit::Options& options)
    : num_inputs_(inputs.size()) {
  const bool prune = options.prune;
  // Inputs by buffer.
  std::unordered_map<const Buffer*, int> input_var;
  std::unordered_map<const NodeData*, int> input_variable;  // a bound Variable's DEFINE_VAR -> its input
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k]->op == Op::BIND) input_variable.emplace(inputs[k]->src[0].get(), static_cast<int>(k));
    else if (inputs[k]->payload) input_var.emplace(inputs[k]->payload.get(), static_cast<int>(k));
  }
  // A random tensor's key variable -> its draw (graph variables: after the inputs and the outputs, below).
  std::unordered_map<const NodeData*, size_t> draw_of;
  for (size_t j = 0; j < capture.draws().size(); ++j) draw_of.emplace(capture.draws()[j].key.get(), j);
  // A kernel's values: a Variable the call binds is its input's graph variable, a random key its draw's; any other
  // (bound inside the function) keeps the value it had in the capture.
  auto graph_variable = [&](const Capture::Record& r, uint32_t var) -> int {
    const NodeData* v = r.bound[var]->src[0].get();
    if (auto it = input_variable.find(v); it != input_variable.end()) return it->second;
    if (auto it = draw_of.find(v); it != draw_of.end())
      return static_cast<int>(num_inputs_ + output_buffers_.size() + it->second);
    return -1;
  };
  auto kernel_vals = [&](const Capture::Record& r, const Step& st) {
    std::vector<Sym> vals;
    for (uint32_t var : st.vals) {
      const int g = graph_variable(r, var);
      vals.push_back(g >= 0 ? Sym(Var{static_cast<uint16_t>(g)})
                            : Sym(static_cast<uint32_t>(static_cast<int32_t>(r.bound[var]->i[0]))));
    }
    return vals;
  };
  auto reads_graph_variable = [&](const Capture::Record& r, const Step& st) {
    return std::any_of(st.vals.begin(), st.vals.end(), [&](uint32_t var) { return graph_variable(r, var) >= 0; });
  };

  // The buffers the capture made for roots, and the inputs some step writes (slot 0: a kernel's output, a copy's
  // destination).
  std::unordered_set<const Buffer*> made;
  std::map<int, std::shared_ptr<Buffer>> scratch;  // written input -> the JIT's copy of it
  for (const Capture::Record& r : capture.records()) {
    schedules_.push_back(r.schedule);
    for (size_t k = 0; k < r.bufs.size(); ++k)
      if (r.schedule->slots[k].role == Slot::Role::output && r.bufs[k]) made.insert(r.bufs[k].get());
    for (const Step& st : r.schedule->steps) {
      const std::shared_ptr<Buffer>& written = r.bufs[st.slots[0]];
      if (!written) continue;
      if (auto it = input_var.find(written.get()); it != input_var.end() && !scratch.count(it->second))
        scratch.emplace(it->second, std::make_shared<Buffer>(written->device(), written->size()));
    }
  }

  // Memory planning (memory.hpp): inputs and outputs stay where they are.
  CapturedPlan plan;
  if (options.plan_memory) {
    std::unordered_set<const Buffer*> keep;
    for (const Node& in : inputs)
      if (in->payload) keep.insert(in->payload.get());
    for (const Tensor& t : outputs)
      if (const Node base = base_buffer(t); base->payload) keep.insert(base->payload.get());
    plan = plan_captured_memory(capture, keep);
    info_.planned_bytes = plan.planned_bytes;
    info_.arena_bytes = plan.arena_bytes;
  }

  // What last wrote each buffer in the captured list (HCQ_JIT_CHECK names it).
  std::unordered_map<const Buffer*, std::string> last_writer;
  for (const Capture::Record& r : capture.records())
    for (const Step& st : r.schedule->steps)
      if (const std::shared_ptr<Buffer>& b = r.bufs[st.slots[0]])
        last_writer[b.get()] = st.kind == Step::Kind::kernel ? hcq::cat("kernel ", st.what)
                                                             : hcq::cat("a copy to ", st.device, " (from ",
                                                                        r.schedule->slots[st.slots[1]].device, ")");

  // Outputs: one fresh buffer per distinct returned buffer. Those the capture made are bound directly; the others
  // are copied at the end.
  std::unordered_map<const NodeData*, size_t> out_index;
  std::unordered_map<const Buffer*, int> output_var;
  std::vector<std::pair<size_t, std::shared_ptr<Buffer>>> copied_outputs;  // (output buffer, its source)
  for (const Tensor& t : outputs) {
    Node base = base_buffer(t);
    auto [it, fresh] = out_index.emplace(base.get(), output_buffers_.size());
    if (fresh) {
      output_buffers_.push_back(OutputBuffer{&open_device(base->device()), base->device(), base->dtype, base->i[1]});
      const std::shared_ptr<Buffer>& mem = base->payload;
      const int var = static_cast<int>(num_inputs_ + it->second);
      if (mem && made.count(mem.get()) && !input_var.count(mem.get())) output_var.emplace(mem.get(), var);
      else if (mem) copied_outputs.emplace_back(it->second, mem);
    }
    Output out{it->second, t.shape(), {}};
    const std::vector<Node>& dim_vars = t.node()->dim_vars;
    for (size_t a = 0; a < dim_vars.size(); ++a) {
      if (!dim_vars[a]) continue;
      int input = -1;
      for (size_t k = 0; k < inputs.size() && input < 0; ++k)
        if (inputs[k]->op == Op::BIND && inputs[k]->src[0] == dim_vars[a]->src[0]) input = static_cast<int>(k);
      out.dims.push_back(Output::Dim{static_cast<int64_t>(a), input, dim_vars[a]});
    }
    outputs_.push_back(std::move(out));
    const Buffer* mem = base->payload.get();
    auto w = mem ? last_writer.find(mem) : last_writer.end();
    writers_.push_back(w != last_writer.end() ? w->second
                       : input_var.count(mem)
                           ? hcq::cat("the copy of input ", input_var.at(mem), " (the function returns it)")
                           : std::string("the copy of a tensor the function returns but did not compute here (one it "
                                         "closes over)"));
  }

  auto operand = [&](const std::shared_ptr<Buffer>& b) -> Operand {
    if (!b) return {};
    if (auto it = input_var.find(b.get()); it != input_var.end()) {
      if (auto s = scratch.find(it->second); s != scratch.end()) return Operand{-1, s->second};
      return Operand{it->second, nullptr};
    }
    if (auto it = output_var.find(b.get()); it != output_var.end()) return Operand{it->second, nullptr};
    if (auto it = plan.relocated.find(b.get()); it != plan.relocated.end()) return Operand{-1, it->second};
    return Operand{-1, b};
  };

  // Pruning (prune.hpp): the steps whose results cannot change between calls run once now, not in the replay.
  std::vector<PruneStep> prune_in;
  std::vector<ByteRange> varying;
  auto range = [](const Buffer& b) { return ByteRange{b.va(), b.va() + b.size()}; };
  for (const auto& [var, copy] : scratch) varying.push_back(range(*copy));
  for (const Capture::Record& r : capture.records()) {
    for (const Step& st : r.schedule->steps) {
      PruneStep p;
      for (size_t j = 0; j < st.slots.size(); ++j) {
        const std::shared_ptr<Buffer>& b = r.bufs[st.slots[j]];
        if (!b) continue;
        const Operand op = operand(b);
        if (op.var >= 0) p.always = true;
        else if (j == 0) p.write = range(*op.fixed);
        else p.reads.push_back(range(*op.fixed));
      }
      if (reads_graph_variable(r, st)) p.always = true;
      // A kernel writing a buffer that existed before its realize (an assign) may read it in place (x += 1).
      if (r.schedule->slots[st.slots[0]].role == Slot::Role::param && p.write.hi > p.write.lo)
        p.reads.push_back(p.write);
      if (st.kind == Step::Kind::copy) {
        const std::shared_ptr<Buffer>&dst = r.bufs[st.slots[0]], &src = r.bufs[st.slots[1]];
        if (dst && src && &dst->device() != &src->device()) p.always = true;
      }
      prune_in.push_back(std::move(p));
    }
  }
  validating_ = knobs::validate();
  const std::vector<bool> prunable =
      prune && !validating_ ? prunable_steps(prune_in, varying) : std::vector<bool>(prune_in.size());
  std::vector<GraphCall> once;  // the pruned calls, run below
  size_t step_index = 0;

  // The calls, batched.
  std::vector<GraphCall> calls;
  std::vector<std::pair<const Device*, std::string>> kernel_names;  // the kernel calls among `calls`
  auto flush = [&] {
    if (calls.empty()) return;
    Item item{std::make_unique<Graph>(std::move(calls)), {}, {}};
    for (const Device* dev : item.graph->devices()) {
      auto names = std::make_shared<std::vector<std::string>>();
      for (const auto& [d, what] : kernel_names)
        if (d == dev) names->push_back(what);
      item.kernels.push_back(names->empty() ? nullptr : std::move(names));
    }
    items_.push_back(std::move(item));
    calls.clear();
    kernel_names.clear();
    ++info_.graphs;
  };
  for (auto& [var, copy] : scratch) {
    checked_.push_back(CheckedCall{nullptr, nullptr, {}, {Operand{-1, copy}, Operand{var, nullptr}}, {}});
    calls.push_back(
        CopyCall{&copy->device(), address(Operand{-1, copy}), Sym(Var{static_cast<uint16_t>(var)}), copy->size()});
    ++info_.written_inputs;
  }
  for (const Capture::Record& r : capture.records()) {
    size_t kernel_index = 0;  // into the schedule's kernel_asts
    for (const Step& st : r.schedule->steps) {
      const bool pruned = prunable[step_index++];
      if (validating_) {
        CheckedCall c;
        if (st.kind == Step::Kind::kernel) {
          c.step = &st;
          c.ast = r.schedule->kernel_asts[kernel_index++];
          c.out = r.schedule->slots[st.slots[0]].dtype;
          c.vals = kernel_vals(r, st);
        }
        for (uint32_t slot : st.slots) c.ops.push_back(operand(r.bufs[slot]));
        if (c.step || (r.bufs[st.slots[0]] && r.bufs[st.slots[1]])) checked_.push_back(std::move(c));
      }
      if (st.kind == Step::Kind::kernel) {
        KernelCall call;
        call.program = st.kernel->program.get();
        for (size_t j = 0; j < st.slots.size(); ++j) {
          const std::shared_ptr<Buffer>& b = r.bufs[st.slots[j]];
          call.bufs.push_back(BufferUse{address(operand(b)), b ? b->size() : 0, j == 0 ? Access::write : Access::read});
        }
        call.vals = kernel_vals(r, st);
        for (size_t d = 0; d < 3; ++d) {
          call.global[d] = Sym(st.global[d]);
          call.local[d] = Sym(st.local[d]);
        }
        ++info_.kernels;
        if (pruned) {
          once.push_back(std::move(call));
          ++info_.pruned;
          continue;
        }
        kernel_names.emplace_back(&call.program->device(), st.what);
        calls.push_back(std::move(call));
        continue;
      }
      ++info_.copies;
      const std::shared_ptr<Buffer>& dst = r.bufs[st.slots[0]];
      const std::shared_ptr<Buffer>& src = r.bufs[st.slots[1]];
      if (!dst || !src) continue;  // nothing to move
      if (&dst->device() == &src->device()) {
        (pruned ? once : calls)
            .push_back(CopyCall{&dst->device(), address(operand(dst)), address(operand(src)), dst->size()});
        continue;
      }
      flush();
      items_.push_back(Item{nullptr, HostCopy{operand(dst), operand(src)}, {}});
      ++info_.host_copies;
    }
  }
  for (auto& [index, src] : copied_outputs) {
    checked_.push_back(
        CheckedCall{nullptr, nullptr, {}, {Operand{static_cast<int>(num_inputs_ + index), nullptr}, operand(src)}, {}});
    calls.push_back(CopyCall{&src->device(), Sym(Var{static_cast<uint16_t>(num_inputs_ + index)}),
                             address(operand(src)), src->size()});
  }
  flush();

  if (!once.empty()) {  // after all work submitted so far (what they read was realized before or by the capture)
    Graph graph(std::move(once));
    explaining_faults(*graph.devices().front(), [&] {
      graph.replay({});
      graph.wait();
    });
  }

  if (!capture.draws().empty()) {
    const uint64_t first = capture.draws().front().k;
    captured_first_draw_ = first;
    for (const Capture::Draw& d : capture.draws()) {
      draw_offsets_.push_back(d.k - first);
      num_draws_ = std::max(num_draws_, d.k - first + 1);
    }
    info_.random_draws = num_draws_;
  }

  vars_.assign(num_inputs_ + output_buffers_.size() + draw_offsets_.size(), 0);
  var_bufs_.assign(vars_.size(), nullptr);
  call_outputs_.resize(output_buffers_.size());
}

Replay::~Replay() {
  // Wait for the last replay before its buffers go (the graphs' destructors wait for their own queues).
  for (Item& it : items_)
    if (it.graph) it.graph->wait();
}

Sym Replay::address(const Operand& op) {
  if (op.var >= 0) return Sym(Var{static_cast<uint16_t>(op.var)});
  if (!op.fixed) return Sym(0);  // an empty buffer: nothing is read or written through it
  fixed_.push_back(op.fixed);
  return Sym(op.fixed->va());
}

void Replay::run_checked() {
  for (const CheckedCall& c : checked_) {
    std::vector<Buffer*> bufs;
    for (const Operand& op : c.ops) bufs.push_back(resolve(op));
    if (!c.step) {
      if (bufs[0] && bufs[1]) copy_buffers(*bufs[0], *bufs[1]);
      continue;
    }
    std::vector<uint32_t> vals;
    for (const Sym& v : c.vals) vals.push_back(static_cast<uint32_t>(v.eval(vars_)));
    if (validates(*c.step)) {
      run_validated(*c.step, c.ast, c.out, bufs, vals);
      continue;
    }
    std::vector<uint64_t> addrs;
    for (Buffer* b : bufs) addrs.push_back(b ? b->va() : 0);
    const Program& prog = *c.step->kernel->program;
    explaining_faults(prog.device(), [&] { prog(addrs, vals, c.step->global, c.step->local, true); });
  }
}

// The previous call's output buffer is taken over when nothing but this replay holds it any more: the caller dropped
// the tensors (no tensor, lazy graph or view node names the node: its count is ours alone) and the memory is the
// Buffer's own (output buffers are made whole here; views are taken only of memory planning's arenas). That is what
// freeing it and allocating a new one of the same size would do (the allocator's cache hands a freed block out again
// at once), less the allocator's lock, the Buffer's two objects and the first-use allocation. The replay that
// writes it again is ordered after everything already submitted that touches it, as a recycled block's is. The node
// is a new one (a new id): a node the caller once held may carry realization links.
Node Replay::fresh_output(const Node& previous, const OutputBuffer& o) {
  if (previous && previous.use_count() == 1 && previous->payload && previous->payload.use_count() == 1)
    return alias_buffer_node(previous);
  return new_buffer_node(*o.dev, o.device, o.dtype, o.numel);
}

Buffer* Replay::resolve(const Operand& op) const { return op.var >= 0 ? var_bufs_[op.var] : op.fixed.get(); }

std::vector<Tensor> Replay::run(const std::vector<Node>& inputs, bool draw) {
  if (num_draws_ > 0) {
    // The keys are kernel values, patched into this replay's launches: nothing waits for the previous replay. The
    // capture's own first replay binds the keys the capture drew.
    const uint64_t seed = rng_seed(), base = draw ? rng_take(num_draws_) : captured_first_draw_;
    const size_t first_var = num_inputs_ + output_buffers_.size();
    for (size_t j = 0; j < draw_offsets_.size(); ++j) vars_[first_var + j] = rng_key(seed, base + draw_offsets_[j]);
  }
  for (size_t k = 0; k < num_inputs_; ++k) {
    if (inputs[k]->op == Op::BIND) {  // a bound Variable: the kernels' 32-bit value
      var_bufs_[k] = nullptr;
      vars_[k] = static_cast<uint32_t>(static_cast<int32_t>(inputs[k]->i[0]));
      continue;
    }
    var_bufs_[k] = inputs[k]->payload.get();
    vars_[k] = var_bufs_[k] ? var_bufs_[k]->va() : 0;
  }
  for (size_t k = 0; k < output_buffers_.size(); ++k) {
    const OutputBuffer& o = output_buffers_[k];
    call_outputs_[k] = fresh_output(call_outputs_[k], o);
    var_bufs_[num_inputs_ + k] = call_outputs_[k]->payload.get();
    vars_[num_inputs_ + k] = var_bufs_[num_inputs_ + k] ? var_bufs_[num_inputs_ + k]->va() : 0;
  }
  if (validating_) {
    run_checked();
  } else {
    for (Item& it : items_) {
      if (!it.graph) {
        copy_buffers(*resolve(it.copy.dst), *resolve(it.copy.src));
        continue;
      }
      const std::span<const Completion> done = it.graph->replay(vars_);
      for (size_t d = 0; d < done.size(); ++d)
        if (it.kernels[d]) remember_submission(done[d], it.kernels[d]);
    }
  }
  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (const Output& o : outputs_) {
    Node view = t_reshape(call_outputs_[o.buffer], o.shape);
    for (const Output::Dim& d : o.dims)
      view = make_node(Op::NARROW, view->dtype, {view, d.input >= 0 ? inputs[static_cast<size_t>(d.input)] : d.fixed},
                       {d.axis});
    out.emplace_back(std::move(view));
  }
  return out;
}

}  // namespace hcq::fw
