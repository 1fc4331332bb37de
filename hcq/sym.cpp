// Sym evaluation: the one place a symbolic operand meets its variable values.
#include "hcq/sym.hpp"

#include "hcq/error.hpp"

namespace hcq {

uint64_t Sym::eval_var(std::span<const uint64_t> vars) const {
  if (static_cast<size_t>(var) >= vars.size())
    throw InvalidArgument(cat("variable v", var, " has no value (", vars.size(), " values given)"));
  return vars[static_cast<size_t>(var)] + add;  // 64-bit wrap-around is the documented behaviour
}

}  // namespace hcq
