#include "framework/jit/capture.hpp"

#include <utility>

#include "framework/tensor/build.hpp"
#include "hcq/dtype.hpp"
#include "hcq/error.hpp"
#include "hcq/jit.hpp"

namespace hcq::fw {

void Capture::record(std::shared_ptr<const Schedule> schedule, std::vector<std::shared_ptr<Buffer>> bufs,
                     std::vector<Node> bound, const std::vector<Node>& params) {
  // The replay binds inputs by memory: a closed-over tensor on an input's buffer would read each later call's input
  // in its place, where the function meant the tensor it closed over.
  for (const Node& p : params)
    for (size_t k = 0; k < inputs_.size(); ++k)
      if (inputs_[k] && p != inputs_[k] && p->payload == inputs_[k]->payload)
        throw JitError(
            hcq::cat("TinyJit: input ", k, " (", shape_str(shapes_[k]), " ", dtype_name(p->dtype), " on ", p->device(),
                     ") is also a tensor the jitted function closes over (the same buffer): the replay binds inputs by "
                     "memory, so later calls would read their own input ",
                     k,
                     " where the function reads the closed-over "
                     "tensor. Pass it only as an input (use the function's argument), or only close over it"));
  records_.push_back(Record{std::move(schedule), std::move(bufs), std::move(bound)});
}

void Capture::rng_draw(const Node& key, uint64_t k) { draws_.push_back(Draw{key, k}); }

void Capture::host_read() {
  throw JitError(
      "TinyJit: the jitted function reads tensor data (data(), tolist(), item()) while it is captured (call 1): "
      "the replay runs only the captured kernels, so the value would be read once and baked in. Return the "
      "tensor from the function and read it after the call (or keep the read outside the jitted function)");
}

}  // namespace hcq::fw
