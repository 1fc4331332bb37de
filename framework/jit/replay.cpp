#include "framework/jit/replay.hpp"

#include <algorithm>
#include <map>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "framework/engine/compile.hpp"
#include "framework/engine/realize.hpp"
#include "framework/tensor/build.hpp"
#include "framework/tensor/rng.hpp"
#include "hcq/buffer.hpp"
#include "hcq/device.hpp"
#include "hcq/registry.hpp"

namespace hcq::fw {
namespace {

// The BUFFER node a realised tensor reads.
Node base_buffer(const Tensor& t) {
  Node n = t.node();
  while (Node done = n->realized()) n = done;
  return n->op == Op::RESHAPE ? n->src[0] : n;
}

}  // namespace

Replay::Replay(const Capture& capture, const std::vector<Node>& inputs, const std::vector<Tensor>& outputs)
    : num_inputs_(inputs.size()) {
  // Inputs by buffer.
  std::unordered_map<const Buffer*, int> input_var;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k]->payload) input_var.emplace(inputs[k]->payload.get(), static_cast<int>(k));

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

  // Outputs: one fresh buffer per distinct returned buffer. Those the capture made are bound directly; the others
  // are copied at the end.
  std::unordered_map<const NodeData*, size_t> out_index;
  std::unordered_map<const Buffer*, int> output_var;
  std::vector<std::pair<size_t, std::shared_ptr<Buffer>>> copied_outputs;  // (output buffer, its source)
  for (const Tensor& t : outputs) {
    Node base = base_buffer(t);
    auto [it, fresh] = out_index.emplace(base.get(), output_buffers_.size());
    if (fresh) {
      output_buffers_.push_back(OutputBuffer{base->device(), base->dtype, base->i[1]});
      const std::shared_ptr<Buffer>& mem = base->payload;
      const int var = static_cast<int>(num_inputs_ + it->second);
      if (mem && made.count(mem.get()) && !input_var.count(mem.get())) output_var.emplace(mem.get(), var);
      else if (mem) copied_outputs.emplace_back(it->second, mem);
    }
    outputs_.push_back(Output{it->second, t.shape()});
  }

  auto operand = [&](const std::shared_ptr<Buffer>& b) -> Operand {
    if (!b) return {};
    if (auto it = input_var.find(b.get()); it != input_var.end()) {
      if (auto s = scratch.find(it->second); s != scratch.end()) return Operand{-1, s->second};
      return Operand{it->second, nullptr};
    }
    if (auto it = output_var.find(b.get()); it != output_var.end()) return Operand{it->second, nullptr};
    return Operand{-1, b};
  };

  // The calls, batched.
  std::vector<GraphCall> calls;
  auto flush = [&] {
    if (calls.empty()) return;
    items_.push_back(Item{std::make_unique<Graph>(std::move(calls)), {}});
    calls.clear();
    ++info_.graphs;
  };
  for (auto& [var, copy] : scratch) {
    calls.push_back(
        CopyCall{&copy->device(), address(Operand{-1, copy}), Sym(Var{static_cast<uint16_t>(var)}), copy->size()});
    ++info_.written_inputs;
  }
  for (const Capture::Record& r : capture.records()) {
    for (const Step& st : r.schedule->steps) {
      if (st.kind == Step::Kind::kernel) {
        KernelCall call;
        call.program = st.kernel->program.get();
        for (size_t j = 0; j < st.slots.size(); ++j) {
          const std::shared_ptr<Buffer>& b = r.bufs[st.slots[j]];
          call.bufs.push_back(BufferUse{address(operand(b)), b ? b->size() : 0, j == 0 ? Access::write : Access::read});
        }
        for (size_t d = 0; d < 3; ++d) {
          call.global[d] = Sym(st.global[d]);
          call.local[d] = Sym(st.local[d]);
        }
        calls.push_back(std::move(call));
        ++info_.kernels;
        continue;
      }
      ++info_.copies;
      const std::shared_ptr<Buffer>& dst = r.bufs[st.slots[0]];
      const std::shared_ptr<Buffer>& src = r.bufs[st.slots[1]];
      if (!dst || !src) continue;  // nothing to move
      if (&dst->device() == &src->device()) {
        calls.push_back(CopyCall{&dst->device(), address(operand(dst)), address(operand(src)), dst->size()});
        continue;
      }
      flush();
      items_.push_back(Item{nullptr, HostCopy{operand(dst), operand(src)}});
      ++info_.host_copies;
    }
  }
  for (auto& [index, src] : copied_outputs)
    calls.push_back(CopyCall{&src->device(), Sym(Var{static_cast<uint16_t>(num_inputs_ + index)}),
                             address(operand(src)), src->size()});
  flush();

  if (!capture.draws().empty()) {
    const uint64_t first = capture.draws().front().k;
    for (const Capture::Draw& d : capture.draws()) {
      draws_.push_back(Draw{d.key, d.k - first});
      num_draws_ = std::max(num_draws_, d.k - first + 1);
    }
    info_.random_draws = num_draws_;
  }

  vars_.assign(num_inputs_ + output_buffers_.size(), 0);
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

Buffer* Replay::resolve(const Operand& op) const { return op.var >= 0 ? var_bufs_[op.var] : op.fixed.get(); }

std::vector<Tensor> Replay::run(const std::vector<Node>& inputs, bool draw) {
  if (draw && num_draws_ > 0) {
    // Each copyin is ordered after the previous replay on the key's device (its kernels read the old key).
    const uint64_t seed = rng_seed(), base = rng_take(num_draws_);
    for (const Draw& d : draws_) {
      const uint32_t key = rng_key(seed, base + d.offset);
      d.key->copyin(std::span<const uint32_t>(&key, 1));
    }
  }
  for (size_t k = 0; k < num_inputs_; ++k) {
    var_bufs_[k] = inputs[k]->payload.get();
    vars_[k] = var_bufs_[k] ? var_bufs_[k]->va() : 0;
  }
  for (size_t k = 0; k < output_buffers_.size(); ++k) {
    const OutputBuffer& o = output_buffers_[k];
    call_outputs_[k] = new_buffer_node(o.device, o.dtype, o.numel);
    var_bufs_[num_inputs_ + k] = call_outputs_[k]->payload.get();
    vars_[num_inputs_ + k] = var_bufs_[num_inputs_ + k] ? var_bufs_[num_inputs_ + k]->va() : 0;
  }
  for (Item& it : items_) {
    if (it.graph) it.graph->replay(vars_);
    else copy_buffers(*resolve(it.copy.dst), *resolve(it.copy.src));
  }
  std::vector<Tensor> out;
  out.reserve(outputs_.size());
  for (const Output& o : outputs_) out.emplace_back(t_reshape(call_outputs_[o.buffer], o.shape));
  return out;
}

}  // namespace hcq::fw
