// The operations of the one IR. Tensor graphs, kernel ASTs and the index arithmetic inside kernels are all nodes of
// these ops (framework.md, contract 1); the groups below say where each one appears.
#pragma once

#include <cstdint>
#include <string_view>

namespace hcq::fw {

enum class Op : uint8_t {
  // ---- leaves
  CONST,   // value in NodeData::f (floats) or i[0] (integers, bool); tensor level: s = device, shape ()
  BUFFER,  // tensor level: a realized buffer, 1-d of i[1] elements; i[0] = unique id; s = device; payload = memory
  PARAM,   // after callify: the i[0]-th buffer of a schedule's call, 1-d of i[1] elements; s = device. In a
           // kernel (s empty): the kernel's i[0]-th buffer argument
  INDEX,   // tensor level: 1-d of i[0] elements whose value is the element's index (arange, rand, masks); s = device
  // Variables (hcq::Variable): a named int32 with bounds, whose value is bound per realize or per TinyJit call.
  DEFINE_VAR,  // the variable itself: s = name, i = (min, max); only ever a source of BIND and VAR_PARAM
  BIND,        // tensor level: (DEFINE_VAR) bound to i[0], a 0-d int32 tensor; s = device
  VAR_PARAM,   // after callify: (DEFINE_VAR), the i[0]-th variable of a schedule's call; s = device. In a kernel
               // (s empty): the kernel's i[0]-th 32-bit value (HCQ_VAL)
  // ---- movement (tensor level). i: RESHAPE, EXPAND the new shape; PERMUTE the order; PAD (before, after) per
  // dim, f = the value outside; SHRINK (start, end) per dim; FLIP 0/1 per dim
  RESHAPE,
  PERMUTE,
  EXPAND,
  PAD,
  SHRINK,
  FLIP,
  // ---- tensor-level structure
  REDUCE_AXIS,  // i[0] = the reduce op (an Op: ADD, MUL, MAX), i[1..] = axes; keeps the reduced dims as size 1
  CONTIGUOUS,   // realize here
  ASSIGN,       // src = (target, value): store value into target's buffer
  COPY,         // src = (value); s = the destination device
  SINK,         // groups several roots; no value
  DETACH,       // src = (value): the same value, a wall for gradients (autograd); callify removes it
  CUSTOM_GRAD,  // src = (value, inputs...): the same value, whose inputs' gradients come from the rule numbered i[0]
                // (arguments i[1..]), not from value's graph (autograd/custom_gradient.hpp); callify removes it
  NARROW,       // src = (value, BIND or VAR_PARAM): along axis i[0], only the first (the variable's value) elements
                // are present; the shape is value's, the variable's maximum (a symbolic dimension: symbolic_dims.hpp)
  // ---- elementwise (every level)
  CAST,
  BITCAST,
  NEG,
  EXP,
  EXP2,
  LOG,
  LOG2,
  SIN,
  COS,
  SQRT,
  RECIPROCAL,
  TRUNC,  // unary
  ADD,
  SUB,
  MUL,
  FDIV,
  IDIV,
  MOD,
  MAX,
  MIN,
  POW,
  CMPLT,
  CMPEQ,
  CMPNE,
  AND,
  OR,
  XOR,
  SHL,
  SHR,    // binary
  WHERE,  // (cond, a, b)
  // ---- kernel level
  RANGE,   // a loop variable: i[0] = id, i[1] = extent; dtype index; i[2] = 0 output, 1 reduce, 2 local array
  LOAD,    // (PARAM, index[, gate]): the element at index of a kernel buffer; with a gate, 0 where it is false
  STORE,   // (PARAM, index, value)
  REDUCE,  // (value, ranges...): i[0] = the reduce op, accumulated over the ranges
  // (value, ranges...): the value at every point of the ranges (RANGEs with i[2] = 2), kept in an array local to
  // the kernel; LOAD(BUFFERIZE, index) reads it. Partial realisation: a reduce computed once per point of the axes
  // where its users disagree, inside the loops of the axes where they agree.
  BUFFERIZE,
  KERNEL,  // (STOREs...): a kernel's AST; s = its name
};

std::string_view op_name(Op op);
bool is_unary(Op op);
bool is_binary(Op op);
bool is_elementwise(Op op);  // unary, binary, WHERE, CAST, BITCAST
bool is_movement(Op op);
bool is_comparison(Op op);

}  // namespace hcq::fw
