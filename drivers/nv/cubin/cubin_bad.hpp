// How the cubin reader and writer refuse an input: a CompileError that says the cubin is bad and why.
#pragma once

#include <string>
#include <string_view>

#include "hcq/error.hpp"

namespace hcq::nv::cubin_detail {

inline constexpr std::string_view kBad = "bad cubin: ";
[[noreturn]] inline void bad(const std::string& what) { throw CompileError(cat(kBad, what)); }

}  // namespace hcq::nv::cubin_detail
