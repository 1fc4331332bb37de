// The replay of a captured call (framework.md, contract 10): the captured kernel launches and copies, their buffers
// resolved to graph operands, batched into hcq::Graphs.
//
// Operands: an input's buffer (or a bound Variable's value, hcq::Variable) is a graph variable (its address, bound per call), unless the captured kernels write
// it: then a buffer of the JIT's own is a copy of it, made first in the replay, so the caller's tensor is not
// clobbered. A buffer that the capture made for a returned tensor is a variable too, bound per call to a fresh
// buffer, so each call's outputs are new tensors; a returned tensor whose buffer is anything else (an input, a
// tensor the function closes over) is copied into a fresh buffer at the end. Every other buffer (closed-over
// tensors, intermediates, the schedules' arenas) is fixed by address and kept alive here.
// Batching: consecutive graphable calls (kernels; copies within one device) form one Graph, which may span devices
// (it orders them itself); a copy across devices splits the list and is replayed by the engine's copy, which goes
// through the host where a device cannot reach the other's memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/ir/node.hpp"
#include "framework/jit/capture.hpp"
#include "hcq/graph.hpp"
#include "hcq/jit.hpp"

namespace hcq::fw {

class Replay {
 public:
  // `inputs`: the BUFFER nodes of the capture call's inputs; `outputs`: what the function returned, realised.
  // options.prune: the steps prune.hpp finds constant run once here and are left out of the replay;
  // options.plan_memory: the intermediates are placed in one arena per device (memory.hpp).
  Replay(const Capture& capture, const std::vector<Node>& inputs, const std::vector<Tensor>& outputs,
         const TinyJit::Options& options);
  ~Replay();
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  // One call: binds the inputs (BUFFER nodes of the signature the capture had), replays, and returns fresh outputs.
  // Returns without waiting for the devices. `draw`: the call takes its own random draws (the capture's first
  // replay does not: the capture took them and wrote their keys).
  std::vector<Tensor> run(const std::vector<Node>& inputs, bool draw = true);

  // Per output of the function: what writes it in the replay ("kernel <name (tensor op)>", or the copy), for
  // HCQ_JIT_CHECK's message.
  const std::vector<std::string>& writers() const { return writers_; }
  // The random draws one call takes (framework/tensor/rng.hpp).
  uint64_t num_draws() const { return num_draws_; }

  // kernels, copies, graphs, host_copies, written_inputs (calls is the TinyJit's).
  TinyJit::Info info() const { return info_; }

 private:
  // A buffer as the replay sees it: a variable (inputs first, then outputs) or a fixed buffer.
  struct Operand {
    int var = -1;
    std::shared_ptr<Buffer> fixed;
  };
  struct HostCopy {
    Operand dst, src;
  };
  struct Item {
    std::unique_ptr<Graph> graph;  // or, when null, a copy across devices
    HostCopy copy;
    // Per device of the graph (graph->devices() order): its kernels, "name (tensor op)", in order; remembered with
    // each replay's completion so that a fault names them as it would after an eager launch
    // (framework/engine/fault_context.hpp). Null where the device runs no kernel of the graph.
    std::vector<std::shared_ptr<const std::vector<std::string>>> kernels;
  };
  struct OutputBuffer {
    Device* dev;  // opened once, at capture
    std::string device;
    DType dtype;
    int64_t numel;
  };
  struct Output {
    size_t buffer;  // index into output_buffers_
    Shape shape;
    // Symbolic dimensions (axis, variable): each call's output is narrowed by its input of that variable (index
    // `input`), or by the capture's value when the function bound the variable itself (input < 0).
    struct Dim {
      int64_t axis;
      int input;
      Node fixed;
    };
    std::vector<Dim> dims;
  };

  // A fixed operand's buffer is kept (in fixed_) for the replay's lifetime.
  Sym address(const Operand& op);
  Buffer* resolve(const Operand& op) const;
  // This call's buffer for an output: the previous call's memory when the caller has let go of it, else new.
  static Node fresh_output(const Node& previous, const OutputBuffer& o);

  // Declared before the graphs, destroyed after them: the graphs' programs are the schedules' kernels, and the
  // fixed buffers are what the graphs read and write.
  std::vector<std::shared_ptr<const Schedule>> schedules_;
  std::vector<std::shared_ptr<Buffer>> fixed_;
  std::vector<Item> items_;
  std::vector<OutputBuffer> output_buffers_;
  std::vector<Output> outputs_;
  size_t num_inputs_ = 0;
  std::vector<uint64_t> vars_;      // per variable, this call's address
  std::vector<Buffer*> var_bufs_;   // per variable, this call's buffer (host copies)
  std::vector<Node> call_outputs_;  // this call's fresh output BUFFER nodes
  // Random tensors (framework/tensor/rng.hpp): each replay takes as many draws as the captured call took and binds
  // each key variable (graph variables after the outputs, in capture order) the key the eager call would have drawn
  // in its place: its offset from the first.
  std::vector<uint64_t> draw_offsets_;
  uint64_t num_draws_ = 0;
  uint64_t captured_first_draw_ = 0;  // the k of the capture's first draw: its replay binds the capture's keys
  std::vector<std::string> writers_;
  // HCQ_VALIDATE at capture (framework/engine/validate.hpp): each replay runs the calls one by one, every kernel off
  // the CPU device cross-checked on the CPU device, instead of replaying the graphs. A kernel (`step` set) or a
  // copy ({dst, src}).
  struct CheckedCall {
    const Step* step = nullptr;  // in one of schedules_
    Node ast;
    DType out = DType::float32;
    std::vector<Operand> ops;
    std::vector<Sym> vals;  // the kernel's values: constants, or an input Variable's graph variable
  };
  bool validating_ = false;
  std::vector<CheckedCall> checked_;
  void run_checked();
  TinyJit::Info info_;
};

}  // namespace hcq::fw
