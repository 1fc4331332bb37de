#include "framework/ir/shape_of.hpp"

namespace hcq::fw {

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape shape_of(const NodeData& n) {
  switch (n.op) {
    case Op::BUFFER:
    case Op::PARAM: return {n.i.at(1)};
    case Op::INDEX: return {n.i.at(0)};
    case Op::RESHAPE:
    case Op::EXPAND: return n.i;
    case Op::PERMUTE: {
      const Shape& in = n.src.at(0)->shape;
      Shape out(in.size());
      for (size_t k = 0; k < in.size(); ++k) out[k] = in[static_cast<size_t>(n.i[k])];
      return out;
    }
    case Op::PAD: {
      Shape out = n.src.at(0)->shape;
      for (size_t k = 0; k < out.size(); ++k) out[k] += n.i[2 * k] + n.i[2 * k + 1];
      return out;
    }
    case Op::SHRINK: {
      Shape out = n.src.at(0)->shape;
      for (size_t k = 0; k < out.size(); ++k) out[k] = n.i[2 * k + 1] - n.i[2 * k];
      return out;
    }
    case Op::REDUCE_AXIS: {
      Shape out = n.src.at(0)->shape;
      for (size_t k = 1; k < n.i.size(); ++k) out[static_cast<size_t>(n.i[k])] = 1;
      return out;
    }
    case Op::CONST:
    case Op::SINK:
    case Op::RANGE:
    case Op::LOAD:
    case Op::STORE:
    case Op::REDUCE:
    case Op::KERNEL: return {};
    default: return n.src.empty() ? Shape{} : n.src[0]->shape;
  }
}

}  // namespace hcq::fw
