// Elementwise Tensor ops: broadcasting, type promotion, and the composite functions built from the IR's ALU ops.
#include <cmath>
#include <numbers>

#include "framework/tensor/build.hpp"
#include "hcq/tensor.hpp"

namespace hcq {

using namespace fw;

namespace {

// A scalar becomes a tensor of the other operand's dtype when its kind allows (an integer scalar with an integer
// or float tensor, a float scalar with a float tensor); a float scalar with an integer or bool tensor makes both
// the default float, a bool scalar keeps the tensor's dtype.
Tensor scalar_like(const Tensor& t, Scalar s) {
  DType d = t.dtype();
  if (s.kind == Scalar::floating && !is_float(d)) d = dtypes::default_float;
  if (s.kind == Scalar::integer && d == DType::bool_) d = dtypes::default_int;
  return Tensor::scalar(s, d, t.device());
}

struct Pair {
  Node a, b;
  DType dtype;
};

// Broadcast both to one shape and cast to their promoted type.
Pair promote(const Tensor& x, const Tensor& y, std::string_view op) {
  const Node &a = x.node(), &b = y.node();
  if (a->device() != b->device())
    throw InvalidArgument(hcq::cat(op, ": the operands are on different devices (", a->device(), " and ", b->device(),
                                   "): move one with to()"));
  const Shape shape = broadcast_shape(a->shape, b->shape, op);
  if (!a->dim_vars.empty() || !b->dim_vars.empty()) check_dims_agree({&a, &b}, op);
  const DType t = promote_types(a->dtype, b->dtype);
  return {t_cast(t_broadcast(a, shape, op), t), t_cast(t_broadcast(b, shape, op), t), t};
}

Tensor binary(Op op, const Tensor& x, const Tensor& y, std::string_view name) {
  Pair p = promote(x, y, name);
  return Tensor(t_alu(op, p.dtype, {p.a, p.b}));
}

Tensor compare(Op op, const Tensor& x, const Tensor& y, std::string_view name) {
  Pair p = promote(x, y, name);
  return Tensor(t_alu(op, DType::bool_, {p.a, p.b}));
}

Tensor unary(Op op, const Tensor& x) { return Tensor(t_alu(op, x.dtype(), {x.node()})); }

// Transcendental functions compute in floats: integers and bools become the default float first.
Tensor as_float(const Tensor& x) { return is_float(x.dtype()) ? x : x.cast(dtypes::default_float); }
Tensor float_unary(Op op, const Tensor& x) { return unary(op, as_float(x)); }

void need_int(const Tensor& x, const Tensor& y, std::string_view op) {
  if (!is_int(x.dtype()) || !is_int(y.dtype()))
    throw DTypeError(hcq::cat(op, ": needs integer operands, got ", dtype_name(x.dtype()), " and ",
                              dtype_name(y.dtype()), " (use div for floats)"));
}

}  // namespace

Tensor Tensor::neg() const {
  if (dtype() == DType::bool_) return logical_not();
  return unary(Op::NEG, *this);
}
Tensor Tensor::add(const Tensor& o) const {
  return binary(dtype() == DType::bool_ && o.dtype() == DType::bool_ ? Op::OR : Op::ADD, *this, o, "add");
}
Tensor Tensor::sub(const Tensor& o) const { return binary(Op::SUB, *this, o, "sub"); }
Tensor Tensor::mul(const Tensor& o) const {
  return binary(dtype() == DType::bool_ && o.dtype() == DType::bool_ ? Op::AND : Op::MUL, *this, o, "mul");
}
// True division: the promoted type, or the default float when both are integers (int / float16 is float16).
Tensor Tensor::div(const Tensor& o) const {
  DType t = promote_types(dtype(), o.dtype());
  if (!is_float(t)) t = dtypes::default_float;
  return binary(Op::FDIV, cast(t), o.cast(t), "div");
}
Tensor Tensor::pow(const Tensor& o) const { return binary(Op::POW, *this, o, "pow"); }
Tensor Tensor::maximum(const Tensor& o) const { return binary(Op::MAX, *this, o, "maximum"); }
Tensor Tensor::minimum(const Tensor& o) const { return binary(Op::MIN, *this, o, "minimum"); }

namespace {
// Where C's truncating division differs from floor division: a non-zero remainder (C's has the dividend's sign)
// whose sign is not the divisor's.
Node floor_differs(const Pair& p, const Node& remainder) {
  Node zero = t_full(p.a->shape, 0, p.dtype, p.a->device());
  Node signs_differ =
      t_alu(Op::CMPNE, DType::bool_,
            {t_alu(Op::CMPLT, DType::bool_, {remainder, zero}), t_alu(Op::CMPLT, DType::bool_, {p.b, zero})});
  return t_alu(Op::AND, DType::bool_, {t_alu(Op::CMPNE, DType::bool_, {remainder, zero}), signs_differ});
}
}  // namespace

// Floor division (Python's //): one less than C's quotient where they differ.
Tensor Tensor::idiv(const Tensor& o) const {
  need_int(*this, o, "idiv");
  Pair p = promote(*this, o, "idiv");
  Node q = t_alu(Op::IDIV, p.dtype, {p.a, p.b});
  if (is_unsigned(p.dtype)) return Tensor(q);
  Node r = t_alu(Op::MOD, p.dtype, {p.a, p.b});
  return Tensor(t_alu(Op::SUB, p.dtype, {q, t_cast(floor_differs(p, r), p.dtype)}));
}

// Python's %: the remainder takes the divisor's sign (C's plus the divisor where they differ).
Tensor Tensor::mod(const Tensor& o) const {
  need_int(*this, o, "mod");
  Pair p = promote(*this, o, "mod");
  Node r = t_alu(Op::MOD, p.dtype, {p.a, p.b});
  if (is_unsigned(p.dtype)) return Tensor(r);
  return Tensor(t_alu(Op::ADD, p.dtype, {r, t_alu(Op::MUL, p.dtype, {t_cast(floor_differs(p, r), p.dtype), p.b})}));
}

Tensor Tensor::add(Scalar s) const { return add(scalar_like(*this, s)); }
Tensor Tensor::sub(Scalar s) const { return sub(scalar_like(*this, s)); }
Tensor Tensor::mul(Scalar s) const { return mul(scalar_like(*this, s)); }
Tensor Tensor::div(Scalar s) const { return div(scalar_like(*this, s)); }
Tensor Tensor::idiv(Scalar s) const { return idiv(scalar_like(*this, s)); }
Tensor Tensor::mod(Scalar s) const { return mod(scalar_like(*this, s)); }
Tensor Tensor::pow(Scalar s) const { return pow(scalar_like(*this, s)); }
Tensor Tensor::maximum(Scalar s) const { return maximum(scalar_like(*this, s)); }
Tensor Tensor::minimum(Scalar s) const { return minimum(scalar_like(*this, s)); }
Tensor operator+(Scalar a, const Tensor& b) { return b.add(a); }
Tensor operator-(Scalar a, const Tensor& b) { return Tensor::scalar(a, b.dtype(), b.device()).sub(b); }
Tensor operator*(Scalar a, const Tensor& b) { return b.mul(a); }
Tensor operator/(Scalar a, const Tensor& b) {
  const DType t = a.kind == Scalar::floating && !is_float(b.dtype()) ? dtypes::default_float : b.dtype();
  return Tensor::scalar(a, t, b.device()).div(b);
}

Tensor Tensor::exp() const { return float_unary(Op::EXP, *this); }
Tensor Tensor::exp2() const { return float_unary(Op::EXP2, *this); }
Tensor Tensor::log() const { return float_unary(Op::LOG, *this); }
Tensor Tensor::log2() const { return float_unary(Op::LOG2, *this); }
Tensor Tensor::sqrt() const { return float_unary(Op::SQRT, *this); }
Tensor Tensor::rsqrt() const { return sqrt().reciprocal(); }
Tensor Tensor::sin() const { return float_unary(Op::SIN, *this); }
Tensor Tensor::cos() const { return float_unary(Op::COS, *this); }
Tensor Tensor::reciprocal() const { return float_unary(Op::RECIPROCAL, *this); }

Tensor Tensor::abs() const {
  if (dtype() == DType::bool_ || is_unsigned(dtype())) return *this;
  return lt(0).where(neg(), *this);
}

Tensor Tensor::sign() const {
  if (dtype() == DType::bool_) return *this;
  return gt(0).cast(dtype()).sub(lt(0).cast(dtype()));
}

Tensor Tensor::relu() const { return gt(0).where(*this, scalar_like(*this, 0)); }
Tensor Tensor::sigmoid() const { return as_float(*this).neg().exp().add(1).reciprocal(); }
Tensor Tensor::tanh() const { return as_float(*this).mul(2).sigmoid().mul(2).sub(1); }
Tensor Tensor::gelu() const {
  const Tensor x = as_float(*this);
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return x.mul(0.5).mul(x.add(x.mul(x).mul(x).mul(0.044715)).mul(k).tanh().add(1));
}
Tensor Tensor::silu() const { return mul(sigmoid()); }
Tensor Tensor::clip(Scalar lo, Scalar hi) const {
  if (lo.value > hi.value) throw InvalidArgument(hcq::cat("clip: lo ", lo.value, " is greater than hi ", hi.value));
  return maximum(lo).minimum(hi);
}

Tensor Tensor::lt(const Tensor& o) const { return compare(Op::CMPLT, *this, o, "lt"); }
Tensor Tensor::gt(const Tensor& o) const { return compare(Op::CMPLT, o, *this, "gt"); }
Tensor Tensor::le(const Tensor& o) const { return gt(o).logical_not(); }
Tensor Tensor::ge(const Tensor& o) const { return lt(o).logical_not(); }
Tensor Tensor::eq(const Tensor& o) const { return compare(Op::CMPEQ, *this, o, "eq"); }
Tensor Tensor::ne(const Tensor& o) const { return compare(Op::CMPNE, *this, o, "ne"); }
Tensor Tensor::lt(Scalar s) const { return lt(scalar_like(*this, s)); }
Tensor Tensor::le(Scalar s) const { return le(scalar_like(*this, s)); }
Tensor Tensor::gt(Scalar s) const { return gt(scalar_like(*this, s)); }
Tensor Tensor::ge(Scalar s) const { return ge(scalar_like(*this, s)); }
Tensor Tensor::eq(Scalar s) const { return eq(scalar_like(*this, s)); }
Tensor Tensor::ne(Scalar s) const { return ne(scalar_like(*this, s)); }

Tensor Tensor::where(const Tensor& a, const Tensor& b) const {
  check_dims_agree({&node(), &a.node(), &b.node()}, "where");
  Pair ab = promote(a, b, "where");
  const Shape out = broadcast_shape(shape(), ab.a->shape, "where");
  Node cond = t_broadcast(t_cast(node(), DType::bool_), out, "where");
  if (cond->device() != ab.a->device())
    throw InvalidArgument(hcq::cat("where: the condition is on ", cond->device(), ", the values on ", ab.a->device()));
  return Tensor(t_alu(Op::WHERE, ab.dtype, {cond, t_broadcast(ab.a, out, "where"), t_broadcast(ab.b, out, "where")}));
}
Tensor Tensor::where(const Tensor& a, Scalar b) const { return where(a, scalar_like(a, b)); }
Tensor Tensor::where(Scalar a, const Tensor& b) const { return where(scalar_like(b, a), b); }
Tensor Tensor::where(Scalar a, Scalar b) const {
  const bool f = a.kind == Scalar::floating || b.kind == Scalar::floating;
  const DType t = f ? dtypes::default_float
                    : (a.kind == Scalar::boolean && b.kind == Scalar::boolean ? DType::bool_ : dtypes::default_int);
  return where(Tensor::scalar(a, t, device()), Tensor::scalar(b, t, device()));
}

Tensor Tensor::logical_and(const Tensor& o) const {
  return binary(Op::AND, cast(DType::bool_), o.cast(DType::bool_), "logical_and");
}
Tensor Tensor::logical_or(const Tensor& o) const {
  return binary(Op::OR, cast(DType::bool_), o.cast(DType::bool_), "logical_or");
}
Tensor Tensor::logical_not() const {
  const Tensor b = cast(DType::bool_);
  return Tensor(t_alu(Op::XOR, DType::bool_, {b.node(), t_full(shape(), true, DType::bool_, device())}));
}

}  // namespace hcq
