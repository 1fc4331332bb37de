// The subcommands of the `hcq` tool, one file each. Each takes the arguments after its own name and returns the
// process exit status (see ExitCode).
#pragma once

#include <span>
#include <string_view>

namespace hcq::tool {

// What `hcq` returns: scripts depend on these.
enum ExitCode : int {
  kExitOk = 0,
  kExitFailure = 1,  // a device failed, or nothing could be measured
  kExitUsage = 2,    // bad command line
};

int run_info(std::span<const std::string_view> args);
int run_bench(std::span<const std::string_view> args);
int run_train(std::span<const std::string_view> args);  // only in the hcq that links the framework

// Prints "hcq: <message>" and a pointer to the help, returns kExitUsage.
int usage_error(std::string_view message, std::string_view command);

}  // namespace hcq::tool
