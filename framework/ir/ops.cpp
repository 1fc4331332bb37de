#include "framework/ir/ops.hpp"

#include <iterator>

namespace hcq::fw {

namespace {
// In the order of the enum (ops.hpp); the static_assert catches an op added there and not here.
constexpr std::string_view kNames[] = {
    "CONST",  "BUFFER",      "PARAM",  "INDEX", "DEFINE_VAR",  "BIND",       "VAR_PARAM", "RESHAPE", "PERMUTE",
    "EXPAND", "PAD",         "SHRINK", "FLIP",  "REDUCE_AXIS", "CONTIGUOUS", "ASSIGN",    "COPY",    "SINK",
    "DETACH", "CUSTOM_GRAD", "NARROW", "CAST",  "BITCAST",     "NEG",        "EXP",       "EXP2",    "LOG",
    "LOG2",   "SIN",         "COS",    "SQRT",  "RECIPROCAL",  "TRUNC",      "ADD",       "SUB",     "MUL",
    "FDIV",   "IDIV",        "MOD",    "MAX",   "MIN",         "POW",        "CMPLT",     "CMPEQ",   "CMPNE",
    "AND",    "OR",          "XOR",    "SHL",   "SHR",         "WHERE",      "RANGE",     "LOAD",    "STORE",
    "REDUCE", "BUFFERIZE",   "KERNEL",
};
static_assert(std::size(kNames) == static_cast<size_t>(Op::KERNEL) + 1);
}  // namespace

std::string_view op_name(Op op) {
  const size_t k = static_cast<size_t>(op);
  return k < std::size(kNames) ? kNames[k] : "?";
}

bool is_unary(Op op) { return op >= Op::NEG && op <= Op::TRUNC; }
bool is_binary(Op op) { return op >= Op::ADD && op <= Op::SHR; }
bool is_elementwise(Op op) {
  return op == Op::CAST || op == Op::BITCAST || is_unary(op) || is_binary(op) || op == Op::WHERE;
}
bool is_movement(Op op) { return op >= Op::RESHAPE && op <= Op::FLIP; }
bool is_comparison(Op op) { return op == Op::CMPLT || op == Op::CMPEQ || op == Op::CMPNE; }

}  // namespace hcq::fw
