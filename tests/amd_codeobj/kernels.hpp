// Shared by the amd_codeobj tests: kernel sources and code objects compiled once per process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../common/axpb_source.hpp"

namespace hcq::amd::test {

// The same C source the CPU and NV devices run (tests/common/axpb_source.hpp).
using hcq::test::kAxpbSource;
// An LLVM IR kernel using 1 KiB of LDS (group segment) and the dispatch pointer; takes (ptr addrspace(1), i32).
extern const char* const kLdsIrSource;

// Compiled once per (target, source) and kept for the process.
const std::vector<uint8_t>& axpb_code_object(const std::string& gfx);
const std::vector<uint8_t>& lds_code_object(const std::string& gfx);

}  // namespace hcq::amd::test
