// TinyJit's three stages: run (call 0), capture and replay (call 1), replay (calls 2+). See include/hcq/jit.hpp.
#include "hcq/jit.hpp"

#include <optional>
#include <utility>

#include "framework/engine/realize.hpp"
#include "framework/jit/capture.hpp"
#include "framework/jit/check.hpp"
#include "framework/jit/replay.hpp"
#include "framework/jit/signature.hpp"
#include "framework/tensor/build.hpp"
#include "framework/tensor/rng.hpp"
#include "hcq/buffer.hpp"
#include "hcq/knobs.hpp"

namespace hcq {

using namespace fw;

namespace {

// TinyJit functions running on this thread: a JIT inside another would be captured as kernels of the outer one
// at best, and at worst capture its own replay's buffers as the outer's inputs.
thread_local int t_running = 0;

struct Running {
  Running() {
    if (t_running > 0)
      throw JitError(
          "TinyJit: called from inside another TinyJit's function: nested JITs are not supported. Call the inner "
          "function directly (the outer JIT captures its kernels), or jit the two separately and call them one "
          "after the other");
    ++t_running;
  }
  ~Running() { --t_running; }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;
};

// Runs the function and realises what it returned (one schedule); every output must be a tensor.
std::vector<Tensor> run_function(const TinyJit::Function& fn, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out = fn(inputs);
  for (size_t k = 0; k < out.size(); ++k)
    if (!out[k].defined())
      throw JitError(hcq::cat("TinyJit: output ", k,
                              " of the jitted function is an empty (default-constructed) Tensor: a replay can "
                              "return only tensors the function computed. Return a tensor there, or return fewer "
                              "outputs and keep other values outside the function"));
  Tensor::realize(out);
  return out;
}

// The tensors the function gets, on nodes of their own: on call 0 (a plain run, before anything is known of what
// the function writes) copies, so the caller's buffers are not written there either, as they are not by a replay;
// in the capture, new BUFFER nodes over the caller's memory (the replay binds inputs by memory), so that what the
// capture realizes without running is no node a lazy tensor of the caller's shares (it would read that instead).
std::vector<Tensor> function_inputs(const std::vector<Tensor>& inputs, const std::vector<Node>& bufs, bool copy) {
  std::vector<Tensor> out;
  out.reserve(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Node& b = bufs[k];
    if (b->op == Op::BIND) {  // a bound Variable: the function sees its value, bound per call
      out.emplace_back(b);
      continue;
    }
    Node own = copy ? new_buffer_node(b->device(), b->dtype, b->i[1]) : alias_buffer_node(b);
    if (copy && own->payload) own->payload->copy_from(*b->payload);
    out.emplace_back(t_reshape(own, inputs[k].shape()));
  }
  return out;
}

// HCQ_JIT_CHECK: the function run eagerly on copies of the inputs, on the draws the replay just took, and its
// outputs compared with the replay's.
void check_against_eager(const TinyJit::Function& fn, const std::vector<Tensor>& inputs, const std::vector<Node>& bufs,
                         const Replay& replay, const std::vector<Tensor>& replayed, size_t call) {
  const uint64_t after = rng_counter();
  set_rng_counter(after - replay.num_draws());
  std::vector<Tensor> eager;
  try {
    eager = run_function(fn, function_inputs(inputs, bufs, true));
  } catch (...) {
    set_rng_counter(after);
    throw;
  }
  set_rng_counter(after);
  check_replay(call, replayed, eager, replay.writers());
}

}  // namespace

struct TinyJit::Impl {
  Function fn;
  Options options;
  size_t calls = 0;
  InputSignature signature;
  std::unique_ptr<Replay> replay;
  size_t checks_left = 0;  // HCQ_JIT_CHECK: replays still to compare with an eager run
};

TinyJit::TinyJit(Function fn, Options options) : impl_(std::make_unique<Impl>()) {
  if (!fn) throw InvalidArgument("TinyJit: the function is empty");
  impl_->fn = std::move(fn);
  impl_->options = options;
}
TinyJit::~TinyJit() = default;
TinyJit::TinyJit(TinyJit&&) noexcept = default;
TinyJit& TinyJit::operator=(TinyJit&&) noexcept = default;

std::vector<Tensor> TinyJit::operator()(const std::vector<Tensor>& inputs) {
  if (!impl_) throw InvalidArgument("TinyJit: used after being moved from");
  Impl& m = *impl_;
  if (m.replay) {  // calls 2+
    std::vector<Node> bufs = input_buffers(inputs);
    m.signature.check(inputs);
    std::vector<Tensor> out = m.replay->run(bufs);
    if (m.checks_left > 0) {
      --m.checks_left;
      Running running;
      check_against_eager(m.fn, inputs, bufs, *m.replay, out, m.calls);
    }
    ++m.calls;
    return out;
  }
  Running running;
  std::vector<Node> bufs = input_buffers(inputs);
  if (m.calls == 0) {
    InputSignature sig = InputSignature::of(inputs);
    std::vector<Tensor> out = run_function(m.fn, function_inputs(inputs, bufs, true));
    m.signature = std::move(sig);
    ++m.calls;
    return out;
  }
  m.signature.check(inputs);
  const std::vector<Tensor> fn_inputs = function_inputs(inputs, bufs, false);
  std::vector<Node> input_nodes;  // the BUFFER under each tensor input (the function's own alias of the caller's)
  std::vector<Shape> input_shapes;
  for (const Tensor& t : fn_inputs) {
    const Node& n = t.node();
    input_nodes.push_back(n->op == Op::BIND ? nullptr : n->op == Op::RESHAPE ? n->src[0] : n);
    input_shapes.push_back(t.shape());
  }
  Capture capture(std::move(input_nodes), std::move(input_shapes));
  std::vector<Tensor> captured;
  {
    CaptureScope scope(capture);
    captured = run_function(m.fn, fn_inputs);
  }
  // The outputs as their buffers only: their lazy graphs (and through them the intermediates they were computed
  // from) go now, so that memory planning finds those intermediates held by nothing but the capture.
  for (Tensor& t : captured) {
    Node n = t.node();
    while (Node done = n->realized()) n = done;
    t = Tensor(n);
  }
  auto replay = std::make_unique<Replay>(capture, bufs, captured, m.options);
  captured.clear();
  std::vector<Tensor> out = replay->run(bufs, false);
  m.replay = std::move(replay);
  m.checks_left = knobs::jit_check() ? kJitCheckedReplays : 0;
  if (m.checks_left > 0) {
    --m.checks_left;
    check_against_eager(m.fn, inputs, bufs, *m.replay, out, m.calls);
  }
  ++m.calls;
  return out;
}

TinyJit::Info TinyJit::info() const {
  Info info = impl_ && impl_->replay ? impl_->replay->info() : Info{};
  info.calls = impl_ ? impl_->calls : 0;
  return info;
}

}  // namespace hcq
