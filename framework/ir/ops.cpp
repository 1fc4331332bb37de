#include "framework/ir/ops.hpp"

namespace hcq::fw {

std::string_view op_name(Op op) {
  switch (op) {
#define NAME(x) \
  case Op::x: return #x;
    NAME(CONST)
    NAME(BUFFER) NAME(PARAM) NAME(INDEX) NAME(RESHAPE) NAME(PERMUTE) NAME(EXPAND) NAME(PAD) NAME(SHRINK) NAME(FLIP)
        NAME(REDUCE_AXIS) NAME(CONTIGUOUS) NAME(ASSIGN) NAME(COPY) NAME(SINK) NAME(CAST) NAME(BITCAST) NAME(NEG)
            NAME(EXP) NAME(EXP2) NAME(LOG) NAME(LOG2) NAME(SIN) NAME(COS) NAME(SQRT) NAME(RECIPROCAL) NAME(TRUNC)
                NAME(ADD) NAME(SUB) NAME(MUL) NAME(FDIV) NAME(IDIV) NAME(MOD) NAME(MAX) NAME(MIN) NAME(POW) NAME(CMPLT)
                    NAME(CMPEQ) NAME(CMPNE) NAME(AND) NAME(OR) NAME(XOR) NAME(SHL) NAME(SHR) NAME(WHERE) NAME(RANGE)
                        NAME(LOAD) NAME(STORE) NAME(REDUCE) NAME(KERNEL)
#undef NAME
  }
  return "?";
}

bool is_unary(Op op) { return op >= Op::NEG && op <= Op::TRUNC; }
bool is_binary(Op op) { return op >= Op::ADD && op <= Op::SHR; }
bool is_elementwise(Op op) {
  return op == Op::CAST || op == Op::BITCAST || is_unary(op) || is_binary(op) || op == Op::WHERE;
}
bool is_movement(Op op) { return op >= Op::RESHAPE && op <= Op::FLIP; }
bool is_comparison(Op op) { return op == Op::CMPLT || op == Op::CMPEQ || op == Op::CMPNE; }

}  // namespace hcq::fw
