// Symbolic values for patchable queues. A queue is built once with some operands left symbolic (a buffer address,
// a signal value, a launch dim); each submit supplies the variables' values and only the changed ones are rewritten.
// Ownership: Sym, Var and Dims are small values, copied freely; the values of variables are owned by the caller of
// HWQueue::submit and read during that call only.
#pragma once

#include <array>
#include <concepts>
#include <cstdint>
#include <span>

namespace hcq {

// A variable is an index into the value array given to HWQueue::submit(). The caller picks the indices.
struct Var {
  uint16_t id;
};

// value = (var ? vars[var] : 0) + add, with 64-bit wrap-around. A constant has no variable.
struct Sym {
  int32_t var = -1;
  uint64_t add = 0;

  constexpr Sym() = default;
  template <std::integral T>
  constexpr Sym(T constant) : add(static_cast<uint64_t>(constant)) {}  // NOLINT: implicit on purpose
  constexpr Sym(Var v, int64_t offset = 0) : var(v.id), add(static_cast<uint64_t>(offset)) {}  // NOLINT

  constexpr bool is_const() const { return var < 0; }
  // Throws InvalidArgument when the variable has no value in `vars`. Inline for constants: launch checks evaluate
  // every dim of every exec.
  uint64_t eval(std::span<const uint64_t> vars) const { return is_const() ? add : eval_var(vars); }

 private:
  uint64_t eval_var(std::span<const uint64_t> vars) const;
};

constexpr Sym operator+(Var v, int64_t offset) { return Sym(v, offset); }
constexpr Sym operator-(Var v, int64_t offset) { return Sym(v, -offset); }
constexpr Sym operator+(Sym s, int64_t offset) {
  s.add += static_cast<uint64_t>(offset);
  return s;
}
constexpr Sym operator-(Sym s, int64_t offset) { return s + (-offset); }

// Launch dims: global = number of workgroups, local = threads per workgroup, x/y/z.
using Dims = std::array<Sym, 3>;

}  // namespace hcq
