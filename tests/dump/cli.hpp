// Running hcq-dump's subcommands in-process, as the command runs them, and files for them to read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../amd/json.hpp"

namespace hcq::dump::testing {

using Json = hcq::amd::testing::Json;

struct CliResult {
  int status = 0;
  std::string out, err;
};

// `hcq-dump decode ARGS...` through run_decode.
CliResult run_decode_cli(const std::vector<std::string>& args);
// decode --format FORMAT --arch ARCH --json FILE, each output line parsed back (a line that is not valid JSON fails
// the calling test).
std::vector<Json> decode_json(const std::string& format, const std::string& arch, const std::string& file);

// A file holding `words` little-endian (or `bytes`), in a directory of this process's own that is removed at exit.
std::string write_words(const std::string& name, const std::vector<uint32_t>& words);
std::string write_bytes(const std::string& name, const std::string& bytes);

// The build directory (the one holding tools/hcq-dump/hcq-dump), found upwards from the test binary.
std::string build_dir();

}  // namespace hcq::dump::testing
