// Access to the golden vectors in ../shared/vectors/amd: where they are, the cases, their raw dwords.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "json.hpp"

namespace hcq::amd::testing {

struct VectorCase {
  std::string target;  // directory name: gfx1100, gfx1201
  std::string name;    // pm4_signal, ...
  std::string json_path;
  Json json;
  std::vector<uint32_t> bin;  // the .bin file's dwords
};

// The vectors directory: $HCQ_VECTORS_DIR, the compile-time HCQ_AMD_VECTORS_DIR, a path derived from this source
// file's location, or ../shared/vectors relative to the working directory. Empty when none exists.
std::optional<std::string> vectors_dir();
// Every AMD case (json + bin), sorted by target and name.
std::vector<VectorCase> load_amd_cases(const std::string& dir);
// Parses "0x..." strings of a JSON array into dwords.
std::vector<uint32_t> dwords_of(const Json& array);

}  // namespace hcq::amd::testing
