// Runs a tool (clang, ld.lld) with memfds for stdin, stdout, stderr and, optionally, one more input file at fd 3
// (named /dev/fd/3 on its command line): nothing touches the disk and no pipe can fill up.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcq::drivers {

struct ToolResult {
  int spawn_error = 0;  // errno of posix_spawnp; 0 when the program ran
  int status = 0;       // waitpid status
  std::vector<uint8_t> out;
  std::string err;
  bool ok() const;
  // "exit status 1", "signal 11 (Segmentation fault)"
  std::string describe() const;
};

// Throws OsError only for failures of this process (memfd, waitpid); a tool that fails is reported in the result.
ToolResult run_tool(const std::vector<std::string>& args, std::string_view stdin_data,
                    std::optional<std::span<const uint8_t>> fd3_input = std::nullopt);

}  // namespace hcq::drivers
