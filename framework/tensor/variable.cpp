// hcq::Variable: a DEFINE_VAR node (name, bounds) and, per value, a BIND of it (framework/ir/ops.hpp). Callify
// turns each BIND into a numbered VAR_PARAM and keeps its value beside the call's buffers, so the schedule of a
// graph does not depend on the values it is bound to.
#include <limits>

#include "framework/ir/node.hpp"
#include "framework/tensor/build.hpp"
#include "hcq/error.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

using namespace fw;

Variable::Variable(std::string name, int64_t min, int64_t max) : name_(std::move(name)), min_(min), max_(max) {
  if (name_.empty()) throw InvalidArgument("Variable: the name is empty");
  constexpr int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  if (min_ > max_) throw InvalidArgument(hcq::cat("Variable ", name_, ": min ", min_, " is above max ", max_));
  if (min_ < lo || max_ > hi)
    throw InvalidArgument(hcq::cat("Variable ", name_, ": bounds [", min_, ", ", max_,
                                   "] do not fit int32 (a variable reaches kernels as a 32-bit value)"));
}

Tensor Variable::bind(int64_t value, std::string device) const {
  if (value < min_ || value > max_)
    throw InvalidArgument(
        hcq::cat("Variable ", name_, ": bound to ", value, ", outside its bounds [", min_, ", ", max_, "]"));
  const Node var = make_node(Op::DEFINE_VAR, DType::int32, {}, {min_, max_}, 0, name_);
  return Tensor(make_node(Op::BIND, DType::int32, {var}, {value}, 0, canonical_device(device)));
}

}  // namespace hcq
