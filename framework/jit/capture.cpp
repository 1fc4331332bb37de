#include "framework/jit/capture.hpp"

#include <utility>

#include "hcq/jit.hpp"

namespace hcq::fw {

void Capture::record(std::shared_ptr<const Schedule> schedule, std::vector<std::shared_ptr<Buffer>> bufs,
                     std::vector<Node> bound) {
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
