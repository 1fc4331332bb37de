// Tensor-level node builders shared by the Tensor methods: checked movement, broadcasting, casts and ALU nodes.
// They validate and throw ShapeError / InvalidArgument / DTypeError with the op's name and the shapes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "framework/ir/node.hpp"

namespace hcq::fw {

std::string shape_str(const Shape& s);  // "(2, 3)", "()", "(4,)"
std::string dims_str(const Node& x);    // shape_str with symbolic dimensions named: "(n=3 (1..8), 4)"

// The canonical device name for a user's name ("" = HCQ_DEVICE, else "CPU"); opens the device.
const std::string& canonical_device(const std::string& name);

// Normalises a possibly negative axis for `ndim` dims; InvalidArgument naming the op when out of range.
int norm_axis(int axis, size_t ndim, std::string_view op);

Node t_const(Scalar v, DType t, const std::string& device);  // shape ()
Node t_full(const Shape& shape, Scalar v, DType t, const std::string& device);
Node t_cast(const Node& x, DType t);                // no-op when equal
Node t_reshape(const Node& x, const Shape& shape);  // shape fully known; checks numel
Node t_expand(const Node& x, const Shape& shape);   // same ndim; 1 -> n only
Node t_permute(const Node& x, const std::vector<int64_t>& order);
Node t_pad(const Node& x, const std::vector<int64_t>& before_after, double value);
Node t_shrink(const Node& x, const std::vector<int64_t>& start_end);
Node t_flip(const Node& x, const std::vector<int64_t>& flags);
Node t_reduce(const Node& x, Op op, const std::vector<int64_t>& axes);  // keeps reduced dims as 1
// Broadcasts to `shape` (numpy rules: align right, 1 stretches); ShapeError naming `op` otherwise.
Node t_broadcast(const Node& x, const Shape& shape, std::string_view op);
Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op);
// ShapeError when operands about to be broadcast together disagree on a symbolic dimension (two variables, or a
// variable and a concrete size other than 1), aligned from the right as broadcasting is.
void check_dims_agree(const std::vector<const Node*>& operands, std::string_view op);
// x with only the first `bound` (a BIND) elements of `axis` present (symbolic_dims.hpp); the storage is cut to the
// variable's maximum. ShapeError when that maximum exceeds the dimension or the dimension is symbolic already.
Node t_narrow(const Node& x, int axis, const Node& bound);
Node t_alu(Op op, DType out, std::vector<Node> src);          // sources already of one shape
Node t_index(int64_t n, DType t, const std::string& device);  // 0..n-1, shape (n)

}  // namespace hcq::fw
