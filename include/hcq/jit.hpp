// TinyJit: capture a function of tensors once, then replay its kernels and copies through hcq::Graph, so a training
// step or an inference call costs nanoseconds of host time per kernel instead of a schedule and a launch each.
//
//   hcq::Tensor w = hcq::Tensor::ones({4});                        // closed over: read (and written) in place
//   hcq::TinyJit step([&](const std::vector<hcq::Tensor>& in) {
//     return std::vector<hcq::Tensor>{(in[0] * w).sum(), in[0] + 1};
//   });
//   for (hcq::Tensor& x : batches) auto out = step({x});          // call 0 runs, call 1 captures, then replays
//
// The three stages (tinygrad's): call 0 runs the function normally and records the inputs' signature (count,
// shapes, dtypes, devices); call 1 runs it again while the engine records every kernel launch and copy with its
// buffers instead of submitting it, then builds the replay and runs it; calls 2 and later only replay. The inputs'
// buffers become graph variables: a replay may get other tensors of the same signature. Everything else the
// function touched (tensors it closes over, intermediates) is baked in by address: closed-over tensors are read
// and written in place on every call, as the function would. Nothing is compiled for the replay (the schedules
// compiled the kernels) and the function is not called again after call 1.
//
// Inputs: realised tensors (made from host data, by empty(), or realize()d), each buffer once. The caller's
// buffers are never written: the function gets its own handles (on call 0, copies), and an input the captured
// kernels write (an assign into it) is copied first in each replay.
// Outputs: fresh tensors on every call (the caller may keep them); a replay returns without waiting for the device,
// and reading an output waits for it.
// Randomness: Tensor::rand (randn, uniform) inside the function draws anew on every call, exactly what the same calls
// made eagerly would draw in the same order (framework/tensor/rng.hpp).
// Checks: HCQ_JIT_CHECK=1 compares the first replays with eager runs; HCQ_VALIDATE=1 cross-checks every kernel off
// the CPU device on the CPU device (docs/knobs.md).
// Ownership: the TinyJit owns what it captured (graphs, intermediates, copies of written inputs); destroying it
// waits for its last replay and frees them. The function (and the tensors it closes over) must outlive it.
// Threads: one thread at a time calls a given TinyJit.
// Errors: JitError (below) for a call the replay cannot honour, with what to do instead; the function's own errors
// propagate (a failed capture leaves the TinyJit at call 1, to capture again).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "hcq/error.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

// A call a jitted function cannot be replayed for: a host read of tensor data while the function is captured, an
// input that is not realised or is passed twice, a changed input signature (count, or one input's shape, dtype or
// device), an empty tensor among the outputs, a TinyJit called from inside another's function.
class JitError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// HCQ_VALIDATE=1 (docs/knobs.md): a kernel that ran off the CPU device gave another result than the same kernel on
// the CPU device, beyond its dtype's tolerance (any kernel, eager or replayed; the message names it, its tensor op,
// the element and both values).
class ValidationError : public Error {
 public:
  using Error::Error;
};

class TinyJit {
 public:
  using Function = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

  struct Options {
    // Prune (tinygrad's TinyJit(prune=True)): captured kernels whose results cannot change between calls (they read
    // neither the inputs nor anything the replay writes, only tensors the function closes over and constants) run
    // once, at capture, and are not replayed. Off by default: with it, a closed-over tensor the caller changes
    // between calls is not read again by the pruned kernels.
    bool prune = false;
    // Plan the memory of the whole captured call (framework/jit/memory.hpp): the intermediates of every realize
    // inside the function share one arena per device instead of each realize keeping its own.
    bool plan_memory = true;
  };

  explicit TinyJit(Function fn) : TinyJit(std::move(fn), Options{}) {}
  TinyJit(Function fn, Options options);
  ~TinyJit();
  TinyJit(const TinyJit&) = delete;
  TinyJit& operator=(const TinyJit&) = delete;
  TinyJit(TinyJit&&) noexcept;
  TinyJit& operator=(TinyJit&&) noexcept;

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs);

  // What the capture holds (tests, tools): calls so far; and after call 1, the captured kernel launches and copies,
  // the graphs they were batched into (one per run of graphable calls), the copies replayed outside a graph (across
  // devices), and the inputs copied because the kernels write them; the random tensors each call draws (each replay
  // takes as many new draws from the generator as an eager call would); and of the kernels, those pruned.
  struct Info {
    size_t calls = 0;
    size_t kernels = 0, copies = 0, graphs = 0, host_copies = 0, written_inputs = 0;
    size_t random_draws = 0;
    size_t pruned = 0;  // captured kernels whose results cannot change between calls: run once, at capture, only
    // Memory planning: the bytes the planned intermediates took in the capture, and the arenas that replace them.
    uint64_t planned_bytes = 0, arena_bytes = 0;
  };
  Info info() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hcq
