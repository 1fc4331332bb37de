#include "framework/jit/signature.hpp"

#include <unordered_map>

#include "framework/engine/realize.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/jit.hpp"

namespace hcq::fw {

InputSignature InputSignature::of(const std::vector<Tensor>& tensors) {
  InputSignature sig;
  sig.inputs.reserve(tensors.size());
  for (const Tensor& t : tensors)
    sig.inputs.push_back(
        Input{t.shape(), t.dtype(), t.device(), t.node()->op == Op::BIND ? t.node()->src[0] : nullptr});
  return sig;
}

namespace {
std::string var_desc(const Node& var) {
  return var ? hcq::cat("Variable ", var->s, " [", var->i[0], ", ", var->i[1], "]") : std::string("a tensor");
}
}  // namespace

void InputSignature::check(const std::vector<Tensor>& tensors) const {
  constexpr const char* kInstead =
      ": the replay's kernels were made for the first call's inputs. Call it as it was first called, or use "
      "another TinyJit for these inputs";
  if (tensors.size() != inputs.size())
    throw JitError(
        hcq::cat("TinyJit: called with ", tensors.size(), " inputs, first called with ", inputs.size(), kInstead));
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Input& want = inputs[k];
    const Tensor& got = tensors[k];
    const Node got_var = got.defined() && got.node()->op == Op::BIND ? got.node()->src[0] : nullptr;
    if (got_var != want.var)
      throw JitError(hcq::cat("TinyJit: input ", k, " changed: ", var_desc(got_var), ", first called with ",
                              var_desc(want.var), kInstead));
    if (got.shape() != want.shape)
      throw JitError(hcq::cat("TinyJit: input ", k, "'s shape changed: ", shape_str(got.shape()),
                              ", first called with ", shape_str(want.shape), kInstead));
    if (got.dtype() != want.dtype)
      throw JitError(hcq::cat("TinyJit: input ", k, "'s dtype changed: ", dtype_name(got.dtype()),
                              ", first called with ", dtype_name(want.dtype), kInstead));
    if (got.device() != want.device)
      throw JitError(hcq::cat("TinyJit: input ", k, "'s device changed: ", got.device(), ", first called with ",
                              want.device, kInstead));
  }
}

std::vector<Node> input_buffers(const std::vector<Tensor>& inputs) {
  std::vector<Node> bufs;
  bufs.reserve(inputs.size());
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (!inputs[k].defined())
      throw JitError(
          hcq::cat("TinyJit: input ", k, " is an empty (default-constructed) Tensor: pass a realised tensor"));
    Node n = inputs[k].node();
    if (n->op == Op::BIND) {  // a bound Variable: its value is the call's, not a buffer
      for (size_t j = 0; j < k; ++j)
        if (bufs[j]->op == Op::BIND && bufs[j]->src[0] == n->src[0])
          throw JitError(hcq::cat("TinyJit: inputs ", j, " and ", k, " are the same Variable (", n->src[0]->s,
                                  "): pass it once and use it twice inside the function"));
      bufs.push_back(std::move(n));
      continue;
    }
    while (Node done = n->realized()) n = done;
    if (n->op == Op::NARROW)
      throw JitError(hcq::cat("TinyJit: input ", k, " ", dims_str(n),
                              " has a symbolic dimension: the replay binds inputs by their buffers and would keep "
                              "the first call's size. Pass the whole tensor and the bound variable as inputs, and "
                              "narrow inside the jitted function"));
    if (!is_buffer_view(n))
      throw JitError(hcq::cat("TinyJit: input ", k, " (", shape_str(inputs[k].shape()), " ",
                              dtype_name(inputs[k].dtype()), " on ", inputs[k].device(),
                              ") is not realised: the replay binds inputs by their buffers. Call realize() on it "
                              "before the call (for a view, contiguous().realize()), or compute it inside the "
                              "jitted function"));
    Node base = n->op == Op::RESHAPE ? n->src[0] : n;
    for (size_t j = 0; j < k; ++j)
      if (bufs[j] == base)
        throw JitError(hcq::cat("TinyJit: inputs ", j, " and ", k,
                                " are the same buffer: the replay binds each input to a buffer of its own. Pass it "
                                "once and use it twice inside the function (or pass a copy: contiguous().realize())"));
    bufs.push_back(std::move(base));
  }
  return bufs;
}

}  // namespace hcq::fw
