// The NVIDIA golden vectors (../shared/vectors/nv): where they are and each case's JSON and raw dwords.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../amd/json.hpp"

namespace hcq::nv::testing {

using Json = hcq::amd::testing::Json;

struct NvCase {
  std::string name;  // nv_compute_signal, ...
  Json json;
  std::vector<uint32_t> bin;  // the .bin file's dwords
};

// $HCQ_VECTORS_DIR/nv, HCQ_NV_VECTORS_DIR (set by tests/nv/meson.build), or ../shared/vectors/nv found from this
// source file or the working directory. Empty when none exists.
std::optional<std::string> nv_vectors_dir();
// Every case in the directory, sorted by name. Throws std::runtime_error on unreadable files.
std::vector<NvCase> load_nv_cases(const std::string& dir);
std::vector<uint32_t> hex_dwords(const Json& array);

}  // namespace hcq::nv::testing
